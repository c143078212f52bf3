package xdsresource

import (
	"reflect"
	"testing"
	"time"

	"github.com/xdslens/xdslens/xdsclient/xdsresource/lbpolicy"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	aggregatev3 "github.com/envoyproxy/go-control-plane/envoy/extensions/clusters/aggregate/v3"
	cswrrv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/load_balancing_policies/client_side_weighted_round_robin/v3"
	leastrequestv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/load_balancing_policies/least_request/v3"
	pickfirstv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/load_balancing_policies/pick_first/v3"
	ringhashv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/load_balancing_policies/ring_hash/v3"
	roundrobinv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/load_balancing_policies/round_robin/v3"
	wrrlocalityv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/load_balancing_policies/wrr_locality/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// edsCluster returns a valid EDS cluster "c1" with service name "c1-eds".
func edsCluster() *clusterv3.Cluster {
	return &clusterv3.Cluster{
		Name:                 "c1",
		ClusterDiscoveryType: &clusterv3.Cluster_Type{Type: clusterv3.Cluster_EDS},
		EdsClusterConfig:     &clusterv3.Cluster_EdsClusterConfig{EdsConfig: adsSource, ServiceName: "c1-eds"},
	}
}

func dnsCluster(las ...*endpointv3.LocalityLbEndpoints) *clusterv3.Cluster {
	return &clusterv3.Cluster{
		Name:                 "c1",
		ClusterDiscoveryType: &clusterv3.Cluster_Type{Type: clusterv3.Cluster_LOGICAL_DNS},
		LoadAssignment:       &endpointv3.ClusterLoadAssignment{Endpoints: las},
	}
}

func dnsEndpoint(sa *corev3.SocketAddress) *endpointv3.LocalityLbEndpoints {
	return &endpointv3.LocalityLbEndpoints{LbEndpoints: []*endpointv3.LbEndpoint{{
		HostIdentifier: &endpointv3.LbEndpoint_Endpoint{Endpoint: &endpointv3.Endpoint{
			Address: &corev3.Address{Address: &corev3.Address_SocketAddress{SocketAddress: sa}},
		}},
	}}}
}

func aggregateCluster(t testing.TB, clusters ...string) *clusterv3.Cluster {
	return &clusterv3.Cluster{
		Name: "c1",
		ClusterDiscoveryType: &clusterv3.Cluster_ClusterType{ClusterType: &clusterv3.Cluster_CustomClusterType{
			Name:        "envoy.clusters.aggregate",
			TypedConfig: toAny(t, &aggregatev3.ClusterConfig{Clusters: clusters}),
		}},
	}
}

// lbPolicy builds a load_balancing_policy from policy configs, in order.
func lbPolicy(t testing.TB, cfgs ...proto.Message) *clusterv3.LoadBalancingPolicy {
	p := &clusterv3.LoadBalancingPolicy{}
	for _, c := range cfgs {
		p.Policies = append(p.Policies, &clusterv3.LoadBalancingPolicy_Policy{
			TypedExtensionConfig: &corev3.TypedExtensionConfig{Name: "p", TypedConfig: toAny(t, c)},
		})
	}
	return p
}

func TestClusterEDS(t *testing.T) {
	m := edsCluster()
	m.ConnectTimeout = durationpb.New(3 * time.Second)
	m.LrsServer = selfSource
	m.CircuitBreakers = &clusterv3.CircuitBreakers{Thresholds: []*clusterv3.CircuitBreakers_Thresholds{
		{Priority: corev3.RoutingPriority_HIGH, MaxRequests: wrapperspb.UInt32(1)},
		{Priority: corev3.RoutingPriority_DEFAULT, MaxRequests: wrapperspb.UInt32(500)},
	}}
	m.OutlierDetection = &clusterv3.OutlierDetection{Interval: durationpb.New(time.Second), MaxEjectionPercent: wrapperspb.UInt32(100)}

	name, v, err := decode(t, ClusterType, m)
	if err != nil {
		t.Fatalf("Decode: %v", err)
	}
	got := v.(*Cluster)
	if name != "c1" {
		t.Errorf("name = %q, want c1", name)
	}
	if !proto.Equal(got.OutlierDetection, m.OutlierDetection) {
		t.Errorf("OutlierDetection = %v, want %v", got.OutlierDetection, m.OutlierDetection)
	}
	got.OutlierDetection = nil
	want := &Cluster{
		Name:           "c1",
		Kind:           ClusterEDS,
		EDSServiceName: "c1-eds",
		MaxRequests:    500,
		LRSServer:      true,
		ConnectTimeout: 3 * time.Second,
		Config:         lbpolicy.Config{LBPolicy: lbpolicy.RoundRobin},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Decode =\n%+v\nwant\n%+v", got, want)
	}
	got.OutlierDetection = m.OutlierDetection
	if s, w := got.Summary(), `cluster c1: EDS service "c1-eds", round_robin, max_requests 500, outlier_detection, LRS`; s != w {
		t.Errorf("Summary() = %q, want %q", s, w)
	}
}

func TestClusterEDSDefaults(t *testing.T) {
	m := edsCluster()
	m.EdsClusterConfig = &clusterv3.Cluster_EdsClusterConfig{EdsConfig: selfSource}
	_, v, err := decode(t, ClusterType, m)
	if err != nil {
		t.Fatalf("Decode: %v", err)
	}
	c := v.(*Cluster)
	if c.EDSServiceName != "" || c.EDSName() != "c1" || c.MaxRequests != DefaultMaxRequests {
		t.Errorf("Decode = %+v, want no service name, EDSName c1 and default max_requests", c)
	}
	if s, w := c.Summary(), `cluster c1: EDS service "c1", round_robin, max_requests 1024`; s != w {
		t.Errorf("Summary() = %q, want %q", s, w)
	}
}

func TestClusterLogicalDNS(t *testing.T) {
	m := dnsCluster(dnsEndpoint(&corev3.SocketAddress{Address: "dns.example.com", PortSpecifier: &corev3.SocketAddress_PortValue{PortValue: 443}}))
	m.LbPolicy = clusterv3.Cluster_LEAST_REQUEST
	m.LbConfig = &clusterv3.Cluster_LeastRequestLbConfig_{LeastRequestLbConfig: &clusterv3.Cluster_LeastRequestLbConfig{ChoiceCount: wrapperspb.UInt32(3)}}
	_, v, err := decode(t, ClusterType, m)
	if err != nil {
		t.Fatalf("Decode: %v", err)
	}
	want := &Cluster{Name: "c1", Kind: ClusterLogicalDNS, DNSHostname: "dns.example.com:443", MaxRequests: 1024, Config: lbpolicy.Config{LBPolicy: lbpolicy.LeastRequest, LeastRequestChoiceCount: 3}}
	if !reflect.DeepEqual(v, want) {
		t.Errorf("Decode =\n%+v\nwant\n%+v", v, want)
	}
	if s, w := want.Summary(), `cluster c1: LOGICAL_DNS "dns.example.com:443", least_request, max_requests 1024`; s != w {
		t.Errorf("Summary() = %q, want %q", s, w)
	}
}

func TestClusterAggregate(t *testing.T) {
	m := aggregateCluster(t, "a", "b")
	m.LbPolicy = clusterv3.Cluster_RING_HASH
	m.LbConfig = &clusterv3.Cluster_RingHashLbConfig_{RingHashLbConfig: &clusterv3.Cluster_RingHashLbConfig{MaximumRingSize: wrapperspb.UInt64(4096)}}
	_, v, err := decode(t, ClusterType, m)
	if err != nil {
		t.Fatalf("Decode: %v", err)
	}
	want := &Cluster{
		Name: "c1", Kind: ClusterAggregate, PrioritizedClusters: []string{"a", "b"}, MaxRequests: 1024,
		Config: lbpolicy.Config{LBPolicy: lbpolicy.RingHash, RingHash: &lbpolicy.RingHashConfig{MinRingSize: 1024, MaxRingSize: 4096}},
	}
	if !reflect.DeepEqual(v, want) {
		t.Errorf("Decode =\n%+v\nwant\n%+v", v, want)
	}
	if s, w := want.Summary(), `cluster c1: AGGREGATE of ["a" "b"], ring_hash, max_requests 1024`; s != w {
		t.Errorf("Summary() = %q, want %q", s, w)
	}
}

// As in gRPC C-core, an aggregate cluster is known by its typed_config's
// type, with or without the type.googleapis.com/ prefix; the cluster_type's
// name is not read.
func TestClusterAggregateKnownByConfigType(t *testing.T) {
	for _, tc := range []struct{ name, typeURL string }{
		{"", "type.googleapis.com/envoy.extensions.clusters.aggregate.v3.ClusterConfig"},
		{"my.aggregate", "type.googleapis.com/envoy.extensions.clusters.aggregate.v3.ClusterConfig"},
		{"envoy.clusters.aggregate", "envoy.extensions.clusters.aggregate.v3.ClusterConfig"},
	} {
		m := aggregateCluster(t, "a", "b")
		m.GetClusterType().Name = tc.name
		m.GetClusterType().TypedConfig.TypeUrl = tc.typeURL
		_, v, err := decode(t, ClusterType, m)
		if err != nil {
			t.Errorf("cluster_type %q of %q: Decode: %v", tc.name, tc.typeURL, err)
			continue
		}
		if c := v.(*Cluster); c.Kind != ClusterAggregate || !reflect.DeepEqual(c.PrioritizedClusters, []string{"a", "b"}) {
			t.Errorf("cluster_type %q of %q: Decode = %+v, want an aggregate of a and b", tc.name, tc.typeURL, c)
		}
	}
}

func TestClusterLoadBalancingPolicy(t *testing.T) {
	for _, tc := range []struct {
		name      string
		policy    func() *clusterv3.LoadBalancingPolicy
		wantName  string
		wantChild string
		wantRing  *lbpolicy.RingHashConfig
		wantLR    uint32
	}{
		{
			name: "unknown entries are skipped",
			policy: func() *clusterv3.LoadBalancingPolicy {
				return lbPolicy(t, &structpb.Struct{}, &roundrobinv3.RoundRobin{})
			},
			wantName: lbpolicy.RoundRobin,
		},
		{
			name:     "pick_first",
			policy:   func() *clusterv3.LoadBalancingPolicy { return lbPolicy(t, &pickfirstv3.PickFirst{}) },
			wantName: lbpolicy.PickFirst,
		},
		{
			name: "ring_hash",
			policy: func() *clusterv3.LoadBalancingPolicy {
				return lbPolicy(t, &ringhashv3.RingHash{MinimumRingSize: wrapperspb.UInt64(10), MaximumRingSize: wrapperspb.UInt64(20)})
			},
			wantName: lbpolicy.RingHash,
			wantRing: &lbpolicy.RingHashConfig{MinRingSize: 10, MaxRingSize: 20},
		},
		{
			name: "wrr_locality of least_request",
			policy: func() *clusterv3.LoadBalancingPolicy {
				return lbPolicy(t, &wrrlocalityv3.WrrLocality{EndpointPickingPolicy: lbPolicy(t, &leastrequestv3.LeastRequest{})})
			},
			wantName:  lbpolicy.WRRLocality,
			wantChild: lbpolicy.LeastRequest,
			wantLR:    2,
		},
		{
			name: "wrr_locality of weighted_round_robin",
			policy: func() *clusterv3.LoadBalancingPolicy {
				return lbPolicy(t, &wrrlocalityv3.WrrLocality{EndpointPickingPolicy: lbPolicy(t, &cswrrv3.ClientSideWeightedRoundRobin{})})
			},
			wantName:  lbpolicy.WRRLocality,
			wantChild: lbpolicy.WeightedRoundRobin,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := edsCluster()
			m.LbPolicy = clusterv3.Cluster_MAGLEV // ignored when load_balancing_policy is set
			m.LoadBalancingPolicy = tc.policy()
			_, v, err := decode(t, ClusterType, m)
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			c := v.(*Cluster)
			if c.LBPolicy != tc.wantName || c.LBChildPolicy != tc.wantChild ||
				!reflect.DeepEqual(c.RingHash, tc.wantRing) || c.LeastRequestChoiceCount != tc.wantLR {
				t.Errorf("LB = %q/%q ring %+v choice %d; want %q/%q ring %+v choice %d",
					c.LBPolicy, c.LBChildPolicy, c.RingHash, c.LeastRequestChoiceCount,
					tc.wantName, tc.wantChild, tc.wantRing, tc.wantLR)
			}
			if !proto.Equal(c.LoadBalancingPolicy, m.LoadBalancingPolicy) {
				t.Error("LoadBalancingPolicy is not passed through")
			}
		})
	}
}

