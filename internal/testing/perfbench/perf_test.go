package perfbench

import (
	"strconv"
	"testing"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/protobuf/proto"

	"github.com/xdslens/xdslens/xdsclient"
)

// sizes are the numbers of clusters the benchmarks load.
var sizes = []int{1000, 10000}

// largeSize is the size at which only update-one runs, over both
// protocols, to show how its cost grows with what did not change.
const largeSize = 100000

// BenchmarkPerf runs the workload of the package doc for every size: the
// client over State of the World ("client") and over delta ("delta"), its
// raw-ADS floor for each operation, and the unmarshal floor.
func BenchmarkPerf(b *testing.B) {
	for _, n := range sizes {
		b.Run("n="+strconv.Itoa(n), func(b *testing.B) {
			b.Run("subscribe/client", func(b *testing.B) { benchSubscribeClient(b, n, sotw) })
			b.Run("subscribe/delta", func(b *testing.B) { benchSubscribeClient(b, n, delta) })
			b.Run("subscribe/delta-push", func(b *testing.B) { benchSubscribeClient(b, n, deltaPush) })
			b.Run("subscribe/raw-ads", func(b *testing.B) { benchSubscribeRaw(b, n) })
			b.Run("update-all/client", func(b *testing.B) { benchUpdateClient(b, n, false, sotw) })
			b.Run("update-all/delta", func(b *testing.B) { benchUpdateClient(b, n, false, delta) })
			b.Run("update-all/delta-push", func(b *testing.B) { benchUpdateClient(b, n, false, deltaPush) })
			b.Run("update-all/raw-ads", func(b *testing.B) { benchUpdateFloor(b, n, false, rawFloor) })
			b.Run("update-all/ack-only", func(b *testing.B) { benchUpdateFloor(b, n, false, ackOnlyFloor) })
			b.Run("update-one/client", func(b *testing.B) { benchUpdateClient(b, n, true, sotw) })
			b.Run("update-one/delta", func(b *testing.B) { benchUpdateClient(b, n, true, delta) })
			b.Run("update-one/delta-push", func(b *testing.B) { benchUpdateClient(b, n, true, deltaPush) })
			b.Run("update-one/raw-ads", func(b *testing.B) { benchUpdateFloor(b, n, true, rawFloor) })
			b.Run("update-one/ack-only", func(b *testing.B) { benchUpdateFloor(b, n, true, ackOnlyFloor) })
			b.Run("unmarshal", func(b *testing.B) { benchUnmarshal(b, n) })
			b.Run("retained-heap", func(b *testing.B) { benchRetained(b, n) })
		})
	}
	b.Run("n="+strconv.Itoa(largeSize), func(b *testing.B) {
		b.Run("update-one/client", func(b *testing.B) { benchUpdateClient(b, largeSize, true, sotw) })
		b.Run("update-one/delta", func(b *testing.B) { benchUpdateClient(b, largeSize, true, delta) })
		b.Run("update-one/delta-push", func(b *testing.B) { benchUpdateClient(b, largeSize, true, deltaPush) })
		b.Run("retained-heap", func(b *testing.B) { benchRetained(b, largeSize) })
	})
}

// reportRate reports resources/s: n resources handled per operation.
func reportRate(b *testing.B, n int) {
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "resources/s")
}

func benchSubscribeClient(b *testing.B, n int, kind serverKind) {
	e := envFor(b, n, kind)
	f := newFleet(n)
	b.ReportAllocs()
	var requests int64
	for b.Loop() {
		acked := e.expectACK("1")
		before := e.obs.requests.Load()
		f.expect(n)
		c := e.newClient(xdsclient.WithDeltaXDS(kind != sotw))
		f.watchAll(c)
		wait(b, f.reached, "cluster for every watcher")
		acked()
		b.StopTimer()
		c.Close()
		requests += e.obs.requests.Load() - before
		b.StartTimer()
	}
	b.ReportMetric(float64(requests)/float64(b.N), "requests/op")
	reportRate(b, n)
}

func benchSubscribeRaw(b *testing.B, n int) {
	e := newEnv(b, n)
	names := clusterNames(n)
	b.ReportAllocs()
	for b.Loop() {
		acked := e.obs.expectACK("1")
		r := e.dialRaw(names)
		if got := r.receive(b); got != n {
			b.Fatalf("response carries %d clusters, want %d", got, n)
		}
		wait(b, acked, "ACK")
		b.StopTimer()
		r.close()
		b.StartTimer()
	}
	reportRate(b, n)
}

