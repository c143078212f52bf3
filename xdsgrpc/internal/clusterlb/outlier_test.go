package clusterlb_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/xdslens/xdslens/xdsclient/xdsresource/lbpolicy"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/xdslens/xdslens/internal/testing/xdstest"
	"github.com/xdslens/xdslens/xdsclient/xdsresource"
	"github.com/xdslens/xdslens/xdsgrpc/internal/clusterlb"
)

// ejections records the Ejection hook's calls.
type ejections struct {
	mu   sync.Mutex
	seen []clusterlb.EjectionInfo
}

func (e *ejections) hook(i clusterlb.EjectionInfo) {
	e.mu.Lock()
	e.seen = append(e.seen, i)
	e.mu.Unlock()
	xdstest.Notify()
}

// returned reports whether the endpoint of addr has been returned.
func (e *ejections) returned(addr string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, i := range e.seen {
		if !i.Ejected && i.Address == addr {
			return true
		}
	}
	return false
}

func (e *ejections) all() []clusterlb.EjectionInfo {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]clusterlb.EjectionInfo(nil), e.seen...)
}

// failurePercentage is an outlier_detection running the failure
// percentage algorithm every 50ms, with the given ejection times.
func failurePercentage(base, maxTime time.Duration) *clusterv3.OutlierDetection {
	return &clusterv3.OutlierDetection{
		Interval:                       durationpb.New(50 * time.Millisecond),
		BaseEjectionTime:               durationpb.New(base),
		MaxEjectionTime:                durationpb.New(maxTime),
		MaxEjectionPercent:             wrapperspb.UInt32(50),
		EnforcingSuccessRate:           wrapperspb.UInt32(0),
		EnforcingFailurePercentage:     wrapperspb.UInt32(100),
		FailurePercentageThreshold:     wrapperspb.UInt32(50),
		FailurePercentageMinimumHosts:  wrapperspb.UInt32(3),
		FailurePercentageRequestVolume: wrapperspb.UInt32(5),
	}
}

// callsFailing makes n calls that wait for a connection and counts those
// that failed.
func callsFailing(t *testing.T, ctx context.Context, ch *channel, n int) int {
	t.Helper()
	failed := 0
	for range n {
		if _, err := ch.call(ctx); err != nil {
			failed++
		}
	}
	return failed
}

// TestOutlierDetectionEjects has one of three backends fail every RPC:
// outlier detection (failure percentage) ejects it, RPCs stop failing,
// the hook names it and the algorithm, and it is returned after the
// ejection time.
func TestOutlierDetectionEjects(t *testing.T) {
	ctx := xdstest.Context(t)
	bs := startBackends(t, "a", "b", "bad")
	bs[2].failing.Store(true)
	leaf := withPolicy(edsCluster("c1", locality("z", 0, 1, bs...)), func(c *xdsresource.Cluster) {
		c.OutlierDetection = failurePercentage(300*time.Millisecond, time.Second)
	})
	var ej ejections
	cfg := config("c1", leaf)
	cfg.Hooks = &clusterlb.Hooks{Ejection: ej.hook}
	ch := dial(t, cfg)
	for len(ej.all()) == 0 {
		callsFailing(t, ctx, ch, 30)
		if ctx.Err() != nil {
			t.Fatal("the failing backend was never ejected")
		}
	}
	first := ej.all()[0]
	if first.Address != bs[2].addr || !first.Ejected || first.Algorithm != clusterlb.AlgorithmFailurePercentage || first.Failures == 0 || first.Multiplier != 1 {
		t.Errorf("first ejection %+v, want %s ejected by failure_percentage with its failures counted", first, bs[2].addr)
	}
	// The failures that count are those before the backend's return,
	// which its ejection time brings: under load, 60 RPCs can take
	// longer than that.
	failed := 0
	for range 60 {
		if _, err := ch.call(ctx); err != nil {
			if ej.returned(bs[2].addr) {
				break
			}
			failed++
		}
	}
	if failed != 0 {
		t.Errorf("%d of 60 RPCs failed with the failing backend ejected, want 0", failed)
	}
	// It comes back after its ejection time, and fails again.
	xdstest.WaitFor(t, ctx, "the return of the failing backend", func() bool { return ej.returned(bs[2].addr) })
	if callsFailing(t, ctx, ch, 30) == 0 {
		t.Error("no RPC failed once the failing backend returned")
	}
}

