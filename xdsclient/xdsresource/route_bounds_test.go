package xdsresource

import (
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/xdslens/xdslens/xdsclient/xdsresource/routeconfig"
)

// TestRouteDurationsAtTheirLargest checks that the largest durations a
// control plane can send are taken as the largest time.Duration, never as
// a negative one: a max_stream_duration of 10,000 years is no deadline to
// speak of, and a retry base_interval of centuries, whose default
// max_interval is ten times it, backs off as long as a time.Duration can
// say, where a wrapped product would retry at once.
func TestRouteDurationsAtTheirLargest(t *testing.T) {
	largest := &durationpb.Duration{Seconds: 315_576_000_000, Nanos: 999_999_999}
	for _, tc := range []struct {
		name                   string
		base                   *durationpb.Duration
		wantBase, wantInterval time.Duration
	}{
		{"base of the largest Duration", largest, math.MaxInt64, math.MaxInt64},
		{"base whose tenfold wraps an int64", &durationpb.Duration{Seconds: 1_000_000_000}, 1_000_000_000 * time.Second, math.MaxInt64},
		{"base whose tenfold fits", durationpb.New(time.Hour), time.Hour, 10 * time.Hour},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := prefixRoute("/", "")
			r.Action = &routev3.Route_Route{Route: &routev3.RouteAction{
				ClusterSpecifier:  &routev3.RouteAction_Cluster{Cluster: "c1"},
				MaxStreamDuration: &routev3.RouteAction_MaxStreamDuration{GrpcTimeoutHeaderMax: largest},
				RetryPolicy: &routev3.RetryPolicy{RetryOn: "unavailable", RetryBackOff: &routev3.RetryPolicy_RetryBackOff{
					BaseInterval: tc.base,
				}},
			}}
			_, v, err := decode(t, RouteConfigType, routeConfig(r))
			if err != nil {
				t.Fatal(err)
			}
			got := v.(*routeconfig.Config).VirtualHosts[0].Routes[0]
			if got.MaxStreamDuration == nil || *got.MaxStreamDuration != math.MaxInt64 {
				t.Errorf("MaxStreamDuration = %v, want %v", got.MaxStreamDuration, time.Duration(math.MaxInt64))
			}
			rp := got.RetryPolicy
			if rp.BaseInterval != tc.wantBase || rp.MaxInterval != tc.wantInterval {
				t.Errorf("backoff %v to %v, want %v to %v", rp.BaseInterval, rp.MaxInterval, tc.wantBase, tc.wantInterval)
			}
		})
	}
}

// TestRetryOnIsASet checks that a retry_on naming the same conditions
// over and over keeps each once, as gRPC C-core's set of status codes
// does: what explain and the config history print stays five words long.
func TestRetryOnIsASet(t *testing.T) {
	on := strings.Repeat("unavailable,UNAVAILABLE, unavailable,", 20_000) + "cancelled,unknown-thing,cancelled"
	r := prefixRoute("/", "")
	r.Action = &routev3.Route_Route{Route: &routev3.RouteAction{
		ClusterSpecifier: &routev3.RouteAction_Cluster{Cluster: "c1"},
		RetryPolicy:      &routev3.RetryPolicy{RetryOn: on},
	}}
	_, v, err := decode(t, RouteConfigType, routeConfig(r))
	if err != nil {
		t.Fatal(err)
	}
	got := v.(*routeconfig.Config).VirtualHosts[0].Routes[0].RetryPolicy.RetryOn
	if want := []string{"unavailable", "cancelled"}; !slices.Equal(got, want) {
		t.Errorf("RetryOn has %d entries, want %v", len(got), want)
	}
}