// updater makes the snapshots of the update benchmarks: update-all moves
// every cluster to the other variant, update-one moves one cluster, a
// different one each time.
type updater struct {
	e       *env
	one     bool
	version int
	msgs    []proto.Message    // the configuration being served
	all     [2][]proto.Message // every cluster in each variant
	variant []int              // the variant of each cluster in msgs
	count   []int              // how many updates each cluster has had
}

func newUpdater(e *env, one bool) *updater {
	u := &updater{e: e, one: one, version: 1, all: [2][]proto.Message{clusters(e.n, 0), clusters(e.n, 1)},
		variant: make([]int, e.n), count: make([]int, e.n)}
	u.msgs = append([]proto.Message(nil), u.all[0]...)
	return u
}

// next serves the next snapshot and returns its version. Callers arm their
// waits first: the ACK of version u.version+1 and u.changed() callbacks.
func (u *updater) next() string {
	u.version++
	v := strconv.Itoa(u.version)
	if u.one {
		k := u.version % u.e.n
		u.variant[k] ^= 1
		u.count[k]++
		u.msgs[k] = u.all[u.variant[k]][k]
		if u.e.incremental() {
			u.e.set(v, u.msgs[k:k+1]) // the cluster that changed
			return v
		}
		u.e.set(v, u.msgs)
		return v
	}
	to := (u.version - 1) % 2 // version 1 is variant 0
	for i := range u.variant {
		u.variant[i] = to
		u.count[i]++
	}
	u.e.set(v, u.all[to])
	return v
}

// changed is how many clusters each snapshot changes.
func (u *updater) changed() int {
	if u.one {
		return 1
	}
	return u.e.n
}

func benchUpdateClient(b *testing.B, n int, one bool, kind serverKind) {
	e := envFor(b, n, kind)
	f := newFleet(n)
	c := e.newClient(xdsclient.WithDeltaXDS(kind != sotw))
	defer c.Close()
	acked := e.expectACK("1")
	f.expect(n)
	f.watchAll(c)
	wait(b, f.reached, "cluster for every watcher")
	acked()
	u := newUpdater(e, one)
	for i := range u.count {
		u.count[i] = 1
	}
	before := e.obs.requests.Load()
	b.ReportAllocs()
	for b.Loop() {
		acked := e.expectACK(strconv.Itoa(u.version + 1))
		f.expect(u.changed())
		u.next()
		wait(b, f.reached, "update for the watchers")
		acked()
	}
	b.ReportMetric(float64(e.obs.requests.Load()-before)/float64(b.N), "requests/op")
	reportRate(b, n)

	// One more update: callbacks run in order, so once it has arrived any
	// stray callback of the timed updates has run too.
	acked = e.expectACK(strconv.Itoa(u.version + 1))
	f.expect(u.changed())
	u.next()
	wait(b, f.reached, "update for the watchers")
	acked()
	f.check(b, u.count, u.variant)
}

// floor is a stream of one of the floors: receive reads a response and
// ACKs it, returning how many resources it carried.
type floor interface {
	receive(tb testing.TB) int
	close()
}

// The floors' streams, subscribed to names on e's server.
func rawFloor(e *env, names []string) floor     { return e.dialRaw(names) }
func ackOnlyFloor(e *env, names []string) floor { return e.dialAckOnly(names) }

// benchUpdateFloor measures the updates of benchUpdateClient on a floor's
// stream.
func benchUpdateFloor(b *testing.B, n int, one bool, dial func(*env, []string) floor) {
	e := newEnv(b, n)
	r := dial(e, clusterNames(n))
	defer r.close()
	r.receive(b)
	u := newUpdater(e, one)
	b.ReportAllocs()
	for b.Loop() {
		acked := e.obs.expectACK(strconv.Itoa(u.version + 1))
		u.next()
		if got := r.receive(b); got != n {
			b.Fatalf("response carries %d clusters, want %d", got, n)
		}
		wait(b, acked, "ACK")
	}
	reportRate(b, n)
}

func benchUnmarshal(b *testing.B, n int) {
	wire := wireResponse(b, clusters(n, 0))
	b.SetBytes(int64(len(wire)))
	b.ReportAllocs()
	for b.Loop() {
		resp := &discoveryv3.DiscoveryResponse{}
		if err := proto.Unmarshal(wire, resp); err != nil {
			b.Fatal(err)
		}
		for _, a := range resp.GetResources() {
			c := new(clusterv3.Cluster)
			if err := a.UnmarshalTo(c); err != nil {
				b.Fatal(err)
			}
		}
	}
	reportRate(b, n)
}