// TestOutlierDetectionDisabledReturns ejects a failing backend, then
// updates the cluster without outlier detection: the backend returns at
// once, and its failures show again.
func TestOutlierDetectionDisabledReturns(t *testing.T) {
	ctx := xdstest.Context(t)
	bs := startBackends(t, "a", "b", "bad")
	bs[2].failing.Store(true)
	leaf := withPolicy(edsCluster("c1", locality("z", 0, 1, bs...)), func(c *xdsresource.Cluster) {
		c.OutlierDetection = failurePercentage(time.Hour, time.Hour)
	})
	var ej ejections
	cfg := config("c1", leaf)
	cfg.Hooks = &clusterlb.Hooks{Ejection: ej.hook}
	ch := dial(t, cfg)
	for len(ej.all()) == 0 && ctx.Err() == nil {
		callsFailing(t, ctx, ch, 30)
	}
	if callsFailing(t, ctx, ch, 30) != 0 {
		t.Fatal("RPCs fail with the failing backend ejected")
	}
	plain := edsCluster("c1", locality("z", 0, 1, bs...))
	cfg2 := config("c1", plain)
	cfg2.Hooks = cfg.Hooks
	ch.update(cfg2)
	xdstest.WaitFor(t, ctx, "the return of the ejected backend", func() bool {
		all := ej.all()
		return !all[len(all)-1].Ejected
	})
	if callsFailing(t, ctx, ch, 30) == 0 {
		t.Error("no RPC failed once outlier detection was removed")
	}
}

// TestOutlierDetectionMaxEjectionPercent has two of three backends fail:
// with max_ejection_percent 30, only one is ejected: as in Envoy, an
// endpoint is ejected while the share already ejected is below it (0 of
// 3, then 1 of 3 is 33%).
func TestOutlierDetectionMaxEjectionPercent(t *testing.T) {
	ctx := xdstest.Context(t)
	bs := startBackends(t, "a", "bad1", "bad2")
	bs[1].failing.Store(true)
	bs[2].failing.Store(true)
	leaf := withPolicy(edsCluster("c1", locality("z", 0, 1, bs...)), func(c *xdsresource.Cluster) {
		c.OutlierDetection = failurePercentage(time.Hour, time.Hour)
		c.OutlierDetection.MaxEjectionPercent = wrapperspb.UInt32(30)
	})
	var ej ejections
	cfg := config("c1", leaf)
	cfg.Hooks = &clusterlb.Hooks{Ejection: ej.hook}
	ch := dial(t, cfg)
	for len(ej.all()) == 0 && ctx.Err() == nil {
		callsFailing(t, ctx, ch, 30)
	}
	// Several more intervals: still one ejected.
	for range 5 {
		callsFailing(t, ctx, ch, 30)
		// An interval passes, in which a second ejection must not happen:
		// the clock is all there is to wait on.
		time.Sleep(60 * time.Millisecond)
	}
	if n := len(ej.all()); n != 1 {
		t.Errorf("%d ejections %+v, want 1 (max_ejection_percent 30 of 3)", n, ej.all())
	}
}

// TestOutlierDetectionSuccessRate has one of five backends fail every
// RPC: the success rate algorithm (its defaults but a request volume of
// 10, every 300ms, which 50 RPCs reach under load too) finds it an
// outlier and ejects it.
func TestOutlierDetectionSuccessRate(t *testing.T) {
	ctx := xdstest.Context(t)
	bs := startBackends(t, "a", "b", "c", "d", "bad")
	bs[4].failing.Store(true)
	leaf := withPolicy(edsCluster("c1", locality("z", 0, 1, bs...)), func(c *xdsresource.Cluster) {
		c.OutlierDetection = &clusterv3.OutlierDetection{
			Interval:                 durationpb.New(300 * time.Millisecond),
			BaseEjectionTime:         durationpb.New(time.Hour),
			SuccessRateRequestVolume: wrapperspb.UInt32(10),
		}
	})
	var ej ejections
	cfg := config("c1", leaf)
	cfg.Hooks = &clusterlb.Hooks{Ejection: ej.hook}
	ch := dial(t, cfg)
	for len(ej.all()) == 0 {
		callsFailing(t, ctx, ch, 100)
		if ctx.Err() != nil {
			t.Fatal("the failing backend was never ejected")
		}
	}
	if got := ej.all()[0]; got.Address != bs[4].addr || got.Algorithm != clusterlb.AlgorithmSuccessRate || got.Threshold <= 0 {
		t.Errorf("ejection %+v, want %s by success_rate with its threshold", got, bs[4].addr)
	}
}

