package clusterlb_test

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/balancer"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/xdslens/xdslens/internal/testing/xdstest"
	"github.com/xdslens/xdslens/xdsclient/xdsresource"
	"github.com/xdslens/xdslens/xdsgrpc/internal/callctx"
	"github.com/xdslens/xdslens/xdsgrpc/internal/clusterlb"
)

// staleConn makes certain what is otherwise a rare race: gRPC-Go takes
// the connection that a pick returned, finds it no longer READY, ends the
// pick with an empty DoneInfo and picks again once a new picker comes
// (picker_wrapper.go in v1.85.0). Armed, its ConnectionChanged hook holds
// the Balancer's goroutine when a connection leaves READY, before the
// endpoint policy hears of it: the picker in use keeps returning the
// connection, which stays IDLE, for nothing asks it to connect again,
// until open lets the Balancer go on. Its pickerSink tells it when gRPC
// ends each pick.
type staleConn struct {
	armed     atomic.Bool
	entered   chan struct{} // closed when the hook holds the Balancer
	release   chan struct{}
	openOnce  sync.Once
	picked    chan struct{}          // receives at each CallStarted
	dones     chan balancer.DoneInfo // receives when gRPC ends a pick
	ejections chan clusterlb.EjectionInfo

	mu   sync.Mutex
	ends []error // CallFinished's
}

func newStaleConn() *staleConn {
	return &staleConn{entered: make(chan struct{}), release: make(chan struct{}),
		picked: make(chan struct{}, 10), dones: make(chan balancer.DoneInfo, 10), ejections: make(chan clusterlb.EjectionInfo, 10)}
}

func (s *staleConn) sink() *pickerSink {
	return &pickerSink{onDone: func(di balancer.DoneInfo) { s.dones <- di }}
}

func (s *staleConn) hooks() *clusterlb.Hooks {
	return &clusterlb.Hooks{
		ConnectionChanged: func(i clusterlb.ConnectionInfo) {
			if i.From == connectivity.Ready && s.armed.CompareAndSwap(true, false) {
				close(s.entered)
				<-s.release
			}
		},
		CallStarted: func(clusterlb.CallInfo) { s.picked <- struct{}{} },
		CallFinished: func(_ clusterlb.CallInfo, err error) {
			s.mu.Lock()
			s.ends = append(s.ends, err)
			s.mu.Unlock()
		},
		Ejection: func(i clusterlb.EjectionInfo) { s.ejections <- i },
	}
}

// open lets the Balancer go on.
func (s *staleConn) open() { s.openOnce.Do(func() { close(s.release) }) }

func (s *staleConn) finished() []error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]error(nil), s.ends...)
}

// everyFailure is an outlier_detection that ejects an endpoint with any
// failure in an interval (failure percentage above 0 out of one RPC or
// more), every interval.
func everyFailure(interval time.Duration) *clusterv3.OutlierDetection {
	return &clusterv3.OutlierDetection{
		Interval:                       durationpb.New(interval),
		BaseEjectionTime:               durationpb.New(time.Hour),
		MaxEjectionPercent:             wrapperspb.UInt32(100),
		EnforcingSuccessRate:           wrapperspb.UInt32(0),
		EnforcingFailurePercentage:     wrapperspb.UInt32(100),
		FailurePercentageThreshold:     wrapperspb.UInt32(0),
		FailurePercentageMinimumHosts:  wrapperspb.UInt32(1),
		FailurePercentageRequestVolume: wrapperspb.UInt32(1),
	}
}

// TestPickNeverStarted: an RPC picked for a connection that gRPC-Go then
// finds no longer READY, and picked again once the connection is back,
// is one call, which failed: as gRPC C-core, which starts a call's tracker
// only once the call has a connection, the pick that never started counts
// in no load report (neither issued nor succeeded), not in outlier
// detection's successes, not in the CallFinished hook, and its circuit
// breaker count ends. With the interceptors (an owned Call, whose
// attempts are held until their status is known) as without them.
func TestPickNeverStarted(t *testing.T) {
	for _, owned := range []bool{false, true} {
		name := "without interceptors"
		if owned {
			name = "with interceptors"
		}
		t.Run(name, func(t *testing.T) { testPickNeverStarted(t, owned) })
	}
}

