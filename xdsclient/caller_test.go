package xdsclient_test

// What one caller can do to the others: a bad name, a nil watcher, a watch
// on a closed client. Each is that caller's problem alone, found at the
// call or told to that watcher, and never a failure of the server, the
// stream or another goroutine.

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/xdslens/xdslens/internal/testing/xdstest"
	"github.com/xdslens/xdslens/internal/xdswatch/demo/controlplane"
	"github.com/xdslens/xdslens/xdsclient"
	"github.com/xdslens/xdslens/xdsclient/xdsresource"
)

// maxMessage is the longest error message the client gives a watcher.
const maxMessage = 16 << 10

// fallbackFixture returns a client spoken to in p of two scripted servers
// in priority order, with fallback on, and the second server: what a test
// does to the first must not make the client turn to the second.
func (p protocol) fallbackFixture(t *testing.T) (*fixture, *xdstest.ADSServer) {
	t.Helper()
	f := &fixture{Script: xdstest.Script{T: t, Ctx: xdstest.Context(t), Srv: xdstest.NewADSServer(t)}, hooks: newRecordedHooks()}
	second := xdstest.NewADSServer(t)
	cfg := xdstest.Bootstrap{Servers: []string{f.Srv.Addr(), second.Addr()}, Features: p.features, Node: testNode}.Parse(t)
	f.c = newClient(t, cfg, xdsclient.WithHooks(f.hooks.hooks()), xdsclient.WithFallback(true))
	return f, second
}

// expectNoStream fails t if the client has opened a stream of either
// protocol on srv.
func expectNoStream(t *testing.T, srv *xdstest.ADSServer) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := srv.NextStream(ctx); err == nil {
		t.Errorf("the client opened a stream on %s", srv.Addr())
	}
	if _, err := srv.NextDeltaStream(ctx); err == nil {
		t.Errorf("the client opened a delta stream on %s", srv.Addr())
	}
}

// A name that is not valid UTF-8 would make every request to the server
// fail to marshal, and a name of megabytes a request the server refuses:
// either way a server failure for every watcher, and fallback. Such a name
// is refused at Watch, to its watcher alone, with a bounded message;
// nothing is sent, and no other watcher, stream, hook or fallback decision
// notices.
func TestBadNameHurtsOnlyItsWatcher(t *testing.T) {
	forEachProtocol(t, func(t *testing.T, p protocol) {
		f, second := p.fallbackFixture(t)
		good, w := p.cached(f, "c1")
		for _, bad := range []struct{ name, says string }{
			{"c\xff2", "not valid UTF-8 (byte 1)"},
			{strings.Repeat("n", 5<<20), "5242880 bytes, more than the 4096 a resource name may have"},
			{strings.Repeat("n", xdsclient.MaxResourceNameSize+1), "4097 bytes"},
		} {
			rec := xdstest.NewWatcher()
			defer f.c.Watch(xdsresource.ClusterType, bad.name, rec)()
			e := rec.Expect(t, xdsclient.NotifyResourceError, codes.InvalidArgument)
			msg := status.Convert(e.Err).Message()
			if !strings.Contains(msg, bad.says) || !strings.Contains(msg, testNodeID) {
				t.Errorf("error %.300q does not say %q and name the node", msg, bad.says)
			}
			if len(msg) > 2<<10 {
				t.Errorf("error of %d bytes: the name is not cut", len(msg))
			}
		}
		// The next subscription goes out on the same stream, alone: no
		// request carried a bad name.
		next := xdstest.NewWatcher()
		defer f.c.Watch(xdsresource.ClusterType, "c2", next)()
		want := []string{"c1", "c2"}
		if p.name == "delta" {
			want = []string{"c2"}
		}
		if got := w.recv().names; !slices.Equal(slices.Sorted(slices.Values(got)), want) {
			t.Errorf("request names %q, want %q", got, want)
		}
		w.send("2", controlplane.Cluster("c1", "c1"), controlplane.Cluster("c2", "c2"))
		next.Expect(t, xdsclient.NotifyResource, 0)
		good.ExpectNone(t)
		if n := len(f.hooks.started.snapshot()); n != 1 {
			t.Errorf("%d streams started, want 1", n)
		}
		if fails := f.hooks.failures.snapshot(); len(fails) > 0 {
			t.Errorf("server failures: %v", fails)
		}
		for _, a := range f.hooks.authServer.snapshot() {
			if a.Reason != "initial" {
				t.Errorf("authority server changed: %+v", a)
			}
		}
		expectNoStream(t, second)
		var names []string
		for _, e := range f.c.Dump() {
			names = append(names, e.Name)
		}
		if !slices.Equal(names, []string{"c1", "c2"}) {
			t.Errorf("cache entries %.100q, want c1 and c2 only", names)
		}
	})
}

