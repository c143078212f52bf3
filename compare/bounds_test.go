package compare_test

import (
	"context"
	"testing"
	"time"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/xdslens/xdslens/internal/testing/rpctest"
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
	s := newSideBySide(t, 1)
	e := s.e
	action := controlplane.WithRetry(rpctest.ToCluster("c"), "unavailable", 4, time.Millisecond, time.Millisecond)
	action.RetryPolicy.RetryBackOff = &routev3.RetryPolicy_RetryBackOff{BaseInterval: &durationpb.Duration{Seconds: 1_000_000_000}}
	e.Set(controlplane.Listener("svc", "svc-route"),
		rpctest.RouteConfig("svc-route", rpctest.Route(rpctest.PrefixMatch("/"), action)),
		controlplane.Cluster("c", ""), controlplane.Endpoints("c", e.Addr(0)))
	s.ready(t)
	e.Backends[0].Fail(backends.Failure{Every: 1})
	const deadline = 500 * time.Millisecond
	for name, want := range map[string]codes.Code{"xdslens": codes.DeadlineExceeded, "grpc-go": codes.Unavailable} {
		conn := s.ours
		if name == "grpc-go" {
			conn = s.theirs
		}
		ctx, cancel := context.WithTimeout(context.Background(), deadline)
		code, took := call(ctx, conn)
		cancel()
		switch {
		case code != want:
			t.Errorf("%s: %v after %v, want %v (if this changed, so did the difference)", name, code, took, want)
		case want == codes.DeadlineExceeded && took < deadline-100*time.Millisecond:
			t.Errorf("%s: %v after %v, want it at the deadline (%v): the backoff did not wait", name, code, took, deadline)
		}
	}
}
