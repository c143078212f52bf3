package dataplane_test

import (
	"context"
	"sync/atomic"
	"testing"

	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/xdslens/xdslens/internal/testing/metrictest"
	"github.com/xdslens/xdslens/internal/testing/rpctest"
	"github.com/xdslens/xdslens/internal/testing/xdstest"
	"github.com/xdslens/xdslens/internal/xdswatch/demo/controlplane"
	"github.com/xdslens/xdslens/telemetry/dataplane"
	"github.com/xdslens/xdslens/xdsgrpc"
)

// countingProvider is an SDK MeterProvider that counts the callbacks
// registered on its meters and not unregistered yet.
type countingProvider struct {
	*sdkmetric.MeterProvider
	live atomic.Int64
}

func (p *countingProvider) Meter(name string, opts ...metric.MeterOption) metric.Meter {
	return countingMeter{Meter: p.MeterProvider.Meter(name, opts...), live: &p.live}
}

type countingMeter struct {
	metric.Meter
	live *atomic.Int64
}

func (m countingMeter) RegisterCallback(f metric.Callback, insts ...metric.Observable) (metric.Registration, error) {
	reg, err := m.Meter.RegisterCallback(f, insts...)
	if err != nil {
		return nil, err
	}
	m.live.Add(1)
	return countingRegistration{Registration: reg, live: m.live}, nil
}

type countingRegistration struct {
	metric.Registration
	live *atomic.Int64
}

func (r countingRegistration) Unregister() error {
	r.live.Add(-1)
	return r.Registration.Unregister()
}

// TestGaugesFollowChannels dials and closes channels through DialOptions
// with WithMeterProvider, as a program does that makes a channel now and
// then: the circuit-breaker gauges are observed while a channel of the
// options lives, and the MeterProvider keeps no callback of them once
// their channels are closed.
func TestGaugesFollowChannels(t *testing.T) {
	ctx := xdstest.Context(t)
	e := rpctest.NewEnv(t, 1)
	e.Set(controlplane.Listener("svc", "svc-route"), controlplane.RouteConfig("svc-route", []string{"*"}, "c"),
		controlplane.Cluster("c", ""), controlplane.Endpoints("c", e.Addr(0)))
	reader := sdkmetric.NewManualReader()
	mp := &countingProvider{MeterProvider: sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))}
	defer mp.Shutdown(context.Background())

	gauge := metrictest.Lbl(dataplane.KeyTarget, "xdslens:///svc", dataplane.KeyLeafCluster, "c", dataplane.KeyEDSService, "")
	for round := range 3 {
		// Hooks run on a queue of the channel's own, in the order they
		// were added: these, added after the metrics', say when the
		// metrics' have run.
		started, closed := make(chan struct{}), make(chan struct{})
		opts := xdsgrpc.DialOptions(e.Pool, dataplane.WithMeterProvider(mp),
			xdsgrpc.WithObserver(func(b *xdsgrpc.Builder) {
				b.AddHooks(&xdsgrpc.Hooks{
					ChannelStarted: func(xdsgrpc.ChannelInfo) { close(started) },
					ChannelClosed:  func(xdsgrpc.ChannelInfo) { close(closed) },
				})
			}))
		if n := mp.live.Load(); n != 0 {
			t.Fatalf("round %d: %d callbacks registered before any channel, want 0", round, n)
		}
		conn, err := grpc.NewClient("xdslens:///svc", append(opts, grpc.WithTransportCredentials(insecure.NewCredentials()))...)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{}, grpc.WaitForReady(true)); err != nil {
			t.Fatal(err)
		}
		select {
		case <-started:
		case <-ctx.Done():
			t.Fatal("the channel's start was not reported")
		}
		if n := mp.live.Load(); n != 1 {
			t.Errorf("round %d: %d callbacks registered with a channel open, want 1", round, n)
		}
		if got := metrictest.Series(metrictest.Collect(t, reader), dataplane.MetricMaxRequests); got[gauge] != 1024 {
			t.Errorf("round %d: %s = %s, want %s at 1024 (the default)", round, dataplane.MetricMaxRequests, metrictest.Show(got), gauge)
		}
		conn.Close()
		select {
		case <-closed:
		case <-ctx.Done():
			t.Fatal("the channel's resolver did not close")
		}
		if n := mp.live.Load(); n != 0 {
			t.Errorf("round %d: %d callbacks registered once the channel closed, want 0", round, n)
		}
	}
}
