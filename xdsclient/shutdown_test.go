package xdsclient_test

// Shutdown: Close bounded by a context. What it closes does not depend on
// the context; what it waits for does, and goes on after it returns.

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
	"google.golang.org/grpc/codes"

	"github.com/xdslens/xdslens/internal/testing/xdstest"
	"github.com/xdslens/xdslens/internal/xdswatch/demo/controlplane"
	"github.com/xdslens/xdslens/internal/xdswatch/demo/lrsserver"
	"github.com/xdslens/xdslens/xdsclient"
	"github.com/xdslens/xdslens/xdsclient/xdsresource"
)

// shortDeadline is how long a Shutdown that cannot end waits here.
const shortDeadline = 20 * time.Millisecond

// shutdownWithin calls c.Shutdown with a context that ends after
// shortDeadline, and fails t if it does not return by the test's deadline.
func shutdownWithin(t *testing.T, c *xdsclient.Client) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), shortDeadline)
	defer cancel()
	errc := make(chan error, 1)
	go func() { errc <- c.Shutdown(ctx) }()
	select {
	case err := <-errc:
		return err
	case <-xdstest.Context(t).Done():
		t.Fatal("Shutdown did not return once its context was done")
		return nil
	}
}

// A watcher callback that does not return: Shutdown returns the context's
// error, naming what it waits for, with the client closed; the callbacks
// queued behind the blocked one never run, the hooks queued behind it run
// once it returns, and then every goroutine of the client ends.
func TestShutdownDeadlineWithBlockedCallback(t *testing.T) {
	srv := xdstest.NewADSServer(t)
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	hooks := newRecordedHooks()
	c, err := xdsclient.New(bootstrapFor(t, srv.Addr()), xdstest.ClientOptions(xdsclient.WithHooks(hooks.hooks()), xdsclient.WithTarget("test-target"))...)
	if err != nil {
		t.Fatal(err)
	}
	// Two watchers of c1, notified of one response in turn on its server's
	// lane: the first to run blocks, the other waits behind it.
	entered, release := make(chan struct{}), make(chan struct{})
	var blocked sync.Once
	var behind atomic.Int32
	w := xdsclient.WatcherFuncs{OnResourceChanged: func(*xdsclient.Resource, error) {
		first := false
		blocked.Do(func() { first = true })
		if !first {
			behind.Add(1)
			return
		}
		close(entered)
		<-release
	}}
	c.Watch(xdsresource.ClusterType, "c1", w)
	c.Watch(xdsresource.ClusterType, "c1", w)
	s := xdstest.Script{T: t, Ctx: xdstest.Context(t), Srv: srv}
	st := s.NextStream()
	s.RecvType(st, cdsURL)
	s.Send(st, xdstest.Response(cdsURL, "1", controlplane.Cluster("c1", "c1")))
	waitDone(t, entered, "the first callback")

	err = shutdownWithin(t, c)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Shutdown with a callback blocked = %v, want the context's error", err)
	}
	if !contains(err, "callback") || !contains(err, "test-target") {
		t.Errorf("Shutdown's error %q does not say what it waits for", err)
	}
	// Closed, whatever the deadline: no cache, watches refused, no load
	// reporting; the refusal comes on a lane of its own, while the
	// server's lane is still blocked.
	if d := c.Dump(); d != nil {
		t.Errorf("Dump after Shutdown = %v, want nothing", d)
	}
	rec := xdstest.NewWatcher()
	cancelLate := c.Watch(xdsresource.ClusterType, "c2", rec)
	if e := rec.Expect(t, xdsclient.NotifyResourceError, codes.Unavailable); !contains(e.Err, "closed") {
		t.Errorf("a Watch after Shutdown got %v, want the closed client's error", e.Err)
	}
	cancelLate()
	if _, _, err := c.ReportLoad(srv.Addr(), "c1", ""); !errors.Is(err, xdsclient.ErrClosed) {
		t.Errorf("ReportLoad after Shutdown = %v, want ErrClosed", err)
	}
	// The hooks of closing wait on the server's lane, behind the callback.
	if got := hooks.closed.snapshot(); len(got) != 0 {
		t.Errorf("ChannelClosed ran before the blocked callback returned: %v", got)
	}
	// Another Shutdown waits again, until its own deadline.
	if err := shutdownWithin(t, c); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("a second Shutdown with the callback still blocked = %v, want the context's error", err)
	}

	close(release)
	hooks.closed.waitFor(t, "ChannelClosed once the callback returned", func(xdsclient.ChannelInfo) bool { return true })
	c.Close() // returns once everything has ended
	done, cancel := context.WithCancel(context.Background())
	cancel()
	if err := c.Shutdown(done); err != nil {
		t.Errorf("Shutdown once closed, with its context done = %v, want nil", err)
	}
	if n := behind.Load(); n != 0 {
		t.Errorf("the callback queued behind the blocked one ran %d times after Shutdown", n)
	}
}