// panicOf returns what f panics with, nil if it returns.
func panicOf(f func()) (v any) {
	defer func() { v = recover() }()
	f()
	return nil
}

// A nil watcher panics at the call, in the caller's goroutine, as
// net/http's Handle does for a nil handler, rather than crashing the
// process on the client's callback goroutine when a resource arrives.
func TestNilWatcherPanicsAtTheCall(t *testing.T) {
	f := newFixture(t, nil)
	for _, tc := range []struct {
		name  string
		watch func()
	}{
		{"Watch", func() { f.c.Watch(xdsresource.ClusterType, "c1", nil) }},
		{"WatchListener", func() { xdsclient.WatchListener(f.c, "c1", nil) }},
		{"WatchRouteConfig", func() { xdsclient.WatchRouteConfig(f.c, "c1", nil) }},
		{"WatchCluster", func() { xdsclient.WatchCluster(f.c, "c1", nil) }},
		{"WatchEndpoints", func() { xdsclient.WatchEndpoints(f.c, "c1", nil) }},
		// Typed nils: an interface holding a nil pointer is not nil, and
		// its first callback would crash on the client's goroutine.
		{"Watch of a nil *pointerWatcher", func() { f.c.Watch(xdsresource.ClusterType, "c1", (*pointerWatcher)(nil)) }},
		{"Watch of a nil funcWatcher", func() { f.c.Watch(xdsresource.ClusterType, "c1", funcWatcher(nil)) }},
		{"WatchCluster of a nil *pointerTypedWatcher", func() { xdsclient.WatchCluster(f.c, "c1", (*pointerTypedWatcher)(nil)) }},
	} {
		v := panicOf(tc.watch)
		if v == nil {
			t.Fatalf("%s with a nil watcher returned: the nil watcher would crash the client's callback goroutine", tc.name)
		}
		if s := fmt.Sprint(v); !strings.Contains(s, "nil") || !strings.Contains(s, `"c1"`) {
			t.Errorf("%s panicked with %q, which does not say the watcher of \"c1\" is nil", tc.name, s)
		}
	}
	// Nothing was registered: the client serves the next watch as usual.
	rec, st := f.WatchCluster(f.c, "c1")
	f.send(st, cdsURL, "1", controlplane.Cluster("c1", "c1"))
	rec.Expect(t, xdsclient.NotifyResource, 0)
	if e := f.entry(cdsURL, "c1"); e.Watchers != 1 {
		t.Errorf("%d watchers of c1, want 1", e.Watchers)
	}
}

// pointerWatcher is a Watcher whose methods read its fields: a nil one
// crashes at its first callback.
type pointerWatcher struct{ got []error }

func (w *pointerWatcher) ResourceChanged(_ *xdsclient.Resource, err error) {
	w.got = append(w.got, err)
}
func (w *pointerWatcher) AmbientError(err error) { w.got = append(w.got, err) }

// funcWatcher is a Watcher that is a func: a nil one crashes when called.
type funcWatcher func(error)

func (f funcWatcher) ResourceChanged(_ *xdsclient.Resource, err error) { f(err) }
func (f funcWatcher) AmbientError(err error)                           { f(err) }

// pointerTypedWatcher is a TypedWatcher whose methods read its fields.
type pointerTypedWatcher struct{ got []error }

func (w *pointerTypedWatcher) ResourceChanged(_ *xdsresource.Cluster, err error) {
	w.got = append(w.got, err)
}
func (w *pointerTypedWatcher) AmbientError(err error) { w.got = append(w.got, err) }

