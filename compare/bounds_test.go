package compare_test

import (
	"context"
	"testing"
	"time"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/xdslens/xdslens/internal/testing/rpctest"
	"github.com/xdslens/xdslens/internal/testing/xdstest"
	"github.com/xdslens/xdslens/internal/xdswatch/demo/backends"
	"github.com/xdslens/xdslens/internal/xdswatch/demo/controlplane"
)

// TestSideBySideRetryBackoffOfDecades: a retry_policy on unavailable
// whose base_interval is 31 years and whose max_interval is unset, so
// ten times the base, which passes the largest duration Go can hold. A
// deliberate difference, asserted: xdslens saturates the product, as
// gRPC C-core's durations saturate, so the RPC waits in its backoff until
// its deadline; grpc-go wraps it to a negative max_interval and retries
// at once, all five attempts within moments.
func TestSideBySideRetryBackoffOfDecades(t *testing.T) {
	action := controlplane.WithRetry(rpctest.ToCluster("c"), "unavailable", 4, time.Millisecond, time.Millisecond)
	action.RetryPolicy.RetryBackOff = &routev3.RetryPolicy_RetryBackOff{BaseInterval: &durationpb.Duration{Seconds: 1_000_000_000}}
	retryUnderDeadline(t, action, map[string]codes.Code{"xdslens": codes.DeadlineExceeded, "grpc-go": codes.Unavailable})
}

// TestSideBySideRetryBackoffPastDeadline: a retry_policy on unavailable
// whose backoff, drawn at random below a base_interval of 28 hours, ends
// after the RPC's deadline (but for a chance of 2 in a million): on both
// channels the RPC ends with DEADLINE_EXCEEDED at its deadline, not with
// the status of the attempt before the backoff.
func TestSideBySideRetryBackoffPastDeadline(t *testing.T) {
	const base = 100_000 * time.Second
	action := controlplane.WithRetry(rpctest.ToCluster("c"), "unavailable", 4, base, base)
	retryUnderDeadline(t, action, map[string]codes.Code{"xdslens": codes.DeadlineExceeded, "grpc-go": codes.DeadlineExceeded})
}

// retryUnderDeadline routes every RPC with action to a backend that fails
// them all UNAVAILABLE, makes one RPC of a 500ms deadline on each channel,
// and checks the code it ends with: DEADLINE_EXCEEDED must come at the
// deadline, the backoff having waited.
func retryUnderDeadline(t *testing.T, action *routev3.RouteAction, want map[string]codes.Code) {
	t.Helper()
	s := newSideBySide(t, 1)
	e := s.e
	e.Set(controlplane.Listener("svc", "svc-route"),
		rpctest.RouteConfig("svc-route", rpctest.Route(rpctest.PrefixMatch("/"), action)),
		controlplane.Cluster("c", ""), controlplane.Endpoints("c", e.Addr(0)))
	s.ready(t)
	e.Backends[0].Fail(backends.Failure{Every: 1})
	const deadline = 500 * time.Millisecond
	for name, conn := range s.channels() {
		ctx, cancel := context.WithTimeout(context.Background(), deadline)
		code, took := call(ctx, conn)
		cancel()
		switch {
		case code != want[name]:
			t.Errorf("%s: %v after %v, want %v", name, code, took, want[name])
		case code == codes.DeadlineExceeded && took < deadline-100*time.Millisecond:
			t.Errorf("%s: %v after %v, want it at the deadline (%v): the backoff did not wait", name, code, took, deadline)
		}
	}
}

// TestSideBySideWeightedClusterWithoutWeight: a route's weighted clusters
// move from c1 alone to c1 without a weight beside c2 of weight 1. A
// deliberate difference, asserted: xdslens rejects the
// RouteConfiguration, as gRPC C-core does, and so keeps sending to c1
// (gRFC A88 keeps the last good resource); grpc-go reads the missing
// weight as 0, leaves c1 out and sends everything to c2.
func TestSideBySideWeightedClusterWithoutWeight(t *testing.T) {
	s := newSideBySide(t, 2)
	e := s.e
	s.clusterOf = map[string]string{e.Addr(0): "c1", e.Addr(1): "c2"}
	clusters := []proto.Message{controlplane.Cluster("c1", ""), controlplane.Endpoints("c1", e.Addr(0)),
		controlplane.Cluster("c2", ""), controlplane.Endpoints("c2", e.Addr(1))}
	weighted := func(cs ...*routev3.WeightedCluster_ClusterWeight) []proto.Message {
		action := &routev3.RouteAction{ClusterSpecifier: &routev3.RouteAction_WeightedClusters{
			WeightedClusters: &routev3.WeightedCluster{Clusters: cs}}}
		return append([]proto.Message{controlplane.Listener("svc", "svc-route"),
			rpctest.RouteConfig("svc-route", rpctest.Route(rpctest.PrefixMatch("/"), action))}, clusters...)
	}
	e.Set(weighted(&routev3.WeightedCluster_ClusterWeight{Name: "c1", Weight: wrapperspb.UInt32(1)})...)
	s.eventually(t, "c1", "/pkg.Svc/M")
	e.Set(weighted(&routev3.WeightedCluster_ClusterWeight{Name: "c1"},
		&routev3.WeightedCluster_ClusterWeight{Name: "c2", Weight: wrapperspb.UInt32(1)})...)
	waitNACKed(t, e, routeTypeURL, "svc-route")
	ctx := xdstest.Context(t)
	if !rpctest.Poll(ctx, func(ctx context.Context) bool { return s.where(rpctest.Call(ctx, s.theirs, "/pkg.Svc/M")) == "c2" }) {
		t.Fatal("grpc-go never sent to c2 (if it now rejects the route too, this difference is gone)")
	}
	for range 10 {
		if got := s.where(rpctest.Call(ctx, s.ours, "/pkg.Svc/M")); got != "c1" {
			t.Fatalf("xdslens reached %s after rejecting the route, want c1, the last good route's", got)
		}
	}
}
