package clusterlb_test

import (
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"

	"github.com/xdslens/xdslens/internal/testing/xdstest"
	"github.com/xdslens/xdslens/xdsclient/xdsresource"
	"github.com/xdslens/xdslens/xdsgrpc/internal/callctx"
)

// Within a locality, RPCs go to the READY endpoints in turn; a lower
// priority is not connected to while the first one is READY.
func TestRoundRobinWithinLocality(t *testing.T) {
	ctx := xdstest.Context(t)
	bs := startBackends(t, "a", "b", "c")
	spare := startBackend(t, "spare")
	ch := dial(t, config("c1", edsCluster("c1",
		locality("z1", 0, 1, bs...),
		locality("z2", 1, 1, spare))))
	for _, b := range bs {
		ch.waitFor(t, ctx, b.name)
	}
	got := ch.counts(t, ctx, 30)
	for _, b := range bs {
		if got[b.name] != 10 {
			t.Errorf("%s answered %d of 30 RPCs, want 10 (all: %v)", b.name, got[b.name], got)
		}
	}
	if n := spare.accepted.Load(); n != 0 {
		t.Errorf("the priority 1 backend accepted %d connections while priority 0 was READY, want 0", n)
	}
}

// Localities share RPCs in proportion to their weights, among the
// localities that are READY; the schedule is deterministic, so the shares
// are exact within a pick or two.
func TestLocalityWeights(t *testing.T) {
	ctx := xdstest.Context(t)
	a, b := startBackend(t, "a"), startBackend(t, "b")
	hole := startBlackhole(t)
	// zc's only endpoint never answers: it is never READY.
	leaf := edsCluster("c1", locality("za", 0, 3, a), locality("zb", 0, 1, b), localityAt("zc", 0, 2, hole.addr()))
	ch := dial(t, config("c1", leaf))
	ch.waitFor(t, ctx, "a")
	ch.waitFor(t, ctx, "b")
	const n = 400
	got := ch.counts(t, ctx, n)
	if d := got["a"] - n*3/4; d < -3 || d > 3 {
		t.Errorf("locality of weight 3 answered %d of %d RPCs, want %d±3 (all: %v)", got["a"], n, n*3/4, got)
	}
	if got["a"]+got["b"] != n {
		t.Errorf("RPCs went elsewhere than the READY localities: %v", got)
	}
}

// When every endpoint of priority 0 fails, RPCs go to priority 1; when
// priority 0 is READY again, they go back to it. The priority 1
// connections are retained for a while, then closed.
func TestPriorityFailoverAndBack(t *testing.T) {
	ctx := xdstest.Context(t)
	p0 := startBackends(t, "p0a", "p0b")
	p1 := startBackend(t, "p1")
	cfg := config("c1", edsCluster("c1", locality("z0", 0, 1, p0...), locality("z1", 1, 1, p1)))
	cfg.Retention = 100 * time.Millisecond
	ch := dial(t, cfg)
	ch.waitFor(t, ctx, "p0a")
	for _, b := range p0 {
		b.stop()
	}
	ch.waitFor(t, ctx, "p1")
	if got := ch.counts(t, ctx, 10); got["p1"] != 10 {
		t.Errorf("with priority 0 down, RPCs went to %v, want all 10 to p1", got)
	}
	for _, b := range p0 {
		b.restart(t, ctx)
	}
	ch.waitFor(t, ctx, "p0a")
	ch.waitFor(t, ctx, "p0b")
	if got := ch.counts(t, ctx, 10); got["p0a"]+got["p0b"] != 10 {
		t.Errorf("with priority 0 back, RPCs went to %v, want all 10 to p0a and p0b", got)
	}
	xdstest.WaitFor(t, ctx, "priority 1's connection closed after the retention time", func() bool {
		return p1.open.Load() == 0
	})
}

// A priority that stays CONNECTING (its only backend accepts connections
// and never answers) is given up for the next one when the failover timer
// fires; until then RPCs wait, and the next priority is not connected to.
func TestFailoverTimer(t *testing.T) {
	ctx := xdstest.Context(t)
	hole := startBlackhole(t)
	p1 := startBackend(t, "p1")
	leaf := edsCluster("c1", localityAt("z0", 0, 1, hole.addr()), locality("z1", 1, 1, p1))

	t.Run("not yet", func(t *testing.T) {
		ch := dial(t, config("c1", leaf)) // 20s failover timeout
		short, cancel := contextWithTimeout(ctx, 300*time.Millisecond)
		defer cancel()
		_, err := ch.call(short)
		if c, msg := code(err); c != codes.DeadlineExceeded {
			t.Errorf("RPC while priority 0 connects: %v %q, want DeadlineExceeded (it waits)", c, msg)
		}
		if hole.accepted() == 0 {
			t.Error("priority 0's backend was never connected to")
		}
		if n := p1.accepted.Load(); n != 0 {
			t.Errorf("priority 1's backend accepted %d connections before the failover timer fired, want 0", n)
		}
	})
	t.Run("fired", func(t *testing.T) {
		cfg := config("c1", leaf)
		cfg.FailoverTimeout = 100 * time.Millisecond
		ch := dial(t, cfg)
		start := time.Now()
		if got := ch.mustCall(t, ctx); got != "p1" {
			t.Errorf("RPC answered by %q, want p1", got)
		}
		if d := time.Since(start); d < cfg.FailoverTimeout {
			t.Errorf("priority 1 used after %v, before the failover timeout %v", d, cfg.FailoverTimeout)
		}
	})
}