// Shutdown from a watcher callback returns at once, as Close does; the
// client's goroutines end once the callback returns.
func TestShutdownFromWatcherCallback(t *testing.T) {
	f := newFixture(t, nil)
	errc := make(chan error, 1)
	defer f.c.Watch(xdsresource.ClusterType, "c1", xdsclient.WatcherFuncs{
		OnResourceChanged: func(*xdsclient.Resource, error) {
			errc <- f.c.Shutdown(xdstest.Context(t))
		},
	})()
	st := f.NextStream()
	f.RecvType(st, cdsURL)
	f.send(st, cdsURL, "1", controlplane.Cluster("c1", "c1"))
	select {
	case err := <-errc:
		if err != nil {
			t.Errorf("Shutdown from a callback = %v, want nil", err)
		}
	case <-xdstest.Context(t).Done():
		t.Fatal("Shutdown from a watcher callback never returned")
	}
	if err := f.c.Shutdown(xdstest.Context(t)); err != nil {
		t.Errorf("Shutdown from outside, after = %v", err)
	}
}

// A load report hook runs on its LRS stream's goroutine, which closing
// waits for, but not when the hook itself closes the client: Close, and
// Shutdown, from a load report hook return at once without an error, the
// load reporting ends once the hook returns, and nothing is left running.
func TestCloseFromLoadReportHook(t *testing.T) {
	for _, how := range []string{"Close", "Shutdown"} {
		t.Run(how, func(t *testing.T) {
			ctx := xdstest.Context(t)
			svc := lrsserver.NewService(lrsserver.Config{Interval: time.Hour})
			cp, err := controlplane.Start(ctx, "127.0.0.1:0", controlplane.WithService(svc.Register))
			if err != nil {
				t.Fatal(err)
			}
			defer cp.Stop()
			defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
			var c *xdsclient.Client
			ready := make(chan struct{})
			errc := make(chan error, 1)
			var once sync.Once
			c, err = xdsclient.New(bootstrapFor(t, cp.Addr()), xdstest.ClientOptions(xdsclient.WithHooks(&xdsclient.Hooks{
				LoadReportStreamStarted: func(xdsclient.LoadReportStreamInfo) {
					<-ready
					once.Do(func() {
						if how == "Close" {
							c.Close()
							errc <- nil
							return
						}
						errc <- c.Shutdown(ctx)
					})
				},
			}))...)
			if err != nil {
				t.Fatal(err)
			}
			_, release, err := c.ReportLoad(cp.Addr(), "c1", "")
			if err != nil {
				t.Fatal(err)
			}
			defer release()
			close(ready)
			select {
			case err := <-errc:
				if err != nil {
					t.Errorf("%s from a load report hook = %v, want nil", how, err)
				}
			case <-ctx.Done():
				t.Fatalf("%s from a load report hook never returned", how)
			}
			if err := svc.Wait(ctx, func() bool { return svc.Open() == 0 }); err != nil {
				t.Fatalf("LRS stream open after %s from its hook returned: %v", how, err)
			}
		})
	}
}

// ReportLoad's release, the last of the server's stream, from a load
// report hook ends the stream once the hook returns, rather than wait for
// the hook's own goroutine.
func TestReleaseFromLoadReportHook(t *testing.T) {
	ctx := xdstest.Context(t)
	svc := lrsserver.NewService(lrsserver.Config{Interval: time.Millisecond, SendAll: true})
	cp, err := controlplane.Start(ctx, "127.0.0.1:0", controlplane.WithService(svc.Register))
	if err != nil {
		t.Fatal(err)
	}
	defer cp.Stop()
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	var release func()
	set := make(chan struct{})
	released := make(chan struct{})
	var once sync.Once
	c, err := xdsclient.New(bootstrapFor(t, cp.Addr()), xdstest.ClientOptions(xdsclient.WithHooks(&xdsclient.Hooks{
		LoadReportSent: func(xdsclient.LoadReportInfo) {
			<-set
			once.Do(func() {
				release()
				close(released)
			})
		},
	}))...)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	load, rel, err := c.ReportLoad(cp.Addr(), "c1", "")
	if err != nil {
		t.Fatal(err)
	}
	release = rel
	close(set)
	load.CallDropped("overload")
	select {
	case <-released:
	case <-ctx.Done():
		t.Fatal("release from a load report hook never returned")
	}
	if err := svc.Wait(ctx, func() bool { return svc.Open() == 0 }); err != nil {
		t.Fatalf("LRS stream open after its last release: %v", err)
	}
}