func withPolicyMsg(m *clusterv3.Cluster, p *clusterv3.LoadBalancingPolicy) *clusterv3.Cluster {
	m.LoadBalancingPolicy = p
	return m
}

func TestClusterErrors(t *testing.T) {
	edsWith := func(edit func(*clusterv3.Cluster)) func() proto.Message {
		return func() proto.Message {
			m := edsCluster()
			edit(m)
			return m
		}
	}
	withPolicy := func(cfgs ...proto.Message) func() proto.Message {
		return edsWith(func(m *clusterv3.Cluster) { m.LoadBalancingPolicy = lbPolicy(t, cfgs...) })
	}
	port := func(p uint32) *corev3.SocketAddress_PortValue { return &corev3.SocketAddress_PortValue{PortValue: p} }
	dns := func(las ...*endpointv3.LocalityLbEndpoints) func() proto.Message {
		return func() proto.Message { return dnsCluster(las...) }
	}
	nested := lbPolicy(t, &roundrobinv3.RoundRobin{})
	for i := range 16 {
		if i == 15 {
			// 16 levels are allowed.
			if _, _, err := decode(t, ClusterType, withPolicyMsg(edsCluster(), nested)); err != nil {
				t.Fatalf("Decode of 16 nested policies: %v", err)
			}
		}
		nested = lbPolicy(t, &wrrlocalityv3.WrrLocality{EndpointPickingPolicy: nested})
	}
	const dnsAt = `cds "c1": load_assignment.endpoints[0].lb_endpoints[0]: `
	runErrorCases(t, ClusterType, "c1", []errorCase{
		{
			name:  "eds_config not ads or self",
			build: edsWith(func(m *clusterv3.Cluster) { m.EdsClusterConfig.EdsConfig = pathSource }),
			want:  `cds "c1": eds_cluster_config.eds_config must be ads or self`,
		},
		{
			name:  "no eds_cluster_config",
			build: edsWith(func(m *clusterv3.Cluster) { m.EdsClusterConfig = nil }),
			want:  `cds "c1": eds_cluster_config.eds_config must be ads or self`,
		},
		{
			name: "unsupported discovery type",
			build: edsWith(func(m *clusterv3.Cluster) {
				m.ClusterDiscoveryType = &clusterv3.Cluster_Type{Type: clusterv3.Cluster_STATIC}
			}),
			want: `cds "c1": unsupported cluster type STATIC`,
		},
		{
			name: "unsupported custom cluster type",
			build: edsWith(func(m *clusterv3.Cluster) {
				m.ClusterDiscoveryType = &clusterv3.Cluster_ClusterType{ClusterType: &clusterv3.Cluster_CustomClusterType{Name: "envoy.clusters.redis"}}
			}),
			want: `cds "c1": cluster_type "envoy.clusters.redis": typed_config: not set`,
		},
		{
			name: "custom cluster type of another config type",
			build: edsWith(func(m *clusterv3.Cluster) {
				m.ClusterDiscoveryType = &clusterv3.Cluster_ClusterType{ClusterType: &clusterv3.Cluster_CustomClusterType{
					Name: "envoy.clusters.aggregate", TypedConfig: toAny(t, &structpb.Struct{}),
				}}
			}),
			want: `cds "c1": cluster_type "envoy.clusters.aggregate": typed_config: unsupported custom cluster type "type.googleapis.com/google.protobuf.Struct"`,
		},
		{
			name: "aggregate config under another prefix",
			build: func() proto.Message {
				m := aggregateCluster(t, "a")
				m.GetClusterType().TypedConfig.TypeUrl = "example.com/envoy.extensions.clusters.aggregate.v3.ClusterConfig"
				return m
			},
			want: `cds "c1": cluster_type "envoy.clusters.aggregate": typed_config: unsupported custom cluster type "example.com/envoy.extensions.clusters.aggregate.v3.ClusterConfig"`,
		},
		{
			name:  "aggregate without clusters",
			build: func() proto.Message { return aggregateCluster(t) },
			want:  `cds "c1": aggregate cluster has no clusters`,
		},
		{
			name: "aggregate config that does not parse",
			build: func() proto.Message {
				m := aggregateCluster(t)
				m.GetClusterType().TypedConfig.Value = []byte{0x0a, 0x05, 'a'}
				return m
			},
			want:   `cds "c1": cluster_type "envoy.clusters.aggregate": typed_config: `,
			prefix: true,
		},
		{
			name:  "LOGICAL_DNS without load_assignment",
			build: func() proto.Message { m := dnsCluster(); m.LoadAssignment = nil; return m },
			want:  `cds "c1": LOGICAL_DNS cluster needs load_assignment`,
		},
		{
			name:  "LOGICAL_DNS with two localities",
			build: dns(dnsEndpoint(&corev3.SocketAddress{}), dnsEndpoint(&corev3.SocketAddress{})),
			want:  `cds "c1": load_assignment: LOGICAL_DNS cluster needs exactly one locality, has 2`,
		},
		{
			name:  "LOGICAL_DNS with no endpoint",
			build: dns(&endpointv3.LocalityLbEndpoints{}),
			want:  `cds "c1": load_assignment.endpoints[0]: LOGICAL_DNS cluster needs exactly one endpoint, has 0`,
		},
		{
			name: "LOGICAL_DNS endpoint without socket address",
			build: dns(&endpointv3.LocalityLbEndpoints{LbEndpoints: []*endpointv3.LbEndpoint{{
				HostIdentifier: &endpointv3.LbEndpoint_EndpointName{EndpointName: "x"},
			}}}),
			want: dnsAt + `endpoint has no socket_address`,
		},
		{
			name:  "LOGICAL_DNS resolver_name",
			build: dns(dnsEndpoint(&corev3.SocketAddress{Address: "h", PortSpecifier: port(1), ResolverName: "r"})),
			want:  dnsAt + `resolver_name "r" is not supported`,
		},
		{
			name:  "LOGICAL_DNS empty host",
			build: dns(dnsEndpoint(&corev3.SocketAddress{PortSpecifier: port(1)})),
			want:  dnsAt + `address is empty`,
		},
		{
			name:  "LOGICAL_DNS named port",
			build: dns(dnsEndpoint(&corev3.SocketAddress{Address: "h", PortSpecifier: &corev3.SocketAddress_NamedPort{NamedPort: "https"}})),
			want:  dnsAt + `port_value is missing`,
		},
		{
			// Kept, where gRPC C-core and grpc-go accept the cluster and
			// fail every connection: a NACK keeps the cluster in use.
			name:  "LOGICAL_DNS port out of range",
			build: dns(dnsEndpoint(&corev3.SocketAddress{Address: "h", PortSpecifier: port(70000)})),
			want:  dnsAt + `port_value 70000 is out of range`,
		},
		{
			name:  "unsupported lb_policy",
			build: edsWith(func(m *clusterv3.Cluster) { m.LbPolicy = clusterv3.Cluster_MAGLEV }),
			want:  `cds "c1": unsupported lb_policy MAGLEV`,
		},
		{
			name: "ring hash murmur",
			build: edsWith(func(m *clusterv3.Cluster) {
				m.LbPolicy = clusterv3.Cluster_RING_HASH
				m.LbConfig = &clusterv3.Cluster_RingHashLbConfig_{RingHashLbConfig: &clusterv3.Cluster_RingHashLbConfig{HashFunction: clusterv3.Cluster_RingHashLbConfig_MURMUR_HASH_2}}
			}),
			want: `cds "c1": ring_hash_lb_config.hash_function MURMUR_HASH_2 is not supported, want XX_HASH`,
		},
		{
			name: "ring hash min greater than max",
			build: edsWith(func(m *clusterv3.Cluster) {
				m.LbPolicy = clusterv3.Cluster_RING_HASH
				m.LbConfig = &clusterv3.Cluster_RingHashLbConfig_{RingHashLbConfig: &clusterv3.Cluster_RingHashLbConfig{
					MinimumRingSize: wrapperspb.UInt64(100), MaximumRingSize: wrapperspb.UInt64(10),
				}}
			}),
			want: `cds "c1": ring_hash_lb_config: minimum_ring_size 100 is greater than maximum_ring_size 10`,
		},
		{
			name: "ring hash max above 8M",
			build: edsWith(func(m *clusterv3.Cluster) {
				m.LbPolicy = clusterv3.Cluster_RING_HASH
				m.LbConfig = &clusterv3.Cluster_RingHashLbConfig_{RingHashLbConfig: &clusterv3.Cluster_RingHashLbConfig{MaximumRingSize: wrapperspb.UInt64(8*1024*1024 + 1)}}
			}),
			want: `cds "c1": ring_hash_lb_config: maximum_ring_size 8388609 is not in [1, 8388608]`,
		},
		{
			name: "ring hash min 0",
			build: edsWith(func(m *clusterv3.Cluster) {
				m.LbPolicy = clusterv3.Cluster_RING_HASH
				m.LbConfig = &clusterv3.Cluster_RingHashLbConfig_{RingHashLbConfig: &clusterv3.Cluster_RingHashLbConfig{MinimumRingSize: wrapperspb.UInt64(0)}}
			}),
			want: `cds "c1": ring_hash_lb_config: minimum_ring_size 0 is not in [1, 8388608]`,
		},
		{
			name: "least_request choice_count 1",
			build: edsWith(func(m *clusterv3.Cluster) {
				m.LbPolicy = clusterv3.Cluster_LEAST_REQUEST
				m.LbConfig = &clusterv3.Cluster_LeastRequestLbConfig_{LeastRequestLbConfig: &clusterv3.Cluster_LeastRequestLbConfig{ChoiceCount: wrapperspb.UInt32(1)}}
			}),
			want: `cds "c1": least_request_lb_config: choice_count is 1, must be at least 2`,
		},
		{
			name:  "load_balancing_policy without supported entry",
			build: withPolicy(&structpb.Struct{}),
			want:  `cds "c1": load_balancing_policy: no supported policy`,
		},
		{
			name:  "load_balancing_policy invalid ring_hash",
			build: withPolicy(&ringhashv3.RingHash{HashFunction: ringhashv3.RingHash_MURMUR_HASH_2}, &roundrobinv3.RoundRobin{}),
			want:  `cds "c1": load_balancing_policy: policies[0] "p": hash_function MURMUR_HASH_2 is not supported`,
		},
		{
			name:  "load_balancing_policy invalid least_request",
			build: withPolicy(&leastrequestv3.LeastRequest{ChoiceCount: wrapperspb.UInt32(0)}),
			want:  `cds "c1": load_balancing_policy: policies[0] "p": choice_count is 0, must be at least 2`,
		},
		{
			name:  "wrr_locality child without supported entry",
			build: withPolicy(&wrrlocalityv3.WrrLocality{EndpointPickingPolicy: lbPolicy(t, &structpb.Struct{})}),
			want:  `cds "c1": load_balancing_policy: policies[0] "p": endpoint_picking_policy: no supported policy`,
		},
		{
			name:  "load_balancing_policy too deep",
			build: edsWith(func(m *clusterv3.Cluster) { m.LoadBalancingPolicy = nested }),
			want:  `cds "c1": load_balancing_policy: nested more than 16 levels deep`,
		},
		{
			name: "outlier detection percentage above 100",
			build: edsWith(func(m *clusterv3.Cluster) {
				m.OutlierDetection = &clusterv3.OutlierDetection{EnforcingFailurePercentage: wrapperspb.UInt32(101)}
			}),
			want: `cds "c1": outlier_detection.enforcing_failure_percentage is 101, must be at most 100`,
		},
		{
			name: "outlier detection negative duration",
			build: edsWith(func(m *clusterv3.Cluster) {
				m.OutlierDetection = &clusterv3.OutlierDetection{BaseEjectionTime: durationpb.New(-time.Second)}
			}),
			want: `cds "c1": outlier_detection.base_ejection_time: seconds -1 is not in [0, 315576000000]`,
		},
		{
			name: "outlier detection invalid duration",
			build: edsWith(func(m *clusterv3.Cluster) {
				m.OutlierDetection = &clusterv3.OutlierDetection{Interval: &durationpb.Duration{Seconds: 1, Nanos: -1}}
			}),
			want: `cds "c1": outlier_detection.interval: nanos -1 is not in [0, 999999999]`,
		},
		{
			name: "outlier detection interval 0",
			build: edsWith(func(m *clusterv3.Cluster) {
				m.OutlierDetection = &clusterv3.OutlierDetection{Interval: durationpb.New(0)}
			}),
			want: `cds "c1": outlier_detection.interval is 0, must be positive`,
		},
		{
			name: "outlier detection max_ejection_time beyond the largest Duration",
			build: edsWith(func(m *clusterv3.Cluster) {
				m.OutlierDetection = &clusterv3.OutlierDetection{MaxEjectionTime: &durationpb.Duration{Seconds: 315_576_000_001}}
			}),
			want: `cds "c1": outlier_detection.max_ejection_time: seconds 315576000001 is not in [0, 315576000000]`,
		},
		{
			name:  "lrs_server not self",
			build: edsWith(func(m *clusterv3.Cluster) { m.LrsServer = adsSource }),
			want:  `cds "c1": lrs_server must be self`,
		},
		{
			name: "transport_socket_matches",
			build: edsWith(func(m *clusterv3.Cluster) {
				m.TransportSocketMatches = []*clusterv3.Cluster_TransportSocketMatch{{Name: "x"}}
			}),
			want: `cds "c1": transport_socket_matches is not supported`,
		},
	})

	// A new-style name is reported even though the cluster is invalid.
	runErrorCases(t, ClusterType, "xdstp://auth/envoy.config.cluster.v3.Cluster/c1", []errorCase{{
		name: "xdstp name without service_name",
		build: edsWith(func(m *clusterv3.Cluster) {
			m.Name = "xdstp://auth/envoy.config.cluster.v3.Cluster/c1"
			m.EdsClusterConfig.ServiceName = ""
		}),
		want: `cds "xdstp://auth/envoy.config.cluster.v3.Cluster/c1": EDS cluster with xdstp:// name needs eds_cluster_config.service_name`,
	}})
}
