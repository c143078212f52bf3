package telemetry

import (
	"context"
	"fmt"
	"testing"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/xdslens/xdslens/xdsclient"
	"github.com/xdslens/xdslens/xdsclient/xdsresource"
)

// BenchmarkCollect measures one collection of every instrument with n
// cache entries spread over the same label sets (4 types, 2 authorities,
// the 9 cache states). The entries are made by calling the hook funcs that
// New attaches to a client, with the events a client reports, since a real
// client would need a control plane serving 100k resources; the gauge
// callback reads the same counts either way. The cost must not grow with n.
func BenchmarkCollect(b *testing.B) {
	for _, n := range []int{1_000, 10_000, 100_000} {
		b.Run(fmt.Sprintf("resources=%d", n), func(b *testing.B) {
			reader := sdkmetric.NewManualReader()
			mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
			defer mp.Shutdown(context.Background())
			m, err := newMetrics(mp)
			if err != nil {
				b.Fatal(err)
			}
			defer m.Close()
			m.mu.Lock()
			cm := m.track("bench")
			m.mu.Unlock()
			fill(cm.hooks(), n)

			var rm metricdata.ResourceMetrics
			if err := reader.Collect(context.Background(), &rm); err != nil {
				b.Fatal(err)
			}
			if got := total(rm); got != int64(n) {
				b.Fatalf("resources gauge adds up to %d, want %d", got, n)
			}
			b.ReportAllocs()
			for b.Loop() {
				if err := reader.Collect(context.Background(), &rm); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// fill reports n entries through h as a client would: each is created in
// REQUESTED and moved to one of the nine label values.
func fill(h *xdsclient.Hooks, n int) {
	types := xdsresource.Builtin()
	finals := []struct {
		state  xdsclient.CacheState
		cached bool
	}{
		{xdsclient.StateRequested, false}, {xdsclient.StateDoesNotExist, false}, {xdsclient.StateDoesNotExist, true},
		{xdsclient.StateACKed, true}, {xdsclient.StateNACKed, false}, {xdsclient.StateNACKed, true},
		{xdsclient.StateReceivedError, false}, {xdsclient.StateReceivedError, true}, {xdsclient.StateTimeout, false},
	}
	h.ConnectedChanged(xdsclient.ConnectedInfo{Target: "bench", Server: "xds.example.com:443", Connected: true})
	h.AuthorityServerChanged(xdsclient.AuthorityServerInfo{Target: "bench", Authority: "#old", Server: "xds.example.com:443"})
	for i := range n {
		info := xdsclient.CacheStateInfo{
			Target: "bench", Authority: []string{"#old", "auth.example.com"}[i%2],
			TypeURL: types[i%len(types)].TypeURL(), Name: fmt.Sprintf("r%d", i), Server: "xds.example.com:443",
			New: xdsclient.StateRequested,
		}
		h.CacheStateChanged(info)
		f := finals[(i/2)%len(finals)]
		if f.state == xdsclient.StateRequested {
			continue
		}
		info.Old, info.New, info.NewCached = xdsclient.StateRequested, f.state, f.cached
		h.CacheStateChanged(info)
	}
}

func total(rm metricdata.ResourceMetrics) int64 {
	var sum int64
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name != MetricResources {
				continue
			}
			for _, p := range m.Data.(metricdata.Gauge[int64]).DataPoints {
				sum += p.Value
			}
		}
	}
	return sum
}

// BenchmarkHook measures the hooks that run on the update path, one call
// each: the per-resource ones (WatcherNotified on every callback,
// CacheStateChanged on every state change) and the per-response one.
func BenchmarkHook(b *testing.B) {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer mp.Shutdown(context.Background())
	m, err := newMetrics(mp)
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	m.mu.Lock()
	cm := m.track("bench")
	m.mu.Unlock()
	h := cm.hooks()
	cds := xdsresource.ClusterType.TypeURL()
	b.Run("WatcherNotified", func(b *testing.B) {
		info := xdsclient.NotificationInfo{Target: "bench", TypeURL: cds, Name: "c1", Kind: xdsclient.NotifyResource}
		b.ReportAllocs()
		for b.Loop() {
			h.WatcherNotified(info)
		}
	})
	b.Run("CacheStateChanged", func(b *testing.B) {
		info := xdsclient.CacheStateInfo{Target: "bench", Authority: "#old", TypeURL: cds, Name: "c1", Server: "xds.example.com:443",
			Old: xdsclient.StateACKed, OldCached: true, New: xdsclient.StateNACKed, NewCached: true}
		back := info
		back.Old, back.New = info.New, info.Old
		h.CacheStateChanged(xdsclient.CacheStateInfo{Target: "bench", Authority: "#old", TypeURL: cds, Name: "c1", New: xdsclient.StateACKed, NewCached: true})
		b.ReportAllocs()
		for b.Loop() {
			h.CacheStateChanged(info)
			h.CacheStateChanged(back)
		}
	})
	b.Run("ResponseReceived", func(b *testing.B) {
		info := xdsclient.ResponseInfo{Target: "bench", Server: "xds.example.com:443", TypeURL: cds, Valid: 1000}
		b.ReportAllocs()
		for b.Loop() {
			h.ResponseReceived(info)
		}
	})
}
