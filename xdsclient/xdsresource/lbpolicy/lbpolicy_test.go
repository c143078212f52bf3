package lbpolicy_test

import (
	"reflect"
	"strings"
	"testing"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	cswrrv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/load_balancing_policies/client_side_weighted_round_robin/v3"
	pickfirstv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/load_balancing_policies/pick_first/v3"
	roundrobinv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/load_balancing_policies/round_robin/v3"
	wrrlocalityv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/load_balancing_policies/wrr_locality/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/xdslens/xdslens/internal/testing/testmain"
	"github.com/xdslens/xdslens/xdsclient/xdsresource/lbpolicy"
)

func TestMain(m *testing.M) { testmain.Run(m) }

// policy returns a load_balancing_policy listing msgs in order.
func policy(t *testing.T, msgs ...proto.Message) *clusterv3.LoadBalancingPolicy {
	t.Helper()
	p := &clusterv3.LoadBalancingPolicy{}
	for i, m := range msgs {
		a, err := anypb.New(m)
		if err != nil {
			t.Fatal(err)
		}
		p.Policies = append(p.Policies, &clusterv3.LoadBalancingPolicy_Policy{TypedExtensionConfig: &corev3.TypedExtensionConfig{
			Name: "p" + string(rune('0'+i)), TypedConfig: a,
		}})
	}
	return p
}

// TestFromCluster: the policy of lb_policy, or of load_balancing_policy
// when it is set, with gRPC's defaults filled in.
func TestFromCluster(t *testing.T) {
	for _, tc := range []struct {
		name string
		c    *clusterv3.Cluster
		want lbpolicy.Config
	}{
		{"no policy: round robin", &clusterv3.Cluster{}, lbpolicy.Config{LBPolicy: lbpolicy.RoundRobin}},
		{"ring hash by enum, default sizes", &clusterv3.Cluster{LbPolicy: clusterv3.Cluster_RING_HASH},
			lbpolicy.Config{LBPolicy: lbpolicy.RingHash, RingHash: &lbpolicy.RingHashConfig{MinRingSize: lbpolicy.DefaultRingHashMinSize, MaxRingSize: lbpolicy.DefaultRingHashMaxSize}}},
		{"least request by enum, default choice count", &clusterv3.Cluster{LbPolicy: clusterv3.Cluster_LEAST_REQUEST},
			lbpolicy.Config{LBPolicy: lbpolicy.LeastRequest, LeastRequestChoiceCount: lbpolicy.DefaultLeastRequestChoiceCount}},
		{"the policy list wins over the enum", &clusterv3.Cluster{LbPolicy: clusterv3.Cluster_RING_HASH,
			LoadBalancingPolicy: policy(t, &pickfirstv3.PickFirst{ShuffleAddressList: true})},
			lbpolicy.Config{LBPolicy: lbpolicy.PickFirst, PickFirstShuffle: true}},
		{"an unknown type is skipped", &clusterv3.Cluster{LoadBalancingPolicy: policy(t, &durationpb.Duration{}, &roundrobinv3.RoundRobin{})},
			lbpolicy.Config{LBPolicy: lbpolicy.RoundRobin}},
		{"wrr_locality with weighted_round_robin", &clusterv3.Cluster{LoadBalancingPolicy: policy(t, &wrrlocalityv3.WrrLocality{
			EndpointPickingPolicy: policy(t, &cswrrv3.ClientSideWeightedRoundRobin{WeightUpdatePeriod: durationpb.New(10 * time.Millisecond)}),
		})}, lbpolicy.Config{LBPolicy: lbpolicy.WRRLocality, LBChildPolicy: lbpolicy.WeightedRoundRobin, WeightedRoundRobin: &lbpolicy.WeightedRoundRobinConfig{
			OOBReportingPeriod: 0, BlackoutPeriod: 10 * time.Second, WeightExpirationPeriod: 3 * time.Minute,
			WeightUpdatePeriod: 100 * time.Millisecond, ErrorUtilizationPenalty: 1,
		}}},
	} {
		got, err := lbpolicy.FromCluster(tc.c)
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: FromCluster = %+v, %v; want %+v", tc.name, got, err, tc.want)
		}
	}
}

