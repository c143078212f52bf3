package xdsresource

import (
	"testing"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	leastrequestv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/load_balancing_policies/least_request/v3"
	ringhashv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/load_balancing_policies/ring_hash/v3"
	roundrobinv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/load_balancing_policies/round_robin/v3"
	wrrlocalityv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/load_balancing_policies/wrr_locality/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// TestClusterErrors: each Cluster below is rejected, with an error that
// names the field and the value.
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