func testPickNeverStarted(t *testing.T, owned bool) {
	ctx := xdstest.Context(t)
	svc, srv, client := startLRS(t, ctx)

	a := startBackend(t, "a")
	a.failing.Store(true)
	rig := newStaleConn()
	configOf := func(odInterval time.Duration) *clusterlb.Config {
		leaf := withPolicy(edsCluster("c1", locality("z", 0, 1, a)), func(c *xdsresource.Cluster) {
			c.LRSServer = true
			c.OutlierDetection = everyFailure(odInterval)
		})
		leaf.Server = srv.Addr()
		return config("c1", leaf)
	}
	cfg := configOf(time.Hour) // no interval ends before the update below
	counters := clusterlb.NewCounters()
	cfg.LoadReporter, cfg.Counters, cfg.Hooks = client, counters, rig.hooks()
	sink := rig.sink()
	ch := dialWith(t, cfg, sink)
	t.Cleanup(rig.open) // before the channel closes
	ch.cc.Connect()
	xdstest.WaitFor(t, ctx, "a READY picker", func() bool { return sink.last().ConnectivityState == connectivity.Ready })

	rig.armed.Store(true)
	a.drop()
	select {
	case <-rig.entered:
	case <-ctx.Done():
		t.Fatal("the connection never left READY")
	}
	rctx := ctx
	var call *callctx.Call
	if owned {
		call = &callctx.Call{}
		rctx = callctx.With(ctx, call)
		call.Owned = true
	}
	errc := make(chan error, 1)
	go func() {
		_, err := ch.call(rctx, grpc.WaitForReady(true))
		errc <- err
	}()
	// gRPC ends the pick of the connection gone, while the Balancer is
	// held, as a pick that never started.
	select {
	case di := <-rig.dones:
		if di.Err != nil || di.BytesSent || di.BytesReceived {
			t.Fatalf("the first pick ended with %+v; want the empty DoneInfo of a connection no longer READY", di)
		}
	case <-ctx.Done():
		t.Fatal("the RPC's first pick never ended")
	}
	rig.open()
	var callErr error
	select {
	case callErr = <-errc:
	case <-ctx.Done():
		t.Fatal("the RPC never ended")
	}
	if callErr == nil {
		t.Fatal("the RPC succeeded; want the failure of backend a")
	}
	if owned {
		call.Ended(callErr)
	}
	if n := len(rig.picked); n != 2 {
		t.Fatalf("the RPC was picked %d times; want 2, once for the connection no longer READY, once when it was back", n)
	}
	if ends := rig.finished(); len(ends) != 1 || ends[0] == nil {
		t.Errorf("CallFinished got %v; want one call, failed", ends)
	}
	for c := range counters.All() {
		if c.InFlight != 0 {
			t.Errorf("circuit breaker of %s: %d in flight after the RPC ended, want 0", c.Cluster, c.InFlight)
		}
	}

	// Outlier detection: a new config with a short interval ends the
	// interval at once, which counted every RPC since the first config.
	cfg2 := configOf(time.Millisecond)
	cfg2.LoadReporter, cfg2.Counters, cfg2.Hooks = client, counters, cfg.Hooks
	ch.update(cfg2)
	select {
	case e := <-rig.ejections:
		if e.Successes != 0 || e.Failures != 1 {
			t.Errorf("outlier detection counted %d successes and %d failures; want 0 and 1", e.Successes, e.Failures)
		}
	case <-ctx.Done():
		t.Fatal("outlier detection never ejected the failing endpoint")
	}

	// The load reports: once the failure is in one, the channel's end
	// sends the last.
	if err := svc.Wait(ctx, func() bool { return sum(sumReports(svc.Reports(), "c1", "").errored) > 0 }); err != nil {
		t.Fatalf("no load report counted the failed RPC: %v", err)
	}
	ch.cc.Close()
	if err := svc.Wait(ctx, func() bool { return svc.Open() == 0 }); err != nil {
		t.Fatalf("the LRS stream stayed open after the channel closed: %v", err)
	}
	got := sumReports(svc.Reports(), "c1", "")
	if got.issued["z"] != 1 || got.succeeded["z"] != 0 || got.errored["z"] != 1 {
		t.Errorf("load reports: %d issued, %d succeeded, %d failed; want 1, 0, 1", got.issued["z"], got.succeeded["z"], got.errored["z"])
	}
}
