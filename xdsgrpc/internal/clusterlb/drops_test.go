package clusterlb_test

import (
	"context"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"

	"github.com/xdslens/xdslens/internal/testing/xdstest"
	"github.com/xdslens/xdslens/xdsclient/xdsconfig"
	"github.com/xdslens/xdslens/xdsclient/xdsresource"
	"github.com/xdslens/xdslens/xdsgrpc/internal/clusterlb"
)

// withDrops returns c with drop_overloads of the given categories and
// shares per million.
func withDrops(c *xdsconfig.ClusterConfig, drops ...xdsresource.DropOverload) *xdsconfig.ClusterConfig {
	c.Endpoints.Drops = drops
	return c
}

func dropOf(category string, perMillion uint32) xdsresource.DropOverload {
	return xdsresource.DropOverload{Category: category, Numerator: perMillion, Denominator: 1_000_000}
}

// outcomes records the pick hooks.
type outcomes struct {
	mu       sync.Mutex
	dropped  []clusterlb.DropInfo
	broken   []clusterlb.CircuitBreakerInfo
	started  []clusterlb.CallInfo
	finished []error
}

func (o *outcomes) hooks() *clusterlb.Hooks {
	return &clusterlb.Hooks{
		Dropped: func(i clusterlb.DropInfo) {
			o.mu.Lock()
			o.dropped = append(o.dropped, i)
			o.mu.Unlock()
		},
		CircuitBroken: func(i clusterlb.CircuitBreakerInfo) {
			o.mu.Lock()
			o.broken = append(o.broken, i)
			o.mu.Unlock()
		},
		CallStarted: func(i clusterlb.CallInfo) {
			o.mu.Lock()
			o.started = append(o.started, i)
			o.mu.Unlock()
		},
		CallFinished: func(_ clusterlb.CallInfo, err error) {
			o.mu.Lock()
			o.finished = append(o.finished, err)
			o.mu.Unlock()
			xdstest.Notify()
		},
	}
}

func (o *outcomes) counts() (dropped, broken, started, finished int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.dropped), len(o.broken), len(o.started), len(o.finished)
}

// tally makes n calls and counts the successes and the drops, which must
// fail UNAVAILABLE with a message naming the cluster and the category.
func tally(t *testing.T, ctx context.Context, ch *channel, n int, category string) (ok, dropped int) {
	t.Helper()
	want := `cluster "c1": dropped by drop_overloads category "` + category + `"`
	for range n {
		_, err := ch.call(ctx, grpc.WaitForReady(true))
		if err == nil {
			ok++
			continue
		}
		if c, msg := code(err); c != codes.Unavailable || msg != want {
			t.Fatalf("RPC failed with %v %q, want UNAVAILABLE %q", c, msg, want)
		}
		dropped++
	}
	return ok, dropped
}

// Drops are drawn at every pick, first; a dropped RPC fails UNAVAILABLE
// even when it would wait for a connection, and the Dropped hook reports
// it with its category.
func TestDrops(t *testing.T) {
	ctx := xdstest.Context(t)
	a := startBackend(t, "a")

	t.Run("all", func(t *testing.T) {
		o := &outcomes{}
		cfg := config("c1", withDrops(edsCluster("c1", locality("z", 0, 1, a)), dropOf("lb", 1_000_000)))
		cfg.Hooks = o.hooks()
		ch := dial(t, cfg)
		if ok, dropped := tally(t, ctx, ch, 20, "lb"); ok != 0 || dropped != 20 {
			t.Errorf("%d RPCs succeeded and %d were dropped, want 0 and 20", ok, dropped)
		}
		if d, _, s, _ := o.counts(); d != 20 || s != 0 || o.dropped[0] != (clusterlb.DropInfo{Cluster: "c1", Leaf: "c1", Category: "lb"}) {
			t.Errorf("hooks: %d drops (first %+v), %d calls started; want 20 drops of c1 in lb, none started", d, o.dropped, s)
		}
	})
	t.Run("half, injected", func(t *testing.T) {
		var seq atomic.Uint32
		cfg := config("c1", withDrops(edsCluster("c1", locality("z", 0, 1, a)), dropOf("lb", 500_000)))
		cfg.Rand = func(n uint32) uint32 { return seq.Add(1) % 2 * (n / 2) } // n/2, 0, n/2, 0, ...
		// Connected first, so that each RPC is picked once.
		ch := dial(t, config("c1", edsCluster("c1", locality("z", 0, 1, a))))
		ch.mustCall(t, ctx)
		ch.update(cfg)
		// The drops apply once the channel takes the config, which it does
		// on its own goroutine: until the first drop, RPCs may still go
		// through the picker before it, which draws nothing. The first
		// drop is the second draw, so the next RPC draws the first of a
		// pair again.
		for {
			if _, err := ch.call(ctx, grpc.WaitForReady(true)); err != nil {
				if c, _ := code(err); c != codes.Unavailable {
					t.Fatalf("RPC: %v", err)
				}
				break
			}
		}
		if ok, dropped := tally(t, ctx, ch, 100, "lb"); ok != 50 || dropped != 50 {
			t.Errorf("%d RPCs succeeded and %d were dropped, want 50 and 50", ok, dropped)
		}
	})
	t.Run("half, random", func(t *testing.T) {
		ch := dial(t, config("c1", withDrops(edsCluster("c1", locality("z", 0, 1, a)), dropOf("lb", 500_000))))
		// 1000 draws: the standard deviation is 15.8; ±80 is five of them.
		if ok, dropped := tally(t, ctx, ch, 1000, "lb"); dropped < 420 || dropped > 580 {
			t.Errorf("%d RPCs succeeded and %d were dropped, want 500±80 dropped", ok, dropped)
		}
	})
	t.Run("categories in order", func(t *testing.T) {
		cfg := config("c1", withDrops(edsCluster("c1", locality("z", 0, 1, a)), dropOf("first", 1_000_000), dropOf("second", 1_000_000)))
		if ok, dropped := tally(t, ctx, dial(t, cfg), 5, "first"); ok != 0 || dropped != 5 {
			t.Errorf("%d RPCs succeeded and %d were dropped, want 0 and 5", ok, dropped)
		}
	})
	t.Run("cluster without endpoints", func(t *testing.T) {
		// As in C-core, the drops of a leaf apply whatever its endpoints.
		cfg := config("c1", withDrops(edsCluster("c1"), dropOf("lb", 1_000_000)))
		if ok, dropped := tally(t, ctx, dial(t, cfg), 5, "lb"); ok != 0 || dropped != 5 {
			t.Errorf("%d RPCs succeeded and %d were dropped, want 0 and 5", ok, dropped)
		}
	})
}

