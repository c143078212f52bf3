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
