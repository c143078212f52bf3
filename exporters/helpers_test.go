package exporters_test

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"go.opentelemetry.io/otel/metric"
	"go.uber.org/goleak"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/xdslens/xdslens/internal/testing/testmain"
	"github.com/xdslens/xdslens/internal/testing/xdstest"
	"github.com/xdslens/xdslens/internal/xdswatch/demo/controlplane"
	"github.com/xdslens/xdslens/telemetry"
	"github.com/xdslens/xdslens/xdsclient"
	"github.com/xdslens/xdslens/xdsclient/bootstrap"
	"github.com/xdslens/xdslens/xdsclient/xdsresource"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m, goleak.Cleanup(testmain.Exit)) }

const (
	testTarget  = "exporters-test"
	testTimeout = 10 * time.Second
)

var cdsURL = xdsresource.ClusterType.TypeURL()

// A78Names are the five gRFC A78 instruments.
var a78Names = []string{
	telemetry.MetricConnected, telemetry.MetricServerFailure, telemetry.MetricResourceUpdatesValid,
	telemetry.MetricResourceUpdatesInvalid, telemetry.MetricResources,
}

func testContext(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	t.Cleanup(cancel)
	return ctx
}

// scenario runs a client observed by telemetry through mp until each of
// the five A78 instruments has a value: a stream fails before any
// response (server_failure 1), the next one delivers valid c1 and invalid
// c2 (valid 1, invalid 1, resources acked 1 and nacked 1, connected 1).
// It returns the scripted server's address. The client and the metrics
// are closed when the test ends.
func scenario(t *testing.T, mp metric.MeterProvider) string {
	t.Helper()
	ctx := testContext(t)
	srv := xdstest.NewADSServer(t)
	cfg, err := bootstrap.Parse([]byte(fmt.Sprintf(`{
		"xds_servers": [{"server_uri": %q, "channel_creds": [{"type": "insecure"}]}],
		"node": {"id": "exporters-test-node"}
	}`, srv.Addr())))
	if err != nil {
		t.Fatal(err)
	}
	c, err := xdsclient.New(cfg,
		xdsclient.WithTarget(testTarget),
		xdsclient.WithBackoff(func(int) time.Duration { return 10 * time.Millisecond }),
		xdsclient.WithLegacyDataErrorHandling(false),
		xdsclient.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	m, err := telemetry.New(c, telemetry.WithMeterProvider(mp))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	// Added after the telemetry hooks, so it runs after them.
	applied := make(chan struct{}, 1)
	// Resource timers that start on the second stream. Hooks of one
	// client run one at a time, in order, so streams needs no lock.
	timers := make(chan struct{}, 10)
	streams := 0
	t.Cleanup(c.AddHooks(&xdsclient.Hooks{
		ResponseReceived: func(xdsclient.ResponseInfo) { applied <- struct{}{} },
		StreamStarted:    func(xdsclient.StreamInfo) { streams++ },
		ResourceTimerStarted: func(xdsclient.ResourceTimerInfo) {
			if streams == 2 {
				timers <- struct{}{}
			}
		},
	}))

	t.Cleanup(c.Watch(xdsresource.ClusterType, "c1", xdsclient.WatcherFuncs{}))
	t.Cleanup(c.Watch(xdsresource.ClusterType, "c2", xdsclient.WatcherFuncs{}))
	st, err := srv.NextStream(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.RecvType(ctx, cdsURL); err != nil {
		t.Fatal(err)
	}
	st.End(status.Error(codes.Unavailable, "scripted failure"))
	if st, err = srv.NextStream(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := st.RecvType(ctx, cdsURL); err != nil {
		t.Fatal(err)
	}
	// The fetches start once the client has sent the subscriptions on the
	// second stream (their timers start then).
	for range 2 {
		select {
		case <-timers:
		case <-ctx.Done():
			t.Fatal("the client never started its resource timers")
		}
	}
	invalid := &clusterv3.Cluster{Name: "c2", ClusterDiscoveryType: &clusterv3.Cluster_Type{Type: clusterv3.Cluster_STATIC}}
	if err := st.Send(xdstest.Response(cdsURL, "1", controlplane.Cluster("c1", "c1"), invalid)); err != nil {
		t.Fatal(err)
	}
	select {
	case <-applied:
	case <-ctx.Done():
		t.Fatal("the client never applied the response")
	}
	return srv.Addr()
}
