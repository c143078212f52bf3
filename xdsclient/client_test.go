package xdsclient_test

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"

	"go.uber.org/goleak"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/status"

	"github.com/xdslens/xdslens/internal/testing/xdstest"
	"github.com/xdslens/xdslens/internal/xdswatch/demo/controlplane"
	"github.com/xdslens/xdslens/xdsclient"
	"github.com/xdslens/xdslens/xdsclient/xdsresource"
)

// Every kind of hook fires in a scenario that goes through each transition.
func TestHooksEveryKindFires(t *testing.T) {
	f := newFixture(t, nil)
	rec, st := f.watchCached("c1")
	f.send(st, cdsURL, "2", xdstest.InvalidCluster("c1"))
	rec.Expect(t, xdsclient.NotifyAmbientError, codes.InvalidArgument)
	f.RecvType(st, cdsURL)
	st.End(nil)
	st2 := f.NextStream()
	f.RecvType(st2, cdsURL)
	st2.End(status.Error(codes.Unavailable, "no response"))
	rec.Expect(t, xdsclient.NotifyAmbientError, codes.Unavailable)

	h := f.hooks
	h.connectivity.waitFor(t, "READY", func(i xdsclient.ConnectivityInfo) bool { return i.State == connectivity.Ready })
	h.connected.waitFor(t, "connected", func(i xdsclient.ConnectedInfo) bool { return i.Connected && i.Server == f.Srv.Addr() })
	h.connected.waitFor(t, "disconnected", func(i xdsclient.ConnectedInfo) bool { return !i.Connected && i.Reason != nil })
	h.started.waitFor(t, "stream start", func(i xdsclient.StreamInfo) bool { return i.Attempt == 2 })
	h.ended.waitFor(t, "stream end after response", func(i xdsclient.StreamEndInfo) bool { return i.ResponseReceived })
	h.ended.waitFor(t, "stream end without response", func(i xdsclient.StreamEndInfo) bool { return !i.ResponseReceived })
	h.failures.waitFor(t, "server failure", func(i xdsclient.ServerFailureInfo) bool { return i.Reason != nil })
	h.requests.waitFor(t, "ACK", func(i xdsclient.RequestInfo) bool { return i.Version == "1" && i.NACK == nil })
	h.requests.waitFor(t, "NACK", func(i xdsclient.RequestInfo) bool { return i.NACK != nil })
	h.responses.waitFor(t, "valid response", func(i xdsclient.ResponseInfo) bool { return i.Valid == 1 && i.TypeURL == cdsURL })
	h.responses.waitFor(t, "invalid response", func(i xdsclient.ResponseInfo) bool { return i.Invalid == 1 && i.NACK != nil })
	h.states.waitFor(t, "none→requested", func(i xdsclient.CacheStateInfo) bool {
		return i.Old == xdsclient.StateNone && i.New == xdsclient.StateRequested && i.Target == "test-target" && i.Authority == "#old" && i.Name == "c1"
	})
	h.states.waitFor(t, "requested→acked", func(i xdsclient.CacheStateInfo) bool {
		return i.Old == xdsclient.StateRequested && i.New == xdsclient.StateACKed && i.NewCached
	})
	h.states.waitFor(t, "acked→nacked but cached", func(i xdsclient.CacheStateInfo) bool {
		return i.Old == xdsclient.StateACKed && i.New == xdsclient.StateNACKed && i.OldCached && i.NewCached && i.Err != nil
	})
	h.notified.waitFor(t, "resource notification", func(i xdsclient.NotificationInfo) bool { return i.Kind == xdsclient.NotifyResource && i.Name == "c1" })
	h.notified.waitFor(t, "ambient notification", func(i xdsclient.NotificationInfo) bool { return i.Kind == xdsclient.NotifyAmbientError })
	h.timerStarts.waitFor(t, "timer start", func(i xdsclient.ResourceTimerInfo) bool { return i.Name == "c1" })
	h.timerStops.waitFor(t, "timer stop", func(i xdsclient.ResourceTimerInfo) bool { return i.Name == "c1" })

	// Removal is reported as a change to StateNone.
	f.c.Close()
	_ = rec
}

