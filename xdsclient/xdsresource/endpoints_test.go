package xdsresource

import (
	"reflect"
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

func cla(localities ...*endpointv3.LocalityLbEndpoints) *endpointv3.ClusterLoadAssignment {
	return &endpointv3.ClusterLoadAssignment{ClusterName: "c1", Endpoints: localities}
}

func drop(category string, num uint32, den typev3.FractionalPercent_DenominatorType) *endpointv3.ClusterLoadAssignment_Policy_DropOverload {
	return &endpointv3.ClusterLoadAssignment_Policy_DropOverload{
		Category:       category,
		DropPercentage: &typev3.FractionalPercent{Numerator: num, Denominator: den},
	}
}

func TestEndpointsRoundTrip(t *testing.T) {
	dual := lbEndpoint("10.0.0.2", 80, corev3.HealthStatus_DRAINING)
	dual.GetEndpoint().AdditionalAddresses = []*endpointv3.Endpoint_AdditionalAddress{{Address: sockAddr("2001:DB8::2", 80)}}
	dual.GetEndpoint().Hostname = "host-2"
	dual.LoadBalancingWeight = wrapperspb.UInt32(7)
	m := cla(
		locality("z1", 10, 0, lbEndpoint("10.0.0.1", 80, corev3.HealthStatus_HEALTHY), dual),
		locality("ignored", 0, 5, lbEndpoint("bad", 0, 0)), // weight 0: skipped, not validated
		locality("z2", 20, 1,
			lbEndpoint("10.0.1.1", 80, corev3.HealthStatus_UNKNOWN),
			lbEndpoint("10.0.1.2", 80, corev3.HealthStatus_HEALTHY),
			lbEndpoint("10.0.1.3", 80, corev3.HealthStatus_DEGRADED)), // left out
		locality("z1", 5, 1, lbEndpoint("10.0.2.1", 81, corev3.HealthStatus_HEALTHY)), // same locality, other priority
	)
	m.Policy = &endpointv3.ClusterLoadAssignment_Policy{DropOverloads: []*endpointv3.ClusterLoadAssignment_Policy_DropOverload{
		drop("throttle", 5, typev3.FractionalPercent_HUNDRED),
		drop("lb", 5, typev3.FractionalPercent_TEN_THOUSAND),
	}}

	name, v, err := decode(t, EndpointsType, m)
	if err != nil {
		t.Fatalf("Decode: %v", err)
	}
	if name != "c1" {
		t.Errorf("name = %q, want c1", name)
	}
	want := &ClusterLoadAssignment{
		ClusterName: "c1",
		Localities: []Locality{
			{Region: "r", Zone: "z1", Weight: 10, Priority: 0, Endpoints: []Endpoint{
				{Addresses: []string{"10.0.0.1:80"}, Health: HealthHealthy, Weight: 1},
				{Addresses: []string{"10.0.0.2:80", "[2001:db8::2]:80"}, Health: HealthDraining, Weight: 7, Hostname: "host-2"},
			}},
			{Region: "r", Zone: "z2", Weight: 20, Priority: 1, Endpoints: []Endpoint{
				{Addresses: []string{"10.0.1.1:80"}, Health: HealthUnknown, Weight: 1},
				{Addresses: []string{"10.0.1.2:80"}, Health: HealthHealthy, Weight: 1},
			}},
			{Region: "r", Zone: "z1", Weight: 5, Priority: 1, Endpoints: []Endpoint{
				{Addresses: []string{"10.0.2.1:81"}, Health: HealthHealthy, Weight: 1},
			}},
		},
		Drops: []DropOverload{
			{Category: "throttle", Numerator: 50_000, Denominator: 1_000_000},
			{Category: "lb", Numerator: 500, Denominator: 1_000_000},
		},
	}
	if !reflect.DeepEqual(v, want) {
		t.Errorf("Decode =\n%+v\nwant\n%+v", v, want)
	}
	if s, w := want.Summary(), "endpoints c1: 3 localities, 5 endpoints (4 healthy), 2 drops"; s != w {
		t.Errorf("Summary() = %q, want %q", s, w)
	}
}

func TestEndpointsSummary(t *testing.T) {
	for _, tc := range []struct {
		c    *ClusterLoadAssignment
		want string
	}{
		{&ClusterLoadAssignment{ClusterName: "c1"}, "endpoints c1: 0 localities, 0 endpoints (0 healthy), 0 drops"},
		{
			&ClusterLoadAssignment{
				ClusterName: "c1",
				Localities:  []Locality{{Endpoints: []Endpoint{{Health: HealthDraining}}}},
				Drops:       []DropOverload{{}},
			},
			"endpoints c1: 1 locality, 1 endpoint (0 healthy), 1 drop",
		},
	} {
		if got := tc.c.Summary(); got != tc.want {
			t.Errorf("Summary() = %q, want %q", got, tc.want)
		}
	}
}

func TestHealthStatus(t *testing.T) {
	for h, usable := range map[HealthStatus]bool{
		HealthUnknown: true, HealthHealthy: true, HealthUnhealthy: false,
		HealthDraining: false, HealthTimeout: false, HealthDegraded: false,
	} {
		if h.Usable() != usable {
			t.Errorf("%v.Usable() = %v, want %v", h, !usable, usable)
		}
	}
	if s := HealthDegraded.String(); s != "DEGRADED" {
		t.Errorf("HealthDegraded.String() = %q", s)
	}
}

func TestEndpointsErrors(t *testing.T) {
	ep := func(ip string) *endpointv3.LbEndpoint { return lbEndpoint(ip, 80, corev3.HealthStatus_HEALTHY) }
	one := func(edit func(*endpointv3.LbEndpoint)) func() proto.Message {
		return func() proto.Message {
			e := ep("10.0.0.9")
			edit(e)
			return cla(locality("z1", 1, 0, ep("10.0.0.1"), e))
		}
	}
	const at = `eds "c1": endpoints[0].lb_endpoints[1]: `
	runErrorCases(t, EndpointsType, "c1", []errorCase{
		{
			name: "bad drop denominator",
			build: func() proto.Message {
				m := cla()
				m.Policy = &endpointv3.ClusterLoadAssignment_Policy{DropOverloads: []*endpointv3.ClusterLoadAssignment_Policy_DropOverload{
					drop("a", 1, typev3.FractionalPercent_MILLION), drop("b", 1, 9),
				}}
				return m
			},
			want: `eds "c1": policy.drop_overloads[1]: unsupported denominator 9`,
		},
		{
			name: "drop without category",
			build: func() proto.Message {
				m := cla()
				m.Policy = &endpointv3.ClusterLoadAssignment_Policy{DropOverloads: []*endpointv3.ClusterLoadAssignment_Policy_DropOverload{
					drop("a", 1, typev3.FractionalPercent_MILLION), drop("", 1, typev3.FractionalPercent_MILLION),
				}}
				return m
			},
			want: `eds "c1": policy.drop_overloads[1].category: empty`,
		},
		{
			name: "drop without drop_percentage",
			build: func() proto.Message {
				m := cla()
				m.Policy = &endpointv3.ClusterLoadAssignment_Policy{DropOverloads: []*endpointv3.ClusterLoadAssignment_Policy_DropOverload{
					drop("a", 1, typev3.FractionalPercent_MILLION), {Category: "lb"},
				}}
				return m
			},
			want: `eds "c1": policy.drop_overloads[1].drop_percentage: not set (category "lb")`,
		},
		{
			name: "locality without id",
			build: func() proto.Message {
				l := locality("z", 1, 0)
				l.Locality = nil
				return cla(l)
			},
			want: `eds "c1": endpoints[0]: locality is not set`,
		},
		{
			name:  "priority gap",
			build: func() proto.Message { return cla(locality("z1", 1, 0), locality("z2", 1, 2)) },
			want:  `eds "c1": priorities are not contiguous: priority 1 is missing`,
		},
		{
			name:  "priority gap left by a weight 0 locality",
			build: func() proto.Message { return cla(locality("z0", 0, 0), locality("z1", 1, 1)) },
			want:  `eds "c1": priorities are not contiguous: priority 0 is missing`,
		},
		{
			name:  "duplicate locality in a priority",
			build: func() proto.Message { return cla(locality("z1", 1, 0), locality("z2", 1, 0), locality("z1", 2, 0)) },
			want:  `eds "c1": endpoints[2]: duplicate locality {region "r", zone "z1", sub_zone ""} at priority 0`,
		},
		{
			name: "locality weights overflow",
			build: func() proto.Message {
				return cla(locality("z1", 4_000_000_000, 0), locality("z2", 300_000_000, 0))
			},
			want: `eds "c1": endpoints[1]: locality weights at priority 0 add up to more than 4294967295`,
		},
		{
			name:  "endpoint weight 0",
			build: one(func(e *endpointv3.LbEndpoint) { e.LoadBalancingWeight = wrapperspb.UInt32(0) }),
			want:  at + `load_balancing_weight is 0, must be at least 1`,
		},
		{
			name: "endpoint_name instead of endpoint",
			build: one(func(e *endpointv3.LbEndpoint) {
				e.HostIdentifier = &endpointv3.LbEndpoint_EndpointName{EndpointName: "n"}
			}),
			want: at + `endpoint is not set`,
		},
		{
			name:  "no address",
			build: one(func(e *endpointv3.LbEndpoint) { e.GetEndpoint().Address = nil }),
			want:  at + `endpoint.address: no socket_address`,
		},
		{
			name: "pipe address",
			build: one(func(e *endpointv3.LbEndpoint) {
				e.GetEndpoint().Address = &corev3.Address{Address: &corev3.Address_Pipe{Pipe: &corev3.Pipe{Path: "/p"}}}
			}),
			want: at + `endpoint.address: no socket_address`,
		},
		{
			name:  "hostname instead of IP",
			build: one(func(e *endpointv3.LbEndpoint) { e.GetEndpoint().Address = sockAddr("backend.local", 80) }),
			want:  at + `endpoint.address: address "backend.local" is not an IP address`,
		},
		{
			name: "DRAINING endpoint with a hostname",
			build: one(func(e *endpointv3.LbEndpoint) {
				e.HealthStatus = corev3.HealthStatus_DRAINING
				e.GetEndpoint().Address = sockAddr("backend.local", 80)
			}),
			want: at + `endpoint.address: address "backend.local" is not an IP address`,
		},
		{
			name: "named ports make a duplicate address",
			build: func() proto.Message {
				a, b := ep("10.0.0.1"), ep("10.0.0.1")
				a.GetEndpoint().GetAddress().GetSocketAddress().PortSpecifier = &corev3.SocketAddress_NamedPort{NamedPort: "http"}
				b.GetEndpoint().GetAddress().GetSocketAddress().PortSpecifier = nil
				return cla(locality("z1", 1, 0, a, b))
			},
			want: `eds "c1": endpoints[0].lb_endpoints[1]: endpoint.address: duplicate address "10.0.0.1:0"`,
		},
		{
			name:  "port out of range",
			build: one(func(e *endpointv3.LbEndpoint) { e.GetEndpoint().Address = sockAddr("10.0.0.9", 65536) }),
			want:  at + `endpoint.address: port_value 65536 is out of range`,
		},
		{
			name: "bad additional address",
			build: one(func(e *endpointv3.LbEndpoint) {
				e.GetEndpoint().AdditionalAddresses = []*endpointv3.Endpoint_AdditionalAddress{
					{Address: sockAddr("::1", 80)}, {Address: sockAddr("x", 80)},
				}
			}),
			want: at + `endpoint.additional_addresses[1]: address "x" is not an IP address`,
		},
		{
			name:  "duplicate address in a locality",
			build: one(func(e *endpointv3.LbEndpoint) { e.GetEndpoint().Address = sockAddr("10.0.0.1", 80) }),
			want:  at + `endpoint.address: duplicate address "10.0.0.1:80"`,
		},
		{
			name: "duplicate address across localities",
			build: func() proto.Message {
				return cla(locality("z1", 1, 0, ep("10.0.0.1")), locality("z2", 1, 1, ep("10.0.0.1")))
			},
			want: `eds "c1": endpoints[1].lb_endpoints[0]: endpoint.address: duplicate address "10.0.0.1:80"`,
		},
		{
			name: "additional address duplicates the primary",
			build: one(func(e *endpointv3.LbEndpoint) {
				e.GetEndpoint().AdditionalAddresses = []*endpointv3.Endpoint_AdditionalAddress{{Address: sockAddr("10.0.0.9", 80)}}
			}),
			want: at + `endpoint.additional_addresses[0]: duplicate address "10.0.0.9:80"`,
		},
	})
}

// As in gRPC C-core and grpc-go, an address with a named_port or no port
// has port 0: the endpoint is kept, and no connection reaches it.
func TestEndpointPortZero(t *testing.T) {
	named, none := lbEndpoint("10.0.0.1", 80, corev3.HealthStatus_HEALTHY), lbEndpoint("2001:db8::1", 80, corev3.HealthStatus_HEALTHY)
	named.GetEndpoint().GetAddress().GetSocketAddress().PortSpecifier = &corev3.SocketAddress_NamedPort{NamedPort: "http"}
	none.GetEndpoint().GetAddress().GetSocketAddress().PortSpecifier = nil
	_, v, err := decode(t, EndpointsType, cla(locality("z", 1, 0, named, none)))
	if err != nil {
		t.Fatal(err)
	}
	eps := v.(*ClusterLoadAssignment).Localities[0].Endpoints
	if len(eps) != 2 || !reflect.DeepEqual(eps[0].Addresses, []string{"10.0.0.1:0"}) || !reflect.DeepEqual(eps[1].Addresses, []string{"[2001:db8::1]:0"}) {
		t.Errorf("endpoints = %+v, want 10.0.0.1:0 and [2001:db8::1]:0", eps)
	}
}

// As in gRPC C-core, an endpoint that is neither UNKNOWN, HEALTHY nor
// DRAINING is left out before anything else of it is read: an address that
// is no IP, a weight of 0, no endpoint at all, an address that repeats
// another's.
func TestEndpointsUnusedStatusSkipped(t *testing.T) {
	hostname := lbEndpoint("backend.local", 80, corev3.HealthStatus_UNHEALTHY)
	zero := lbEndpoint("10.0.0.1", 80, corev3.HealthStatus_TIMEOUT)
	zero.LoadBalancingWeight = wrapperspb.UInt32(0)
	noEndpoint := &endpointv3.LbEndpoint{HealthStatus: corev3.HealthStatus_DEGRADED}
	dup := lbEndpoint("10.0.0.1", 80, corev3.HealthStatus(99)) // a value unknown to the API
	_, v, err := decode(t, EndpointsType, cla(locality("z", 1, 0,
		hostname, zero, lbEndpoint("10.0.0.1", 80, corev3.HealthStatus_HEALTHY), noEndpoint, dup)))
	if err != nil {
		t.Fatal(err)
	}
	want := []Endpoint{{Addresses: []string{"10.0.0.1:80"}, Health: HealthHealthy, Weight: 1}}
	if got := v.(*ClusterLoadAssignment).Localities[0].Endpoints; !reflect.DeepEqual(got, want) {
		t.Errorf("endpoints = %+v, want %+v", got, want)
	}
}

// An endpoint's hash_key in filter_metadata "envoy.lb" is its ring key
// (gRFC A76); a key that is not a string, or none, leaves it empty.
func TestEndpointHashKey(t *testing.T) {
	withKey := func(ip string, v *structpb.Value) *endpointv3.LbEndpoint {
		e := lbEndpoint(ip, 80, corev3.HealthStatus_HEALTHY)
		e.Metadata = &corev3.Metadata{FilterMetadata: map[string]*structpb.Struct{"envoy.lb": {Fields: map[string]*structpb.Value{"hash_key": v}}}}
		return e
	}
	_, v, err := decode(t, EndpointsType, cla(locality("z", 1, 0,
		withKey("10.0.0.1", structpb.NewStringValue("shard-a")),
		withKey("10.0.0.2", structpb.NewNumberValue(7)),
		lbEndpoint("10.0.0.3", 80, corev3.HealthStatus_HEALTHY))))
	if err != nil {
		t.Fatal(err)
	}
	eps := v.(*ClusterLoadAssignment).Localities[0].Endpoints
	if got := []string{eps[0].HashKey, eps[1].HashKey, eps[2].HashKey}; !reflect.DeepEqual(got, []string{"shard-a", "", ""}) {
		t.Errorf("hash keys %q, want shard-a and two empty", got)
	}
}

// As in gRPC C-core, a locality without a weight is left out before
// anything else of it is read: without its locality (region, zone,
// sub_zone), it is not an error.
func TestEndpointsZeroWeightLocalityUnread(t *testing.T) {
	noID := locality("z0", 0, 0, lbEndpoint("10.0.0.9", 80, corev3.HealthStatus_HEALTHY))
	noID.Locality = nil
	unset := locality("z1", 0, 0)
	unset.Locality, unset.LoadBalancingWeight = nil, nil
	_, v, err := decode(t, EndpointsType, cla(noID, unset, locality("z2", 1, 0, lbEndpoint("10.0.0.1", 80, corev3.HealthStatus_HEALTHY))))
	if err != nil {
		t.Fatalf("Decode: %v", err)
	}
	if got := v.(*ClusterLoadAssignment).Localities; len(got) != 1 || got[0].Zone != "z2" {
		t.Errorf("localities = %+v, want only z2", got)
	}
}

// As in gRPC C-core, the weights of a locality's endpoints may add up to
// more than a uint32 holds: each is kept as it is (ring_hash sums them in
// floating point, and a locality's endpoints are weighed against one
// another only there).
func TestEndpointWeightsBeyondUint32(t *testing.T) {
	a, b := lbEndpoint("10.0.0.1", 80, corev3.HealthStatus_HEALTHY), lbEndpoint("10.0.0.2", 80, corev3.HealthStatus_HEALTHY)
	a.LoadBalancingWeight = wrapperspb.UInt32(4_000_000_000)
	b.LoadBalancingWeight = wrapperspb.UInt32(300_000_000)
	_, v, err := decode(t, EndpointsType, cla(locality("z1", 1, 0, a, b)))
	if err != nil {
		t.Fatalf("Decode: %v", err)
	}
	eps := v.(*ClusterLoadAssignment).Localities[0].Endpoints
	if len(eps) != 2 || eps[0].Weight != 4_000_000_000 || eps[1].Weight != 300_000_000 {
		t.Errorf("endpoints = %+v, want weights 4000000000 and 300000000", eps)
	}
}

// A numerator whose share, in parts per million, is past what 32 bits
// hold is a drop of every request, not a wrapped small share.
func TestDropNumeratorBeyondUint32(t *testing.T) {
	m := cla()
	m.Policy = &endpointv3.ClusterLoadAssignment_Policy{DropOverloads: []*endpointv3.ClusterLoadAssignment_Policy_DropOverload{
		drop("lb", 429_497, typev3.FractionalPercent_HUNDRED),
	}}
	_, v, err := decode(t, EndpointsType, m)
	if err != nil {
		t.Fatalf("Decode: %v", err)
	}
	if got := v.(*ClusterLoadAssignment).Drops; len(got) != 1 || got[0].Numerator != 1_000_000 {
		t.Errorf("drops = %+v, want 1000000 per million", got)
	}
}
