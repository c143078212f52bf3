package perfbench

import (
	"runtime"
	"slices"
	"sync"
	"testing"

	"github.com/xdslens/xdslens/xdsclient"
)

// A cluster of the workload is 85 bytes on the wire; the client keeps
// about 160 for it (heapTarget allows 170): its bytes (32), its cache entry
// with its first watcher's record (96), its slot in the name table (about
// 13) and the watch's cancel func (16).

// liveHeap returns the bytes of live heap objects after a full collection.
func liveHeap() int64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}

// measureRetained loads the n clusters of e into a fresh client, one
// watcher each whose cancel func is kept, and returns the heap the client retains once it holds them
// and the size of the response on the wire. The baseline is taken with the
// raw-ADS floor holding the same subscription, so that what the server keeps
// per stream, the watchers and the names cancel out. The client is closed,
// and its stream has ended on the server, when it returns.
func measureRetained(tb testing.TB, e *env) (retained, wire int64) {
	f := newFleet(e.n)
	e.obs.measure.Store(true)
	acked := e.obs.expectACK("1")
	r := e.dialRaw(f.names)
	r.receive(tb)
	wait(tb, acked, "ACK")
	wait(tb, e.obs.settled(), "ACK of the last response")
	e.obs.measure.Store(false)
	wire = e.obs.respSize.Load()
	base := liveHeap()
	r.close()
	wait(tb, e.obs.closed, "end of the raw stream")

	c := e.newClient()
	acked = e.obs.expectACK("1")
	f.expect(e.n)
	f.watchAll(c)
	wait(tb, f.reached, "cluster for every watcher")
	wait(tb, acked, "ACK")
	wait(tb, e.obs.settled(), "ACK of the last response")
	retained = liveHeap() - base
	runtime.KeepAlive(f)
	c.Close()
	wait(tb, e.obs.closed, "end of the client's stream")
	return retained, wire
}

// minRetained is the least of three measureRetained: a buffer that gRPC
// still holds at one of the two points measured can add about a megabyte to
// a single measurement.
func minRetained(tb testing.TB, e *env) (retained, wire int64) {
	for i := 0; i < 3; i++ {
		r, w := measureRetained(tb, e)
		if i == 0 || r < retained {
			retained, wire = r, w
		}
	}
	return retained, wire
}

// TestRetainedHeap loads 10,000 clusters into a client and checks the heap
// it retains against the size of the response on the wire.
func TestRetainedHeap(t *testing.T) {
	const n = 10000
	// Up to three measurements, as minRetained takes, stopping at the first
	// within the target: a passing run measures once.
	e := newEnv(t, n)
	var (
		retained, wire int64
		ratio          float64
	)
	for i := 0; i < 3 && (i == 0 || ratio > heapTarget); i++ {
		retained, wire = measureRetained(t, e)
		ratio = float64(retained) / float64(wire)
	}
	t.Logf("%d clusters: client retains %d bytes (%d per cluster), %.2f× the response's %d bytes on the wire",
		n, retained, retained/n, ratio, wire)
	if ratio > heapTarget {
		t.Errorf("client retains %.2f× the wire size, want at most %d×", ratio, heapTarget)
	}
}

// benchRetained reports the heap a client retains after loading n
// clusters (minRetained), as retained-B and as a multiple of the response's
// wire size (heap/wire). Its time is that of a whole measurement.
func benchRetained(b *testing.B, n int) {
	e := newEnv(b, n)
	var retained, wire int64
	for b.Loop() {
		retained, wire = minRetained(b, e)
	}
	b.ReportMetric(float64(retained), "retained-B")
	b.ReportMetric(float64(retained)/float64(wire), "heap/wire")
}

// TestSubscribeCoalesced registers 10,000 watches on a fresh client and
// checks that they reach the server as a handful of CDS requests, each
// naming every cluster subscribed so far, not as one request per watch.
func TestSubscribeCoalesced(t *testing.T) {
	const n = 10000
	e := newEnv(t, n)
	f := newFleet(n)
	var (
		mu    sync.Mutex
		names []int // names per CDS request, in the order sent
	)
	c := e.newClient(xdsclient.WithHooks(&xdsclient.Hooks{RequestSent: func(info xdsclient.RequestInfo) {
		if info.TypeURL == cdsURL {
			mu.Lock()
			names = append(names, info.Names)
			mu.Unlock()
		}
	}}))
	defer c.Close()
	acked := e.obs.expectACK("1")
	f.expect(n)
	f.watchAll(c)
	wait(t, f.reached, "cluster for every watcher")
	wait(t, acked, "ACK")

	requests := e.obs.requests.Load()
	mu.Lock()
	defer mu.Unlock()
	t.Logf("%d watches: the server received %d CDS requests; names per request sent: %v", n, requests, names)
	if requests > n/100 {
		t.Errorf("%d watches made %d CDS requests: subscriptions are not coalesced", n, requests)
	}
	if !slices.IsSorted(names) || len(names) == 0 || names[len(names)-1] != n {
		t.Errorf("names per request %v: want a non-decreasing sequence ending with %d", names, n)
	}
}