func TestHooksRemovalReported(t *testing.T) {
	f := newFixture(t, nil)
	cancel := f.c.Watch(xdsresource.ClusterType, "c1", xdstest.NewWatcher())
	cancel()
	f.hooks.states.waitFor(t, "requested→none", func(i xdsclient.CacheStateInfo) bool {
		return i.Old == xdsclient.StateRequested && i.New == xdsclient.StateNone
	})
}

// A hook may call the client without deadlocking.
func TestHookMayCallClient(t *testing.T) {
	srv := newFixture(t, nil).Srv
	var c *xdsclient.Client
	dumped := make(chan int, 100)
	c = newClient(t, bootstrapFor(t, srv.Addr()), xdsclient.WithHooks(&xdsclient.Hooks{
		CacheStateChanged: func(xdsclient.CacheStateInfo) { dumped <- len(c.Dump()) },
	}))
	defer c.Watch(xdsresource.ClusterType, "c1", xdstest.NewWatcher())()
	select {
	case n := <-dumped:
		if n != 1 {
			t.Errorf("Dump from a hook saw %d entries, want 1", n)
		}
	case <-xdstest.Context(t).Done():
		t.Fatal("hook did not run")
	}
}

// Flow control: while a watcher callback blocks, the client reads no
// further response from the server.
func TestFlowControlSlowWatcher(t *testing.T) {
	f := newFixture(t, nil)
	release := make(chan struct{})
	var releaseOnce sync.Once
	got := make(chan string, 10)
	defer f.c.Watch(xdsresource.ClusterType, "c1", xdsclient.WatcherFuncs{
		OnResourceChanged: func(r *xdsclient.Resource, err error) {
			got <- r.Version
			<-release
		},
	})()
	// cancel waits for a running callback: release it first if the test
	// fails while the watcher blocks.
	defer releaseOnce.Do(func() { close(release) })
	st := f.NextStream()
	f.RecvType(st, cdsURL)
	f.send(st, cdsURL, "1", controlplane.Cluster("c1", "c1"))
	if v := <-got; v != "1" {
		t.Fatalf("first delivery version %q", v)
	}
	f.send(st, cdsURL, "2", controlplane.Cluster("c1", "c2"))
	// The ACK of version 1 goes out, but version 2 is not read while the
	// watcher holds version 1.
	f.RecvType(st, cdsURL)
	if n := len(f.hooks.responses.snapshot()); n != 1 {
		t.Fatalf("%d responses processed while the watcher blocked, want 1", n)
	}
	releaseOnce.Do(func() { close(release) })
	if v := <-got; v != "2" {
		t.Fatalf("second delivery version %q", v)
	}
}

// Callbacks for one watcher are serialized and never concurrent, even under
// concurrent watches and cancels.
func TestConcurrentWatchesAndCancels(t *testing.T) {
	ctx := xdstest.Context(t)
	cp, err := controlplane.Start(ctx, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cp.Stop)
	var res []any
	for i := 0; i < 20; i++ {
		res = append(res, controlplane.Cluster(fmt.Sprintf("c%d", i), "e"))
	}
	if err := cp.SetResources(ctx, testNodeID, "1", toMessages(res)...); err != nil {
		t.Fatal(err)
	}
	c := newClient(t, bootstrapFor(t, cp.Addr()))
	var inCallback sync.Mutex
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 20; i++ {
				done := make(chan struct{})
				var once sync.Once
				cancel := c.Watch(xdsresource.ClusterType, fmt.Sprintf("c%d", (g+i)%20), xdsclient.WatcherFuncs{
					OnResourceChanged: func(r *xdsclient.Resource, err error) {
						if !inCallback.TryLock() {
							t.Error("two callbacks ran at once")
							return
						}
						inCallback.Unlock()
						if err == nil {
							once.Do(func() { close(done) })
						}
					},
				})
				select {
				case <-done:
				case <-ctx.Done():
					t.Error("no resource delivered")
				}
				cancel()
			}
		}(g)
	}
	wg.Wait()
}

