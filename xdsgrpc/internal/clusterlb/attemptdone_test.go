package clusterlb_test

import (
	"context"
	"testing"

	"google.golang.org/grpc/balancer"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/status"

	"github.com/xdslens/xdslens/internal/testing/xdstest"
	"github.com/xdslens/xdslens/xdsclient/lrs"
	"github.com/xdslens/xdslens/xdsgrpc/internal/callctx"
	"github.com/xdslens/xdslens/xdsgrpc/internal/clusterlb"
)

// finishes records the CallFinished hook's errors.
type finishes struct{ errs chan error }

func (f *finishes) hooks() *clusterlb.Hooks {
	return &clusterlb.Hooks{CallFinished: func(_ clusterlb.CallInfo, err error) { f.errs <- err }}
}

// next returns the error of the CallFinished call made since the last
// one, and whether there was one.
func (f *finishes) next() (error, bool) {
	select {
	case err := <-f.errs:
		return err, true
	default:
		return nil, false
	}
}

// heldPicker returns the picker of a channel to one READY backend whose
// cluster reports load and whose CallFinished hook f records.
func heldPicker(t testing.TB, f *finishes) balancer.Picker {
	t.Helper()
	ctx := xdstest.Context(t)
	leaf := edsCluster("c1", locality("z", 0, 1, startBackend(t, "a")))
	leaf.Cluster.LRSServer = true
	cfg := config("c1", leaf)
	cfg.LoadReporter = storeReporter{lrs.NewStore()}
	cfg.Hooks = f.hooks()
	sink := &pickerSink{}
	dialWith(t, cfg, sink).cc.Connect()
	var p balancer.Picker
	xdstest.WaitFor(t, ctx, "a READY picker", func() bool {
		s := sink.last()
		p = s.Picker
		return s.ConnectivityState == connectivity.Ready
	})
	return p
}

// ownedCall returns a context that carries a Call as the interceptors of
// xdsgrpc.DialOptions make it.
func ownedCall() (context.Context, *callctx.Call) {
	c := &callctx.Call{}
	ctx := callctx.With(context.Background(), c)
	c.Owned = true
	return ctx, c
}

// An attempt that gRPC-Go ends without an error once its request was sent
// is reported with the status the interceptors learn after it: the RPC's,
// a retry's, UNKNOWN or UNAVAILABLE when another attempt follows; one
// ended by an error and those of RPCs the interceptors do not follow are
// reported at once, as gRPC-Go ended them; a pick that never started (its
// connection no longer READY when gRPC-Go took it) is not reported at all.
func TestAttemptStatusSettled(t *testing.T) {
	f := &finishes{errs: make(chan error, 10)}
	p := heldPicker(t, f)
	failed := status.Error(codes.Unimplemented, "no such method")
	answered := balancer.DoneInfo{BytesSent: true, BytesReceived: true}
	for _, tc := range []struct {
		name    string
		owned   bool
		di      balancer.DoneInfo
		at      codes.Code // reported when Done runs; codes.Code(99): not yet
		settle  func(ctx context.Context, c *callctx.Call)
		settled codes.Code // reported once settle has run
	}{
		{"error of gRPC-Go's", true, balancer.DoneInfo{Err: failed, BytesSent: true, BytesReceived: true}, codes.Unimplemented, nil, 0},
		{"no error, the RPC fails", true, answered, 99, func(_ context.Context, c *callctx.Call) { c.Ended(failed) }, codes.Unimplemented},
		{"no error, the RPC succeeds", true, answered, 99, func(_ context.Context, c *callctx.Call) { c.Ended(nil) }, codes.OK},
		{"no error, retried by the interceptors", true, answered, 99, func(_ context.Context, c *callctx.Call) {
			c.Retried(status.Error(codes.Unavailable, "retried"))
		}, codes.Unavailable},
		{"no error, another attempt after an answer", true, answered, 99, func(ctx context.Context, _ *callctx.Call) {
			res, err := p.Pick(balancer.PickInfo{FullMethodName: "/s/m", Ctx: ctx})
			if err != nil {
				t.Fatal(err)
			}
			res.Done(balancer.DoneInfo{Err: failed, BytesSent: true, BytesReceived: true})
			if err, ok := f.next(); !ok || status.Code(err) != codes.Unknown {
				t.Errorf("the held attempt, superseded: %v, %v; want UNKNOWN", err, ok)
			}
		}, codes.Unimplemented},
		{"no error, another attempt after no answer", true, balancer.DoneInfo{BytesSent: true}, 99, func(ctx context.Context, _ *callctx.Call) {
			res, err := p.Pick(balancer.PickInfo{FullMethodName: "/s/m", Ctx: ctx})
			if err != nil {
				t.Fatal(err)
			}
			res.Done(answered)
			if err, ok := f.next(); !ok || status.Code(err) != codes.Unavailable {
				t.Errorf("the held attempt, superseded: %v, %v; want UNAVAILABLE", err, ok)
			}
		}, 99},
		{"not followed by interceptors", false, answered, codes.OK, nil, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, c := ownedCall()
			c.Owned = tc.owned
			res, err := p.Pick(balancer.PickInfo{FullMethodName: "/s/m", Ctx: ctx})
			if err != nil {
				t.Fatal(err)
			}
			res.Done(tc.di)
			err, ok := f.next()
			switch {
			case tc.at == 99 && ok:
				t.Fatalf("reported at once with %v; want it held", err)
			case tc.at != 99 && (!ok || status.Code(err) != tc.at):
				t.Fatalf("reported at once: %v, %v; want %v", err, ok, tc.at)
			}
			if tc.settle == nil {
				return
			}
			tc.settle(ctx, c)
			if err, ok := f.next(); tc.settled == 99 && ok || tc.settled != 99 && (!ok || status.Code(err) != tc.settled) {
				t.Errorf("settled: %v, %v; want %v", err, ok, tc.settled)
			}
			c.Ended(nil) // what is still held ends with the RPC
			if err, ok := f.next(); tc.settled == 99 && (!ok || err != nil) || tc.settled != 99 && ok {
				t.Errorf("at the RPC's end: %v, %v", err, ok)
			}
		})
	}
	for _, owned := range []bool{false, true} {
		ctx, c := ownedCall()
		c.Owned = owned
		res, err := p.Pick(balancer.PickInfo{FullMethodName: "/s/m", Ctx: ctx})
		if err != nil {
			t.Fatal(err)
		}
		res.Done(balancer.DoneInfo{})
		c.Ended(nil)
		if err, ok := f.next(); ok {
			t.Errorf("a pick that never started (owned %v) was reported, with %v", owned, err)
		}
	}
	// Once the RPC has ended, an attempt is reported with its status at
	// once.
	ctx, c := ownedCall()
	res, err := p.Pick(balancer.PickInfo{FullMethodName: "/s/m", Ctx: ctx})
	if err != nil {
		t.Fatal(err)
	}
	c.Ended(failed)
	res.Done(answered)
	if err, ok := f.next(); !ok || status.Code(err) != codes.Unimplemented {
		t.Errorf("an attempt that ended after its RPC: %v, %v; want UNIMPLEMENTED", err, ok)
	}
}