// A watch on a closed client gets its one callback, ErrClosed, as every
// callback runs: one at a time, in the order of the watches, never once
// its cancel has returned.
func TestWatchAfterCloseRunsLikeAnyCallback(t *testing.T) {
	f := newFixture(t, nil)
	f.c.Close()
	var late, running, overlap atomic.Int32
	for i := range 100 {
		var cancelled atomic.Bool
		cancel := f.c.Watch(xdsresource.ClusterType, fmt.Sprint("c", i), xdsclient.WatcherFuncs{
			OnResourceChanged: func(_ *xdsclient.Resource, err error) {
				if running.Add(1) > 1 {
					overlap.Add(1)
				}
				if cancelled.Load() {
					late.Add(1)
				}
				runtime.Gosched()
				running.Add(-1)
			},
		})
		if i%2 == 0 {
			cancel()
			cancelled.Store(true)
		}
	}
	// The last watch's callback runs after every earlier one.
	rec := xdstest.NewWatcher()
	defer f.c.Watch(xdsresource.ClusterType, "last", rec)()
	e := rec.Expect(t, xdsclient.NotifyResourceError, codes.Unavailable)
	if !contains(e.Err, "closed") || !contains(e.Err, `"last"`) {
		t.Errorf("error %v does not say the client is closed and name the resource", e.Err)
	}
	if n := late.Load(); n > 0 {
		t.Errorf("%d callbacks ran after their watch's cancel returned", n)
	}
	if n := overlap.Load(); n > 0 {
		t.Errorf("%d callbacks ran while another one ran", n)
	}
}

// A watcher callback may Close the client (the Watcher and Client docs say
// so) and then watch: that watch's callback runs once the callback that
// closed the client has returned, never beside it.
func TestWatchFromTheCallbackThatClosed(t *testing.T) {
	f := newFixture(t, nil)
	var inFirst atomic.Bool
	var overlapped atomic.Bool
	lateRan := make(chan error, 1)
	returned := make(chan struct{})
	defer f.c.Watch(xdsresource.ClusterType, "c1", xdsclient.WatcherFuncs{
		OnResourceChanged: func(*xdsclient.Resource, error) {
			inFirst.Store(true)
			f.c.Close()
			f.c.Watch(xdsresource.ClusterType, "c2", xdsclient.WatcherFuncs{
				OnResourceChanged: func(_ *xdsclient.Resource, err error) {
					overlapped.Store(inFirst.Load())
					lateRan <- err
				},
			})
			// Give a callback that does not wait its turn the time to run.
			select {
			case err := <-lateRan:
				lateRan <- err
			case <-time.After(100 * time.Millisecond):
			}
			inFirst.Store(false)
			close(returned)
		},
	})()
	st := f.NextStream()
	f.RecvType(st, cdsURL)
	f.send(st, cdsURL, "1", controlplane.Cluster("c1", "c1"))
	waitDone(t, returned, "Close from a watcher callback")
	select {
	case err := <-lateRan:
		if status.Code(err) != codes.Unavailable || !contains(err, "closed") {
			t.Errorf("the watch made after Close got %v, want UNAVAILABLE saying the client is closed", err)
		}
	case <-f.Ctx.Done():
		t.Fatal("the watch made after Close got no callback")
	}
	if overlapped.Load() {
		t.Error("the callback of the watch made after Close ran while the callback that closed the client still ran")
	}
}