// An aggregate cluster's leaves are priorities in order: the second leaf
// is used while the first has no endpoint READY, and the first again when
// it recovers. The RPC's Call tells which leaf and locality took each RPC.
func TestAggregateLeaves(t *testing.T) {
	ctx := xdstest.Context(t)
	x, y := startBackend(t, "x"), startBackend(t, "y")
	c1 := edsCluster("c1", locality("z1", 0, 1, x))
	c2 := edsCluster("c2", locality("z2", 0, 1, y))
	ch := dial(t, config("agg", c1, c2))
	ch.waitFor(t, ctx, "x")
	x.stop()
	ch.waitFor(t, ctx, "y")
	var rec callctx.Call
	if _, err := ch.call(callctx.With(ctx, &rec), grpc.WaitForReady(true)); err != nil {
		t.Fatal(err)
	}
	if rec.Leaf != "c2" || rec.Locality.Zone != "z2" {
		t.Errorf("Call = %+v, want leaf c2 in zone z2", rec)
	}
	x.restart(t, ctx)
	ch.waitFor(t, ctx, "x")
	rec = callctx.Call{}
	if _, err := ch.call(callctx.With(ctx, &rec), grpc.WaitForReady(true)); err != nil {
		t.Fatal(err)
	}
	if rec.Leaf != "c1" || rec.Locality.Zone != "z1" {
		t.Errorf("Call = %+v, want leaf c1 in zone z1", rec)
	}

	t.Run("first leaf without endpoints", func(t *testing.T) {
		c1 := edsCluster("c1")
		c1.Endpoints = nil
		ch := dial(t, config("agg", c1, c2))
		if got := ch.mustCall(t, ctx); got != "y" {
			t.Errorf("RPC answered by %q, want y", got)
		}
	})
}

// A config update keeps the connections to the endpoints that remain,
// even when their priority is renumbered, and closes those that are gone.
func TestUpdateKeepsConnections(t *testing.T) {
	ctx := xdstest.Context(t)
	a, b, c, d := startBackend(t, "a"), startBackend(t, "b"), startBackend(t, "c"), startBackend(t, "d")
	ch := dial(t, config("c1", edsCluster("c1", locality("z1", 0, 1, a, b, c))))
	for _, be := range []*backend{a, b, c} {
		ch.waitFor(t, ctx, be.name)
	}

	// c goes, d comes in a new priority 0, z1 becomes priority 1.
	next := edsCluster("c1", locality("z0", 0, 1, d), locality("z1", 1, 2, a, b))
	next.ResolutionNote = "another note"
	ch.update(config("c1", next))
	ch.waitFor(t, ctx, "d")
	xdstest.WaitFor(t, ctx, "the connection to the removed endpoint closed", func() bool { return c.open.Load() == 0 })

	// z1 back at priority 0 alone.
	ch.update(config("c1", edsCluster("c1", locality("z1", 0, 1, a, b))))
	ch.waitFor(t, ctx, "a")
	ch.waitFor(t, ctx, "b")
	for _, be := range []*backend{a, b} {
		if n := be.accepted.Load(); n != 1 {
			t.Errorf("%s accepted %d connections over the updates, want 1 (kept)", be.name, n)
		}
	}
	xdstest.WaitFor(t, ctx, "the connection to d closed", func() bool { return d.open.Load() == 0 })
}

// A resolver error after a Config changes nothing for RPCs.
func TestResolverErrorKeepsConfig(t *testing.T) {
	ctx := xdstest.Context(t)
	a := startBackend(t, "a")
	ch := dial(t, config("c1", edsCluster("c1", locality("z1", 0, 1, a))))
	ch.mustCall(t, ctx)
	ch.r.CC().ReportError(errUnreachable)
	if _, err := ch.call(ctx); err != nil {
		t.Errorf("RPC after a resolver error: %v", err)
	}
}

// An endpoint with several addresses (an EDS endpoint's
// additional_addresses, or a LOGICAL_DNS name's addresses) is one
// pick_first: the first address that connects is used.
func TestEndpointWithSeveralAddresses(t *testing.T) {
	ctx := xdstest.Context(t)
	a := startBackend(t, "a")
	for _, kind := range []xdsresource.ClusterKind{xdsresource.ClusterEDS, xdsresource.ClusterLogicalDNS} {
		t.Run(kind.String(), func(t *testing.T) {
			leaf := edsCluster("c1", localityAt("z", 0, 1, xdstest.ClosedAddr(t)))
			leaf.Cluster.Kind = kind
			ep := &leaf.Endpoints.Localities[0].Endpoints[0]
			ep.Addresses = append(ep.Addresses, a.addr)
			if got := dial(t, config("c1", leaf)).mustCall(t, ctx); got != "a" {
				t.Errorf("RPC answered by %q, want a", got)
			}
		})
	}
}

// A channel that goes idle closes its Balancer, which closes its
// connections and leaves nothing running (goleak checks it when the tests
// end); the next RPC builds a new one.
func TestIdleAndBack(t *testing.T) {
	ctx := xdstest.Context(t)
	a := startBackend(t, "a")
	ch := dialWith(t, config("c1", edsCluster("c1", locality("z", 0, 1, a))), nil, grpc.WithIdleTimeout(50*time.Millisecond))
	ch.mustCall(t, ctx)
	for s := ch.cc.GetState(); s != connectivity.Idle; s = ch.cc.GetState() {
		if !ch.cc.WaitForStateChange(ctx, s) {
			t.Fatal("the channel never went idle")
		}
	}
	xdstest.WaitFor(t, ctx, "the connection closed", func() bool { return a.open.Load() == 0 })
	if got := ch.mustCall(t, ctx); got != "a" {
		t.Errorf("RPC after idle answered by %q", got)
	}
}