// TestOutlierDetectionUnderPolicies ejects a failing backend under every
// endpoint policy that picks among endpoints: the ejection reaches the
// policy through its health listener, and RPCs stop failing. (pick_first
// named by the Cluster does not watch health, and so, as in gRPC-Go and
// C-core, keeps its endpoint whatever outlier detection says.)
func TestOutlierDetectionUnderPolicies(t *testing.T) {
	for _, pol := range []struct {
		name string
		set  func(*xdsresource.Cluster)
	}{
		{"round_robin", func(c *xdsresource.Cluster) { c.LBPolicy = lbpolicy.RoundRobin }},
		{"least_request", func(c *xdsresource.Cluster) { c.LBPolicy, c.LeastRequestChoiceCount = lbpolicy.LeastRequest, 2 }},
		{"ring_hash", func(c *xdsresource.Cluster) { c.LBPolicy = lbpolicy.RingHash }},
		{"weighted_round_robin", func(c *xdsresource.Cluster) {
			c.LBPolicy, c.WeightedRoundRobin = lbpolicy.WeightedRoundRobin, &lbpolicy.WeightedRoundRobinConfig{
				BlackoutPeriod: time.Second, WeightExpirationPeriod: time.Minute, WeightUpdatePeriod: time.Second, ErrorUtilizationPenalty: 1}
		}},
	} {
		t.Run(pol.name, func(t *testing.T) {
			ctx := xdstest.Context(t)
			bs := startBackends(t, "bad", "a", "b")
			bs[0].failing.Store(true)
			leaf := withPolicy(edsCluster("c1", locality("z", 0, 1, bs...)), func(c *xdsresource.Cluster) {
				pol.set(c)
				c.OutlierDetection = failurePercentage(time.Hour, time.Hour)
			})
			var ej ejections
			cfg := config("c1", leaf)
			cfg.Hooks = &clusterlb.Hooks{Ejection: ej.hook}
			ch := dial(t, cfg)
			for len(ej.all()) == 0 {
				callsFailing(t, ctx, ch, 30)
				if ctx.Err() != nil {
					t.Fatal("the failing backend was never ejected")
				}
			}
			xdstest.WaitFor(t, ctx, "RPCs that stop failing", func() bool { return callsFailing(t, ctx, ch, 30) == 0 })
		})
	}
}

// TestOutlierDetectionEndReported ejects a failing backend, then ends its
// leaf's outlier detection without a config of the leaf to say so: the
// leaf leaves the config, or the Balancer closes. The hook hears the
// endpoint return, with no endpoint left ejected or under detection, so
// that gauges made from it do not keep the ejection.
func TestOutlierDetectionEndReported(t *testing.T) {
	for _, how := range []string{"leaf removed", "closed"} {
		t.Run(how, func(t *testing.T) {
			ctx := xdstest.Context(t)
			bs := startBackends(t, "a", "b", "bad", "other")
			bs[2].failing.Store(true)
			leaf := withPolicy(edsCluster("c1", locality("z", 0, 1, bs[:3]...)), func(c *xdsresource.Cluster) {
				c.OutlierDetection = failurePercentage(time.Hour, time.Hour)
			})
			var ej ejections
			cfg := config("c1", leaf)
			cfg.Hooks = &clusterlb.Hooks{Ejection: ej.hook}
			ch := dial(t, cfg)
			for len(ej.all()) == 0 && ctx.Err() == nil {
				callsFailing(t, ctx, ch, 30)
			}
			switch how {
			case "leaf removed":
				other := config("c2", edsCluster("c2", locality("z", 0, 1, bs[3])))
				other.Hooks = cfg.Hooks
				ch.update(other)
			case "closed":
				ch.cc.Close()
			}
			xdstest.WaitFor(t, ctx, "the return of the ejected backend", func() bool {
				all := ej.all()
				last := all[len(all)-1]
				return !last.Ejected && last.Address == bs[2].addr
			})
			all := ej.all()
			if last := all[len(all)-1]; last.Leaf != "c1" || last.EjectedEndpoints != 0 || last.Endpoints != 0 {
				t.Errorf("return %+v, want leaf c1 with 0 endpoints ejected of 0", last)
			}
		})
	}
}