// blockingCall starts a call that the backend holds until unblock, and
// waits until the backend has it.
func blockingCall(t *testing.T, ctx context.Context, ch *channel, b *backend) <-chan error {
	t.Helper()
	errc := make(chan error, 1)
	go func() {
		_, err := ch.call(withBlock(ctx), grpc.WaitForReady(true))
		errc <- err
	}()
	select {
	case <-b.entered:
	case <-ctx.Done():
		t.Fatal("the blocking call never reached the backend")
	}
	return errc
}

// With max_requests RPCs in flight, further RPCs fail UNAVAILABLE naming
// the cluster and the limit, whichever channel sends them, as long as the
// channels share Counters (gRFC A32); the counter goes down when RPCs end.
func TestCircuitBreaking(t *testing.T) {
	ctx := xdstest.Context(t)
	a := startBackend(t, "a")
	leaf := edsCluster("c1", locality("z", 0, 1, a))
	leaf.Cluster.MaxRequests = 1
	counters := clusterlb.NewCounters()
	o := &outcomes{}
	newCfg := func() *clusterlb.Config {
		cfg := config("c1", leaf)
		cfg.Counters, cfg.Hooks = counters, o.hooks()
		return cfg
	}
	ch1, ch2 := dial(t, newCfg()), dial(t, newCfg())
	ch1.mustCall(t, ctx)
	ch2.mustCall(t, ctx)
	xdstest.WaitFor(t, ctx, "the first RPCs finished", func() bool { _, _, _, f := o.counts(); return f == 2 })

	errc := blockingCall(t, ctx, ch1, a)
	if got := slices.Collect(counters.All()); len(got) != 1 || got[0] != (clusterlb.CounterInfo{Cluster: "c1", InFlight: 1, MaxRequests: 1}) {
		t.Errorf("Counters.All() = %+v, want c1 with 1 in flight of 1", got)
	}
	want := `cluster "c1": circuit breaking: max_requests 1 reached`
	for i, ch := range []*channel{ch1, ch2} {
		_, err := ch.call(ctx, grpc.WaitForReady(true))
		if c, msg := code(err); c != codes.Unavailable || msg != want {
			t.Errorf("channel %d: RPC with one in flight: %v %q, want UNAVAILABLE %q", i+1, c, msg, want)
		}
	}
	if _, b, _, _ := o.counts(); b != 2 || o.broken[0] != (clusterlb.CircuitBreakerInfo{Cluster: "c1", Leaf: "c1", MaxRequests: 1}) {
		t.Errorf("CircuitBroken hook: %+v, want 2 calls for c1 with max 1", o.broken)
	}

	// A channel with counters of its own is not limited by the others.
	own := config("c1", leaf)
	if got := dial(t, own).mustCall(t, ctx); got != "a" {
		t.Errorf("RPC on a channel with its own counters answered by %q", got)
	}

	a.unblock()
	if err := <-errc; err != nil {
		t.Fatalf("blocked RPC: %v", err)
	}
	ch2.mustCall(t, ctx)
	if got := slices.Collect(counters.All()); len(got) != 1 || got[0].InFlight != 0 {
		t.Errorf("Counters.All() after the RPCs = %+v, want 0 in flight", got)
	}

	t.Run("max_requests 0", func(t *testing.T) {
		leaf := edsCluster("c1", locality("z", 0, 1, a))
		leaf.Cluster.MaxRequests = 0
		_, err := dial(t, config("c1", leaf)).call(ctx, grpc.WaitForReady(true))
		if c, msg := code(err); c != codes.Unavailable || !strings.Contains(msg, "max_requests 0 reached") {
			t.Errorf("RPC: %v %q, want UNAVAILABLE: max_requests 0 reached", c, msg)
		}
	})
}

// Closing the channels gives the counters back.
func TestCountersReleased(t *testing.T) {
	ctx := xdstest.Context(t)
	a := startBackend(t, "a")
	counters := clusterlb.NewCounters()
	cfg := config("c1", edsCluster("c1", locality("z", 0, 1, a)))
	cfg.Counters = counters
	ch := dial(t, cfg)
	ch.mustCall(t, ctx)
	if n := len(slices.Collect(counters.All())); n != 1 {
		t.Fatalf("%d counters in use, want 1", n)
	}
	ch.cc.Close()
	if got := slices.Collect(counters.All()); len(got) != 0 {
		t.Errorf("counters after Close: %+v, want none", got)
	}
}