func TestTypedWatcher(t *testing.T) {
	f := newFixture(t, nil)
	got := make(chan *xdsresource.Cluster, 1)
	defer xdsclient.WatchCluster(f.c, "c1", typedFuncs[*xdsresource.Cluster]{changed: func(c *xdsresource.Cluster, err error) { got <- c }})()
	st := f.NextStream()
	f.RecvType(st, cdsURL)
	f.send(st, cdsURL, "1", controlplane.Cluster("c1", "eds-c1"))
	select {
	case c := <-got:
		if c.EDSServiceName != "eds-c1" {
			t.Errorf("typed cluster EDS name %q, want eds-c1", c.EDSServiceName)
		}
	case <-xdstest.Context(t).Done():
		t.Fatal("no typed delivery")
	}
}

type typedFuncs[T any] struct{ changed func(T, error) }

func (f typedFuncs[T]) ResourceChanged(v T, err error) { f.changed(v, err) }
func (f typedFuncs[T]) AmbientError(error)             {}

func TestDataPlaneError(t *testing.T) {
	for _, tc := range []struct {
		in   error
		want codes.Code
	}{
		{status.Error(codes.NotFound, "cds \"c1\": does not exist"), codes.Unavailable},
		{status.Error(codes.InvalidArgument, "nack"), codes.Unavailable},
		{status.Error(codes.PermissionDenied, "denied"), codes.Unavailable},
		{status.Error(codes.Unavailable, "down"), codes.Unavailable},
		{errors.New("plain"), codes.Unavailable},
	} {
		got := xdsclient.DataPlaneError(tc.in)
		if status.Code(got) != tc.want {
			t.Errorf("DataPlaneError(%v) code %v, want %v", tc.in, status.Code(got), tc.want)
		}
		if !contains(got, status.Convert(tc.in).Message()) {
			t.Errorf("DataPlaneError(%v) = %v lost the message", tc.in, got)
		}
	}
	if xdsclient.DataPlaneError(nil) != nil {
		t.Error("DataPlaneError(nil) != nil")
	}
}

