package telemetry_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/xdslens/xdslens/internal/testing/h2test"
	"github.com/xdslens/xdslens/internal/testing/servertest"
	"github.com/xdslens/xdslens/internal/testing/xdstest"
	"github.com/xdslens/xdslens/internal/xdswatch/demo/backends"
	"github.com/xdslens/xdslens/internal/xdswatch/demo/serverres"
	"github.com/xdslens/xdslens/telemetry"
	"github.com/xdslens/xdslens/xdsserver"
)

const (
	emptyCall          = "/grpc.testing.TestService/EmptyCall"
	streamingInputCall = "/grpc.testing.TestService/StreamingInputCall"
)

// TestServerMetricsDrainForcedCloses counts the drained connections an
// xDS-enabled server closes with their RPCs, by reason: a client that
// opens a stream after the final GOAWAY (goaway_ignored), and a stream
// still open at the drain grace time (grace_time). The series of a chain
// are born at 0 with its first connection.
func TestServerMetricsDrainForcedCloses(t *testing.T) {
	for _, tc := range []struct {
		reason string
		grace  time.Duration
		// client drives the drained connection to its forced close.
		client func(c *h2test.Client)
	}{
		{reason: "goaway_ignored", grace: time.Minute, client: func(c *h2test.Client) {
			c.Want("the final GOAWAY", true, h2test.GoAwayWith(1))
			c.Call(3, emptyCall)
		}},
		{reason: "grace_time", grace: 50 * time.Millisecond, client: func(c *h2test.Client) {
			c.Open(3, streamingInputCall) // open past the drain grace time
		}},
	} {
		t.Run(tc.reason, func(t *testing.T) {
			ctx := xdstest.Context(t)
			d := newDrainedServer(t, tc.grace)
			a := func(reason string) string {
				return lbl(telemetry.KeyAddress, d.addr, telemetry.KeyFilterChain, "plain", telemetry.KeyReason, reason)
			}
			c := h2test.Dial(t, d.addr)
			c.Call(1, emptyCall)
			c.Want("stream 1 served", true, h2test.ServedOn(1))
			waitSeries(t, ctx, d.reader, telemetry.MetricServerDrainForcedCloses, map[string]float64{a("goaway_ignored"): 0, a("grace_time"): 0})

			d.set("r2") // the chain changes: the connection is drained
			c.Want("the first GOAWAY", true, h2test.GoAwayWith(1<<31-1))
			tc.client(c)
			c.Want("the connection closed", true, h2test.Closed)
			want := map[string]float64{a("goaway_ignored"): 0, a("grace_time"): 0}
			want[a(tc.reason)] = 1
			waitSeries(t, ctx, d.reader, telemetry.MetricServerDrainForcedCloses, want)
		})
	}
}

// drainedServer is an xDS-enabled server on one plaintext chain, and its
// metrics read by a manual reader.
type drainedServer struct {
	t      *testing.T
	env    *servertest.Env
	reader *sdkmetric.ManualReader
	addr   string
}

func newDrainedServer(t *testing.T, grace time.Duration) *drainedServer {
	env := servertest.NewEnv(t, servertest.Options{})
	srv, err := xdsserver.New(env.Pool(), xdsserver.WithDrainGraceTime(grace), xdsserver.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	backends.RegisterTestService(srv, "drained")
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { mp.Shutdown(context.Background()) })
	m, err := telemetry.NewServerMetrics(srv, telemetry.WithMeterProvider(mp))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	// notify runs after the metrics' hooks, added first: a wake-up finds
	// the count its event changed.
	notify := func(xdsserver.ConnInfo) { xdstest.Notify() }
	t.Cleanup(srv.AddHooks(&xdsserver.Hooks{
		ServingModeChanged: func(xdsserver.ServingModeChange) { xdstest.Notify() },
		ConnectionAccepted: notify,
		GoAwayIgnored:      notify,
		DrainGraceExpired:  notify,
	}))
	lis := servertest.Listen(t)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(lis) }()
	t.Cleanup(func() {
		srv.Stop()
		<-served
	})
	d := &drainedServer{t: t, env: env, reader: reader, addr: lis.Addr().String()}
	d.set("r1")
	waitSeries(t, xdstest.Context(t), reader, telemetry.MetricServerServing, map[string]float64{
		lbl(telemetry.KeyAddress, d.addr, telemetry.KeyListener, servertest.ListenerName(d.addr)): 1,
	})
	return d
}

// set serves the server's Listener, its one chain with the inline route
// configuration named routes.
func (d *drainedServer) set(routes string) {
	host, port := servertest.HostPort(d.t, d.addr)
	d.env.Set(serverres.Listener(servertest.ListenerName(d.addr), host, port, nil,
		serverres.Chain("plain", nil, serverres.InlineHCM(serverres.Routes(routes, serverres.Serve("/"))), nil)))
}
