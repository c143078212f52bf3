package rpctest

import (
	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// WithLBPolicy sets c's load_balancing_policy to the given policies, in
// order (gRFC A52: the first one the client supports is used), and
// returns c.
func WithLBPolicy(c *clusterv3.Cluster, policies ...proto.Message) *clusterv3.Cluster {
	p := &clusterv3.LoadBalancingPolicy{}
	for _, m := range policies {
		a, err := anypb.New(m)
		if err != nil {
			panic(err)
		}
		p.Policies = append(p.Policies, &clusterv3.LoadBalancingPolicy_Policy{
			TypedExtensionConfig: &corev3.TypedExtensionConfig{Name: string(m.ProtoReflect().Descriptor().Name()), TypedConfig: a},
		})
	}
	c.LoadBalancingPolicy = p
	return c
}

// WithRingHash sets c's legacy lb_policy to RING_HASH with the given ring
// sizes, and returns c.
func WithRingHash(c *clusterv3.Cluster, minSize, maxSize uint64) *clusterv3.Cluster {
	c.LbPolicy = clusterv3.Cluster_RING_HASH
	c.LbConfig = &clusterv3.Cluster_RingHashLbConfig_{RingHashLbConfig: &clusterv3.Cluster_RingHashLbConfig{
		MinimumRingSize: wrapperspb.UInt64(minSize), MaximumRingSize: wrapperspb.UInt64(maxSize),
	}}
	return c
}

// WithLeastRequest sets c's legacy lb_policy to LEAST_REQUEST with
// choice_count n, and returns c.
func WithLeastRequest(c *clusterv3.Cluster, n uint32) *clusterv3.Cluster {
	c.LbPolicy = clusterv3.Cluster_LEAST_REQUEST
	c.LbConfig = &clusterv3.Cluster_LeastRequestLbConfig_{LeastRequestLbConfig: &clusterv3.Cluster_LeastRequestLbConfig{
		ChoiceCount: wrapperspb.UInt32(n),
	}}
	return c
}

// HashHeader adds to the route action a hash policy on header name
// (gRFC A42), terminal or not, and returns a.
func HashHeader(a *routev3.RouteAction, name string, terminal bool) *routev3.RouteAction {
	a.HashPolicy = append(a.HashPolicy, &routev3.RouteAction_HashPolicy{
		PolicySpecifier: &routev3.RouteAction_HashPolicy_Header_{Header: &routev3.RouteAction_HashPolicy_Header{HeaderName: name}},
		Terminal:        terminal,
	})
	return a
}

// HashChannelID adds to the route action a hash policy on the channel's
// ID (filter_state "io.grpc.channel_id", gRFC A42), and returns a.
func HashChannelID(a *routev3.RouteAction) *routev3.RouteAction {
	a.HashPolicy = append(a.HashPolicy, &routev3.RouteAction_HashPolicy{
		PolicySpecifier: &routev3.RouteAction_HashPolicy_FilterState_{FilterState: &routev3.RouteAction_HashPolicy_FilterState{Key: "io.grpc.channel_id"}},
	})
	return a
}
