package xdsclient_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/protobuf/proto"

	"github.com/xdslens/xdslens/internal/testing/xdstest"
	"github.com/xdslens/xdslens/xdsclient"
	"github.com/xdslens/xdslens/xdsclient/xdsresource"
)

// BenchmarkCDSFullState measures one full-state CDS response of n clusters,
// every one changed, from the wire to every watcher (one watcher per
// cluster), against the floor of unmarshalling the same bytes.
func BenchmarkCDSFullState(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		responses := [2]*discoveryv3.DiscoveryResponse{xdstest.FullStateClusters(n, 0), xdstest.FullStateClusters(n, 1)}
		wire, _ := proto.Marshal(responses[0])

		b.Run(fmt.Sprintf("client/changed/n=%d", n), func(b *testing.B) {
			benchClient(b, n, responses, true)
		})
		b.Run(fmt.Sprintf("client/unchanged/n=%d", n), func(b *testing.B) {
			benchClient(b, n, responses, false)
		})
		b.Run(fmt.Sprintf("floor/unmarshal/n=%d", n), func(b *testing.B) {
			b.SetBytes(int64(len(wire)))
			b.ReportAllocs()
			for b.Loop() {
				resp := &discoveryv3.DiscoveryResponse{}
				if err := proto.Unmarshal(wire, resp); err != nil {
					b.Fatal(err)
				}
				for _, a := range resp.GetResources() {
					c := &clusterv3.Cluster{}
					if err := a.UnmarshalTo(c); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "resources/s")
		})
	}
}

// loadedClient returns a client watching clusters c0..c<n-1> (one watcher
// each, w) that has received first from srv.
func loadedClient(b *testing.B, n int, first *discoveryv3.DiscoveryResponse) (*xdsclient.Client, *xdstest.PushServer, *xdstest.Countdown) {
	srv := xdstest.NewPushServer(b)
	c, err := xdsclient.New(bootstrapFor(b, srv.Addr()), xdsclient.WithLegacyDataErrorHandling(false), xdsclient.WithResourceTimeout(time.Hour))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(c.Close)
	w := xdstest.NewCountdown(n)
	for i := 0; i < n; i++ {
		b.Cleanup(c.Watch(xdsresource.ClusterType, fmt.Sprintf("c%d", i), w))
	}
	srv.Push <- first
	w.Wait()
	return c, srv, w
}

func benchClient(b *testing.B, n int, responses [2]*discoveryv3.DiscoveryResponse, changed bool) {
	_, srv, w := loadedClient(b, n, responses[0])
	wire, _ := proto.Marshal(responses[0])
	b.SetBytes(int64(len(wire)))
	b.ReportAllocs()
	srv.RunUpdates(b, w, responses, changed)
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "resources/s")
}

// BenchmarkDumpLockHold measures how long Dump holds the client's lock at
// once, on a cache of n resources: the longest an update (or any other
// user of the client) can wait behind a CSDS dump, whatever the cache
// size. hold-max-µs is the longest holding over every dump of the run,
// hold-p99-µs the 99th percentile.
func BenchmarkDumpLockHold(b *testing.B) {
	for _, n := range []int{10_000, 100_000} {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			c, _, _ := loadedClient(b, n, xdstest.FullStateClusters(n, 0))
			var holds []time.Duration
			b.ReportAllocs()
			for b.Loop() {
				out, h := xdsclient.DumpHolds(c)
				if len(out) != n {
					b.Fatalf("dump of %d entries, want %d", len(out), n)
				}
				holds = append(holds, h...)
			}
			slices.Sort(holds)
			b.ReportMetric(float64(holds[len(holds)*99/100].Microseconds()), "hold-p99-µs")
			b.ReportMetric(float64(holds[len(holds)-1].Microseconds()), "hold-max-µs")
		})
	}
}

// BenchmarkWatchCancel measures a watch of a cached resource, from Watch
// to its first callback, then its cancel (which finds that callback
// over); and a Get and a release of a pool's client that another user
// holds, with an observer. Both ask whether they are called from inside a
// callback.
func BenchmarkWatchCancel(b *testing.B) {
	b.Run("watch-cancel", func(b *testing.B) {
		c, _, _ := loadedClient(b, 1, xdstest.FullStateClusters(1, 0))
		w := xdstest.NewCountdown(1)
		b.ReportAllocs()
		for b.Loop() {
			cancel := c.Watch(xdsresource.ClusterType, "c0", w)
			w.Wait()
			cancel()
			w.Reset()
		}
	})
	b.Run("pool-get-release", func(b *testing.B) {
		pool := xdsclient.NewPool(bootstrapFor(b, "127.0.0.1:1"))
		defer pool.Observe(func(*xdsclient.Client) {}, func(*xdsclient.Client) {})()
		_, hold, err := pool.Get("t")
		if err != nil {
			b.Fatal(err)
		}
		defer hold()
		b.ReportAllocs()
		for b.Loop() {
			_, release, err := pool.Get("t")
			if err != nil {
				b.Fatal(err)
			}
			release()
		}
	})
}

// BenchmarkWatch measures a fresh client registering n watches, one per
// cluster, as a caller does at start: the client's own work (entries,
// subscriptions, watchers' records), with the server's answers left out
// (it never answers).
func BenchmarkWatch(b *testing.B) {
	const n = 10_000
	srv := xdstest.NewPushServer(b)
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("c%d", i)
	}
	var sink xdsclient.TypedWatcher[*xdsresource.Cluster] = clusterSink{xdstest.NewCountdown(0)}
	cancels := make([]func(), n)
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		c, err := xdsclient.New(bootstrapFor(b, srv.Addr()), xdsclient.WithResourceTimeout(time.Hour))
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		for i, name := range names {
			cancels[i] = xdsclient.WatchCluster(c, name, sink)
		}
		b.StopTimer()
		c.Close()
		b.StartTimer()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/watch")
}

// clusterSink is a TypedWatcher of clusters that hands every callback to
// a Watcher.
type clusterSink struct{ w xdsclient.Watcher }

func (s clusterSink) ResourceChanged(*xdsresource.Cluster, error) { s.w.ResourceChanged(nil, nil) }
func (s clusterSink) AmbientError(err error)                      { s.w.AmbientError(err) }