// No goroutine outlives Close, whatever state the client was in.
func TestNoGoroutineAfterClose(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	ctx := xdstest.Context(t)
	cp, err := controlplane.Start(ctx, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if err := cp.SetResources(ctx, testNodeID, "1", controlplane.Cluster("c1", "c1")); err != nil {
		t.Fatal(err)
	}
	c, err := xdsclient.New(bootstrapFor(t, cp.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	rec := xdstest.NewWatcher()
	c.Watch(xdsresource.ClusterType, "c1", rec)
	c.Watch(xdsresource.ClusterType, "missing", xdstest.NewWatcher())
	rec.Expect(t, xdsclient.NotifyResource, 0)
	c.Close()
	c.Close() // twice is fine
	cp.Stop()
}

// Hooks added to a running client first see its current state.
func TestAddHooksReplaysState(t *testing.T) {
	f := newFixture(t, nil)
	f.watchCached("c1")
	defer f.c.Watch(xdsresource.ClusterType, "c2", xdstest.NewWatcher())()
	late := newRecordedHooks()
	remove := f.c.AddHooks(late.hooks())
	late.states.waitFor(t, "c1 replayed", func(i xdsclient.CacheStateInfo) bool {
		return i.Name == "c1" && i.Old == xdsclient.StateNone && i.New == xdsclient.StateACKed && i.NewCached
	})
	late.states.waitFor(t, "c2 replayed", func(i xdsclient.CacheStateInfo) bool {
		return i.Name == "c2" && i.New == xdsclient.StateRequested
	})
	late.connected.waitFor(t, "connected replayed", func(i xdsclient.ConnectedInfo) bool { return i.Connected })
	late.authServer.waitFor(t, "authority replayed", func(i xdsclient.AuthorityServerInfo) bool {
		return i.Authority == "#old" && i.Server == f.Srv.Addr()
	})
	remove()
	n := len(late.states.snapshot())
	f.c.Watch(xdsresource.ClusterType, "c3", xdstest.NewWatcher())()
	f.hooks.states.waitFor(t, "c3 removed", func(i xdsclient.CacheStateInfo) bool { return i.Name == "c3" && i.New == xdsclient.StateNone })
	if got := len(late.states.snapshot()); got != n {
		t.Errorf("removed hooks saw %d more events", got-n)
	}
}

// Watchers added while the cached resource keeps changing each get the
// cached resource, with the value of its version, then every later version,
// ending with the last: a cached resource is decoded for a new watcher
// outside the client's lock, and decoded again if an update lands meanwhile
// (a stale decode would show as a version skipped).
func TestLateWatchersDuringUpdates(t *testing.T) {
	const versions = 40
	f := newFixture(t, nil)
	_, st := f.watchCached("c1")

	type late struct {
		mu    sync.Mutex
		seen  []int
		first chan struct{}
		last  chan struct{}
	}
	var (
		mu      sync.Mutex
		watches []*late
		stop    = make(chan struct{})
		adding  sync.WaitGroup
	)
	adding.Add(1)
	go func() {
		defer adding.Done()
		// One watcher at a time, the next once the last has its resource,
		// so that watches keep landing among the updates.
		for range 500 {
			l := &late{first: make(chan struct{}), last: make(chan struct{})}
			cancel := f.c.Watch(xdsresource.ClusterType, "c1", xdsclient.WatcherFuncs{OnResourceChanged: func(r *xdsclient.Resource, err error) {
				if err != nil {
					t.Errorf("late watcher got %v", err)
					return
				}
				v, _ := strconv.Atoi(r.Version)
				if got := r.Value.(*xdsresource.Cluster).EDSServiceName; got != fmt.Sprintf("v%d", v) && !(v == 1 && got == "c1") {
					t.Errorf("version %d delivered with the value of %q", v, got)
				}
				l.mu.Lock()
				l.seen = append(l.seen, v)
				if len(l.seen) == 1 {
					close(l.first)
				}
				l.mu.Unlock()
				if v == versions {
					close(l.last)
				}
			}})
			t.Cleanup(cancel)
			mu.Lock()
			watches = append(watches, l)
			mu.Unlock()
			select {
			case <-l.first:
			case <-stop:
				return
			}
		}
	}()
	for v := 2; v <= versions; v++ {
		f.send(st, cdsURL, strconv.Itoa(v), controlplane.Cluster("c1", fmt.Sprintf("v%d", v)))
		f.RecvType(st, cdsURL) // ACK
	}
	close(stop)
	adding.Wait()

	mu.Lock()
	defer mu.Unlock()
	for i, l := range watches {
		select {
		case <-l.last:
		case <-f.Ctx.Done():
			t.Fatalf("late watcher %d never got version %d", i, versions)
		}
		l.mu.Lock()
		for j := 1; j < len(l.seen); j++ {
			if l.seen[j] != l.seen[j-1]+1 {
				t.Errorf("late watcher %d saw versions %v: want the cached one, then every later one", i, l.seen)
				break
			}
		}
		l.mu.Unlock()
	}
	t.Logf("%d watchers added during %d updates", len(watches), versions-1)
}

// Dump copies a large cache a step at a time: while watches come and go it
// returns each entry at most once, sorted, never one that was removed
// before the dump began, and every entry that stayed all along.
func TestDumpDuringChurn(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	const stable = 2000
	for i := range stable {
		defer f.c.Watch(xdsresource.ClusterType, fmt.Sprintf("stable-%04d", i), xdsclient.WatcherFuncs{})()
	}
	gone := f.c.Watch(xdsresource.ClusterType, "gone", xdsclient.WatcherFuncs{})
	gone()
	stop := make(chan struct{})
	var churn sync.WaitGroup
	churn.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			f.c.Watch(xdsresource.ClusterType, fmt.Sprintf("churn-%d", i%50), xdsclient.WatcherFuncs{})()
		}
	})
	defer churn.Wait()
	defer close(stop)
	for range 20 {
		d := f.c.Dump()
		seen := map[string]bool{}
		n := 0
		for i, s := range d {
			if seen[s.Name] {
				t.Fatalf("%q twice in one dump", s.Name)
			}
			seen[s.Name] = true
			if i > 0 && d[i-1].Name > s.Name {
				t.Fatalf("dump not sorted: %q before %q", d[i-1].Name, s.Name)
			}
			if strings.HasPrefix(s.Name, "stable-") {
				n++
			}
			if s.Name == "gone" {
				t.Fatal("a dump shows an entry removed before it began")
			}
		}
		if n != stable {
			t.Fatalf("dump has %d of the %d entries watched all along", n, stable)
		}
	}
}