// TestFromClusterErrors: what gRPC rejects, named by its path in the
// Cluster.
func TestFromClusterErrors(t *testing.T) {
	deep := policy(t, &roundrobinv3.RoundRobin{})
	for range 16 {
		deep = policy(t, &wrrlocalityv3.WrrLocality{EndpointPickingPolicy: deep})
	}
	for _, tc := range []struct {
		name string
		c    *clusterv3.Cluster
		want string
	}{
		{"ring sizes reversed", &clusterv3.Cluster{LbPolicy: clusterv3.Cluster_RING_HASH, LbConfig: &clusterv3.Cluster_RingHashLbConfig_{RingHashLbConfig: &clusterv3.Cluster_RingHashLbConfig{
			MinimumRingSize: wrapperspb.UInt64(10), MaximumRingSize: wrapperspb.UInt64(5)}}},
			"ring_hash_lb_config: minimum_ring_size 10 is greater than maximum_ring_size 5"},
		{"a choice count of 1", &clusterv3.Cluster{LbPolicy: clusterv3.Cluster_LEAST_REQUEST, LbConfig: &clusterv3.Cluster_LeastRequestLbConfig_{LeastRequestLbConfig: &clusterv3.Cluster_LeastRequestLbConfig{
			ChoiceCount: wrapperspb.UInt32(1)}}},
			"least_request_lb_config: choice_count is 1, must be at least 2"},
		{"an enum gRPC lacks", &clusterv3.Cluster{LbPolicy: clusterv3.Cluster_RANDOM}, "unsupported lb_policy RANDOM"},
		{"no supported entry", &clusterv3.Cluster{LoadBalancingPolicy: policy(t, &durationpb.Duration{})}, "load_balancing_policy: no supported policy"},
		{"nested too deep", &clusterv3.Cluster{LoadBalancingPolicy: deep}, "load_balancing_policy: nested more than 16 levels deep"},
		{"a negative penalty", &clusterv3.Cluster{LoadBalancingPolicy: policy(t, &cswrrv3.ClientSideWeightedRoundRobin{ErrorUtilizationPenalty: wrapperspb.Float(-1)})},
			`load_balancing_policy: policies[0] "p0": error_utilization_penalty is -1, must not be negative`},
		{"a negative blackout period", &clusterv3.Cluster{LoadBalancingPolicy: policy(t, &cswrrv3.ClientSideWeightedRoundRobin{BlackoutPeriod: &durationpb.Duration{Seconds: -10}})},
			`load_balancing_policy: policies[0] "p0": blackout_period: seconds -10 is not in [0, 315576000000]`},
		{"a weight expiration period beyond a Duration", &clusterv3.Cluster{LoadBalancingPolicy: policy(t, &cswrrv3.ClientSideWeightedRoundRobin{WeightExpirationPeriod: &durationpb.Duration{Seconds: 1 << 50}})},
			`load_balancing_policy: policies[0] "p0": weight_expiration_period: seconds 1125899906842624 is not in [0, 315576000000]`},
		{"a weight update period with negative nanos", &clusterv3.Cluster{LoadBalancingPolicy: policy(t, &cswrrv3.ClientSideWeightedRoundRobin{WeightUpdatePeriod: &durationpb.Duration{Nanos: -1}})},
			`load_balancing_policy: policies[0] "p0": weight_update_period: nanos -1 is not in [0, 999999999]`},
	} {
		if _, err := lbpolicy.FromCluster(tc.c); err == nil || err.Error() != tc.want {
			t.Errorf("%s: error %v, want %q", tc.name, err, tc.want)
		}
	}
	if _, err := lbpolicy.FromCluster(&clusterv3.Cluster{LoadBalancingPolicy: policy(t, &wrrlocalityv3.WrrLocality{})}); err == nil ||
		!strings.Contains(err.Error(), "endpoint_picking_policy: no supported policy") {
		t.Errorf("wrr_locality without a child: %v", err)
	}
}
