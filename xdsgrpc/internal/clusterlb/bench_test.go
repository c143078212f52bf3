package clusterlb_test

import (
	"context"
	"fmt"
	"testing"

	"google.golang.org/grpc/balancer"
	"google.golang.org/grpc/connectivity"

	"github.com/xdslens/xdslens/internal/testing/xdstest"
	"github.com/xdslens/xdslens/xdsclient/lrs"
	"github.com/xdslens/xdslens/xdsclient/xdsresource"
	"github.com/xdslens/xdslens/xdsgrpc/internal/callctx"
	"github.com/xdslens/xdslens/xdsgrpc/internal/clusterlb"
)

// storeReporter records load into a Store of its own, without sending it.
type storeReporter struct{ s *lrs.Store }

func (r storeReporter) ReportLoad(_, cluster, service string) (*lrs.ClusterLoad, func(), error) {
	return r.s.Cluster(cluster, service), func() {}, nil
}

// readyPicker returns the picker of a channel to a cluster of 100
// backends in 10 localities, once every backend is READY; with lrsOn, the
// cluster reports load, and hooks are set.
func readyPicker(tb testing.TB, lrsOn bool) balancer.Picker {
	tb.Helper()
	ctx := xdstest.Context(tb)
	names := make([]string, 100)
	for i := range names {
		names[i] = fmt.Sprint("b", i)
	}
	bs := startBackends(tb, names...)
	var locs []xdsresource.Locality
	for z := range 10 {
		locs = append(locs, locality(fmt.Sprint("z", z), 0, uint32(z+1), bs[z*10:z*10+10]...))
	}
	leaf := edsCluster("c1", locs...)
	cfg := config("c1", leaf)
	if lrsOn {
		leaf.Cluster.LRSServer = true
		cfg.LoadReporter = storeReporter{lrs.NewStore()}
		cfg.Hooks = &clusterlb.Hooks{CallStarted: func(clusterlb.CallInfo) {}, CallFinished: func(clusterlb.CallInfo, error) {}}
	}
	sink := &pickerSink{}
	ch := dialWith(tb, cfg, sink)
	ch.cc.Connect()
	var p balancer.Picker
	xdstest.WaitFor(tb, ctx, "every backend READY", func() bool {
		s := sink.last()
		if s.ConnectivityState != connectivity.Ready {
			return false
		}
		seen := map[balancer.SubConn]bool{}
		for range 1000 {
			res, err := s.Picker.Pick(balancer.PickInfo{Ctx: ctx})
			if err != nil {
				return false
			}
			res.Done(balancer.DoneInfo{})
			seen[res.SubConn] = true
		}
		p = s.Picker
		return len(seen) == len(bs)
	})
	return p
}

// Picking a READY endpoint, and the Done of the RPC, allocate nothing,
// load reports and hooks included.
func TestPickAllocs(t *testing.T) {
	p := readyPicker(t, true)
	var rec callctx.Call
	info := balancer.PickInfo{FullMethodName: "/s/m", Ctx: callctx.With(context.Background(), &rec)}
	if n := testing.AllocsPerRun(1000, func() {
		res, err := p.Pick(info)
		if err != nil {
			t.Fatal(err)
		}
		res.Done(balancer.DoneInfo{})
	}); n != 0 {
		t.Errorf("a pick and its Done allocate %v times, want 0", n)
	}
	if rec.Leaf != "c1" || rec.Locality.Zone == "" {
		t.Errorf("Call = %+v after the picks", rec)
	}
}

// The pick of an RPC whose interceptors learn its status, its Done
// without an error (held until then) and its settling by the RPC's end
// allocate nothing either.
func TestPickAllocsHeld(t *testing.T) {
	p := readyPicker(t, true)
	var rec callctx.Call
	info := balancer.PickInfo{FullMethodName: "/s/m", Ctx: callctx.With(context.Background(), &rec)}
	if n := testing.AllocsPerRun(1000, func() { pickHeld(t, p, info, &rec) }); n != 0 {
		t.Errorf("a pick, its Done and the RPC's end allocate %v times, want 0", n)
	}
}

// pickHeld makes one pick for the RPC of rec, which its interceptors
// follow, ends its attempt without an error, then the RPC.
func pickHeld(tb testing.TB, p balancer.Picker, info balancer.PickInfo, rec *callctx.Call) bool {
	rec.Reset()
	rec.Owned = true
	res, err := p.Pick(info)
	if err != nil {
		tb.Error(err)
		return false
	}
	res.Done(balancer.DoneInfo{BytesSent: true, BytesReceived: true})
	rec.Ended(nil)
	return true
}

// BenchmarkPickHeld is BenchmarkPick's serial case with load reports for
// an RPC whose interceptors learn its status: its attempt, ended without
// an error, is held until the RPC ends.
func BenchmarkPickHeld(b *testing.B) {
	p := readyPicker(b, true)
	var rec callctx.Call
	info := balancer.PickInfo{FullMethodName: "/s/m", Ctx: callctx.With(context.Background(), &rec)}
	b.ReportAllocs()
	for b.Loop() {
		if !pickHeld(b, p, info, &rec) {
			return
		}
	}
}

// BenchmarkPick measures one pick and its Done over 100 READY endpoints
// in 10 localities of weights 1 to 10, from one goroutine and from
// GOMAXPROCS goroutines, without and with load reports.
func BenchmarkPick(b *testing.B) {
	for _, parallel := range []bool{false, true} {
		for _, lrsOn := range []bool{false, true} {
			b.Run(fmt.Sprintf("parallel=%v/lrs=%v", parallel, lrsOn), func(b *testing.B) {
				p := readyPicker(b, lrsOn)
				info := balancer.PickInfo{FullMethodName: "/s/m", Ctx: context.Background()}
				pick := func() bool {
					res, err := p.Pick(info)
					if err != nil {
						b.Error(err)
						return false
					}
					res.Done(balancer.DoneInfo{})
					return true
				}
				b.ReportAllocs()
				if !parallel {
					for b.Loop() {
						if !pick() {
							return
						}
					}
					return
				}
				b.ResetTimer()
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() && pick() {
					}
				})
			})
		}
	}
}
