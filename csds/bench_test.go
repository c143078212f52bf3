package csds_test

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	statusv3 "github.com/envoyproxy/go-control-plane/envoy/service/status/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/xdslens/xdslens/csds"
	"github.com/xdslens/xdslens/internal/testing/xdstest"
	"github.com/xdslens/xdslens/internal/xdswatch/demo/controlplane"
	"github.com/xdslens/xdslens/xdsclient"
	"github.com/xdslens/xdslens/xdsclient/xdsresource"
)

var edsURL = xdsresource.EndpointsType.TypeURL()

// edsResponse is an EDS response of the resources e<from>..e<to-1>; variant
// changes their bytes.
func edsResponse(from, to, variant int) *discoveryv3.DiscoveryResponse {
	resp := &discoveryv3.DiscoveryResponse{TypeUrl: edsURL, VersionInfo: fmt.Sprint(variant), Nonce: fmt.Sprint(variant)}
	for i := from; i < to; i++ {
		a, err := anypb.New(controlplane.Endpoints(fmt.Sprintf("e%d", i), fmt.Sprintf("127.0.0.1:%d", 1000+variant%2)))
		if err != nil {
			panic(err)
		}
		resp.Resources = append(resp.Resources, a)
	}
	return resp
}

// benchEnv is a client holding n EDS resources from a push server, and a
// CSDS server over it.
type benchEnv struct {
	c       *xdsclient.Client
	csds    *csds.Server
	push    chan *discoveryv3.DiscoveryResponse
	applied chan struct{} // one per response applied (ResponseReceived)
	updates [2]*discoveryv3.DiscoveryResponse
}

// updateBatch is how many resources each background update changes.
const updateBatch = 1000

func newBenchEnv(b *testing.B, n int) *benchEnv {
	srv := xdstest.NewPushServer(b)
	e := &benchEnv{push: srv.Push, applied: make(chan struct{}, 1)}
	var err error
	e.c, err = xdsclient.New(bootstrapFor(b, srv.Addr()),
		xdsclient.WithTarget("bench"),
		xdsclient.WithResourceTimeout(time.Hour),
		xdsclient.WithLegacyDataErrorHandling(false),
		xdsclient.WithLogger(slog.New(slog.DiscardHandler)),
		xdsclient.WithHooks(&xdsclient.Hooks{ResponseReceived: func(xdsclient.ResponseInfo) {
			select {
			case e.applied <- struct{}{}:
			default:
			}
		}}))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(e.c.Close)
	e.csds = csds.NewServer(e.c)

	w := xdstest.NewCountdown(n)
	for i := 0; i < n; i++ {
		b.Cleanup(e.c.Watch(xdsresource.EndpointsType, fmt.Sprintf("e%d", i), w))
	}
	const chunk = 5000 // keeps each response under gRPC's 4 MiB limit
	for from := 0; from < n; from += chunk {
		e.push <- edsResponse(from, min(from+chunk, n), 0)
	}
	w.Wait()
	e.updates = [2]*discoveryv3.DiscoveryResponse{edsResponse(0, updateBatch, 1), edsResponse(0, updateBatch, 2)}
	return e
}

// update pushes one update and waits until the client has applied it,
// returning how long that took.
func (e *benchEnv) update(i int) time.Duration {
	start := time.Now()
	e.push <- e.updates[i%2]
	<-e.applied
	return time.Since(start)
}

// background runs a lock probe, and updates if asked, until the returned func is
// called, which reports what they measured. The probe adds and removes an
// empty Hooks every 200µs: both take the client's lock, so the time they
// take is how long a dump (or an update) makes another user of the lock
// wait.
func (e *benchEnv) background(withUpdates bool) (stop func(b *testing.B)) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	var updates, probes []time.Duration
	if withUpdates {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-done:
					return
				default:
				}
				updates = append(updates, e.update(i))
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(200 * time.Microsecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
			}
			start := time.Now()
			e.c.AddHooks(&xdsclient.Hooks{})()
			probes = append(probes, time.Since(start))
		}
	}()
	return func(b *testing.B) {
		close(done)
		wg.Wait()
		report(b, "update", updates)
		report(b, "lockwait", probes)
	}
}

// report adds the 99th percentile and the maximum of ds as metrics.
func report(b *testing.B, name string, ds []time.Duration) {
	if len(ds) == 0 {
		return
	}
	slices.Sort(ds)
	b.ReportMetric(float64(ds[len(ds)*99/100].Microseconds()), name+"-p99-µs")
	b.ReportMetric(float64(ds[len(ds)-1].Microseconds()), name+"-max-µs")
}

// BenchmarkDump measures a CSDS dump of a client holding n resources.
//
// quiet/*: nothing else runs, so time and allocations are the operation's
// own:
//   - dump: Client.Dump alone (its locked copy, then its sort).
//   - fetch: FetchClientStatus in-process (Dump, then the protos).
//   - fetch+marshal: the same plus the wire encoding gRPC does.
//   - fetch-exclude: with exclude_resource_contents, plus its encoding.
//
// probe/dump: dumps back to back while a probe takes the client's lock
// every 200µs; lockwait-max-µs approaches the length of Dump's locked
// section.
//
// busy/*: updates of 1000 resources each flow through the client while the
// operation repeats; update-p99/max-µs is the time to apply one update,
// lockwait-p99/max-µs how long the probe waits for the lock. busy/updates
// (no dump; one op is one update) is the baseline. Allocation figures of
// busy runs include the updates'.
func BenchmarkDump(b *testing.B) {
	for _, n := range []int{10_000, 100_000} {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			e := newBenchEnv(b, n)
			ctx := context.Background()
			req := &statusv3.ClientStatusRequest{}
			ex := &statusv3.ClientStatusRequest{ExcludeResourceContents: true}
			dump := func(b *testing.B) {
				if len(e.c.Dump()) != n {
					b.Fatal("short dump")
				}
			}
			fetch := func(b *testing.B) {
				if _, err := e.csds.FetchClientStatus(ctx, req); err != nil {
					b.Fatal(err)
				}
			}
			var size int
			fetchMarshal := func(r *statusv3.ClientStatusRequest) func(b *testing.B) {
				return func(b *testing.B) {
					resp, err := e.csds.FetchClientStatus(ctx, r)
					if err != nil {
						b.Fatal(err)
					}
					wire, err := proto.Marshal(resp)
					if err != nil {
						b.Fatal(err)
					}
					size = len(wire)
				}
			}
			run := func(name string, updates, probe bool, op func(*testing.B)) {
				b.Run(name, func(b *testing.B) {
					var stop func(*testing.B)
					if updates || probe {
						stop = e.background(updates)
					}
					size = 0
					b.ReportAllocs()
					for b.Loop() {
						op(b)
					}
					if stop != nil {
						stop(b)
					}
					if size > 0 {
						b.ReportMetric(float64(size)/(1<<20), "MiB/response")
					}
				})
			}
			run("quiet/dump", false, false, dump)
			run("quiet/fetch", false, false, fetch)
			run("quiet/fetch+marshal", false, false, fetchMarshal(req))
			run("quiet/fetch-exclude+marshal", false, false, fetchMarshal(ex))
			run("probe/dump", false, true, dump)
			b.Run("busy/updates", func(b *testing.B) {
				stop := e.background(false)
				var ds []time.Duration
				b.ReportAllocs()
				for b.Loop() {
					ds = append(ds, e.update(len(ds)))
				}
				stop(b)
				report(b, "update", ds)
			})
			run("busy/dump", true, true, dump)
			run("busy/fetch", true, true, fetch)
		})
	}
}