// FuzzWatchName watches any name over both protocols: the client refuses
// it at Watch (INVALID_ARGUMENT, a bounded valid UTF-8 message, that
// watcher alone), or sends it in a request the server reads. No name makes
// the client send a request the server must refuse: the stream stays up.
func FuzzWatchName(f *testing.F) {
	for _, seed := range []string{
		"c1", "", "c\xff", "\xed\xa0\x80", "a\x00b",
		"xdstp://a/envoy.config.cluster.v3.Cluster/c?b=2&a=1",
		"xdstp:///envoy.config.cluster.v3.Cluster/%FF%C3",
		"xdstp:///envoy.config.cluster.v3.Cluster/" + strings.Repeat("é", 1500),
		"xdstp:///envoy.config.listener.v3.Listener/l",
		strings.Repeat("n", xdsclient.MaxResourceNameSize),
		strings.Repeat("n", xdsclient.MaxResourceNameSize+1),
	} {
		f.Add(seed, false)
		f.Add(seed, true)
	}
	var sides [2]*fuzzSide // SotW, delta
	for i, p := range protocols {
		sides[i] = newFuzzSide(f, p)
	}
	f.Fuzz(func(t *testing.T, name string, delta bool) {
		if name == "keep" {
			return // watched already: nothing would be sent
		}
		s := sides[0]
		if delta {
			s = sides[1]
		}
		got := make(chan error, 1)
		cancel := s.c.Watch(xdsresource.ClusterType, name, xdsclient.WatcherFuncs{
			OnResourceChanged: func(_ *xdsclient.Resource, err error) { got <- err },
		})
		defer cancel()
		drain(t, s.c) // a refusal is queued before Watch returns
		select {
		case err := <-got:
			if status.Code(err) != codes.InvalidArgument {
				t.Fatalf("Watch(%.100q): %v, want INVALID_ARGUMENT", name, err)
			}
			checkMessage(t, status.Convert(err).Message())
			return
		default:
		}
		ctx := xdstest.Context(t)
		names, err := s.next(ctx)
		if err != nil {
			t.Fatalf("Watch(%.100q): the server could not read the request: %v", name, err)
		}
		want := 1 // delta: the new subscription
		if !delta {
			want = 2 // SotW: "keep" and the new one
		}
		if len(names) != want {
			t.Fatalf("Watch(%.100q): request names %.200q, want %d", name, names, want)
		}
		for _, n := range names {
			if !utf8.ValidString(n) || len(n) > xdsclient.MaxResourceNameSize {
				t.Fatalf("Watch(%.100q): the request names %.100q (%d bytes)", name, n, len(n))
			}
		}
		cancel()
		if _, err := s.next(ctx); err != nil {
			t.Fatalf("Watch(%.100q), cancelled: the server could not read the request: %v", name, err)
		}
		if ended := s.hooks.ended.snapshot(); len(ended) > 0 {
			t.Fatalf("Watch(%.100q): the stream ended: %v", name, ended[0].Err)
		}
	})
}

// fuzzSide is a client of one scripted server, in one protocol, with one
// stream open for the whole fuzzing run (a watch of "keep" holds it).
type fuzzSide struct {
	c     *xdsclient.Client
	hooks *recordedHooks
	// next returns the names of the next CDS request on the stream: over
	// SotW the whole subscription, over delta those subscribed and
	// unsubscribed.
	next func(ctx context.Context) ([]string, error)
}

func newFuzzSide(f *testing.F, p protocol) *fuzzSide {
	f.Helper()
	srv := xdstest.NewADSServer(f)
	hooks := newRecordedHooks()
	// xdstp:// names of the authority "" are served by the top-level
	// server, on the same stream.
	cfg := xdstest.Bootstrap{Servers: []string{srv.Addr()}, Features: p.features, Node: testNode, Authorities: `{"": {}}`}.Parse(f)
	s := &fuzzSide{c: newClient(f, cfg, xdsclient.WithHooks(hooks.hooks())), hooks: hooks}
	f.Cleanup(s.c.Watch(xdsresource.ClusterType, "keep", xdsclient.WatcherFuncs{}))
	ctx := xdstest.Context(f)
	if p.name == "delta" {
		st, err := srv.NextDeltaStream(ctx)
		if err != nil {
			f.Fatal(err)
		}
		s.next = func(ctx context.Context) ([]string, error) {
			r, err := st.RecvType(ctx, cdsURL)
			return append(r.GetResourceNamesSubscribe(), r.GetResourceNamesUnsubscribe()...), err
		}
	} else {
		st, err := srv.NextStream(ctx)
		if err != nil {
			f.Fatal(err)
		}
		s.next = func(ctx context.Context) ([]string, error) {
			r, err := st.RecvType(ctx, cdsURL)
			return r.GetResourceNames(), err
		}
	}
	if _, err := s.next(ctx); err != nil {
		f.Fatal(err)
	}
	return s
}

// checkMessage fails t if msg is longer than a watcher's error may be or is
// not valid UTF-8.
func checkMessage(t *testing.T, msg string) {
	t.Helper()
	if len(msg) > maxMessage || !utf8.ValidString(msg) {
		t.Errorf("error message of %d bytes (valid UTF-8: %v): %.200q", len(msg), utf8.ValidString(msg), msg)
	}
}
