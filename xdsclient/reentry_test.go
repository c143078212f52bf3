package xdsclient_test

// Every call order works or fails clearly, never hangs: Close, a pool
// release and cancel from inside callbacks and hooks; Watch after Close;
// no callback once cancel has returned; a resource type's decoder and a
// logger's handler that call the client.

import (
	"context"
	"fmt"
	"log/slog"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/xdslens/xdslens/internal/testing/xdstest"
	"github.com/xdslens/xdslens/internal/xdswatch/demo/controlplane"
	"github.com/xdslens/xdslens/xdsclient"
	"github.com/xdslens/xdslens/xdsclient/xdsresource"
)

// waitDone fails t unless done is closed within the test's deadline.
func waitDone(t *testing.T, done <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-done:
	case <-xdstest.Context(t).Done():
		t.Fatalf("%s never returned (deadlock?)", what)
	}
}

func TestCloseFromWatcherCallback(t *testing.T) {
	f := newFixture(t, nil)
	returned := make(chan struct{})
	defer f.c.Watch(xdsresource.ClusterType, "c1", xdsclient.WatcherFuncs{
		OnResourceChanged: func(*xdsclient.Resource, error) {
			f.c.Close()
			close(returned)
		},
	})()
	st := f.NextStream()
	f.RecvType(st, cdsURL)
	f.send(st, cdsURL, "1", controlplane.Cluster("c1", "c1"))
	waitDone(t, returned, "Close from a watcher callback")
	<-st.Done()
	// A second Close from outside waits for the first to end, and returns.
	done := make(chan struct{})
	go func() { f.c.Close(); close(done) }()
	waitDone(t, done, "a second Close")
}

func TestCloseFromHook(t *testing.T) {
	f := newFixture(t, nil)
	returned := make(chan struct{})
	var once sync.Once
	f.c.AddHooks(&xdsclient.Hooks{ResponseReceived: func(xdsclient.ResponseInfo) {
		once.Do(func() {
			f.c.Close()
			close(returned)
		})
	}})
	rec := xdstest.NewWatcher()
	defer f.c.Watch(xdsresource.ClusterType, "c1", rec)()
	st := f.NextStream()
	f.RecvType(st, cdsURL)
	f.send(st, cdsURL, "1", controlplane.Cluster("c1", "c1"))
	waitDone(t, returned, "Close from a hook")
	// The watcher's callback was queued after the hook, and the client
	// closed first: it never runs.
	rec.ExpectNone(t)
}

func TestPoolReleaseFromWatcherCallback(t *testing.T) {
	srv := xdstest.NewADSServer(t)
	pool := xdsclient.NewPool(bootstrapFor(t, srv.Addr()), xdstest.ClientOptions()...)
	c, release, err := pool.Get("t")
	if err != nil {
		t.Fatal(err)
	}
	returned := make(chan struct{})
	c.Watch(xdsresource.ClusterType, "c1", xdsclient.WatcherFuncs{
		OnResourceChanged: func(*xdsclient.Resource, error) {
			release() // the last reference: closes the client
			close(returned)
		},
	})
	s := xdstest.Script{T: t, Ctx: xdstest.Context(t), Srv: srv}
	st := s.NextStream()
	s.RecvType(st, cdsURL)
	s.Send(st, xdstest.Response(cdsURL, "1", controlplane.Cluster("c1", "c1")))
	waitDone(t, returned, "the pool's last release from a watcher callback")
	<-st.Done()
	if n := len(pool.Clients()); n != 0 {
		t.Fatalf("%d clients left in the pool", n)
	}
}

func TestCancelFromOwnCallback(t *testing.T) {
	f := newFixture(t, nil)
	var cancel func()
	var calls atomic.Int32
	ready := make(chan struct{})
	cancel = f.c.Watch(xdsresource.ClusterType, "c1", xdsclient.WatcherFuncs{
		OnResourceChanged: func(*xdsclient.Resource, error) {
			<-ready
			calls.Add(1)
			cancel()
		},
	})
	close(ready)
	st := f.NextStream()
	f.RecvType(st, cdsURL)
	f.send(st, cdsURL, "1", controlplane.Cluster("c1", "c1"))
	f.hooks.notified.waitFor(t, "the callback", func(xdsclient.NotificationInfo) bool { return true })
	f.hooks.closed.waitFor(t, "the channel closed after the last cancel", func(xdsclient.ChannelInfo) bool { return true })
	if calls.Load() != 1 {
		t.Fatalf("%d callbacks, want 1", calls.Load())
	}
}

// Watch from a watcher callback: a watch that cannot be served is
// answered on the caller's own lane, after the calling callback has
// returned (callbacks of one server run one at a time); a valid one is
// subscribed to. Then Close and Watch from one callback: the watch is
// answered, after that callback, with the closed client's error.
func TestWatchFromWatcherCallback(t *testing.T) {
	f := newFixture(t, nil)
	order := make(chan string, 10)
	refused := xdsclient.WatcherFuncs{OnResourceChanged: func(_ *xdsclient.Resource, err error) {
		order <- "refused: " + status.Code(err).String()
	}}
	var once sync.Once
	defer f.c.Watch(xdsresource.ClusterType, "c1", xdsclient.WatcherFuncs{
		OnResourceChanged: func(*xdsclient.Resource, error) {
			once.Do(func() {
				f.c.Watch(xdsresource.ClusterType, "bad\xff", refused) // not UTF-8
				f.c.Watch(xdsresource.ClusterType, "c2", xdsclient.WatcherFuncs{})
				// The refusal cannot run while this callback does: had it
				// been given to another lane, it would come now.
				select {
				case s := <-order:
					order <- "during the callback: " + s
				case <-time.After(50 * time.Millisecond):
				}
				order <- "callback returned"
			})
		},
	})()
	st := f.NextStream()
	f.RecvType(st, cdsURL)
	f.send(st, cdsURL, "1", controlplane.Cluster("c1", "c1"))
	expectInOrder(t, order, "callback returned", "refused: InvalidArgument")
	// The watch made from the callback is subscribed (after the ACK of c1).
	for req := f.RecvType(st, cdsURL); !slices.Contains(req.GetResourceNames(), "c2"); req = f.RecvType(st, cdsURL) {
	}
}

// expectInOrder fails t unless order gives want, in order, within the
// test's deadline.
func expectInOrder(t *testing.T, order <-chan string, want ...string) {
	t.Helper()
	for _, w := range want {
		select {
		case got := <-order:
			if got != w {
				t.Fatalf("got %q, want %q", got, w)
			}
		case <-xdstest.Context(t).Done():
			t.Fatalf("waiting for %q: timed out", w)
		}
	}
}

func TestCloseThenWatchFromWatcherCallback(t *testing.T) {
	f := newFixture(t, nil)
	order := make(chan string, 10)
	var once sync.Once
	defer f.c.Watch(xdsresource.ClusterType, "c1", xdsclient.WatcherFuncs{
		OnResourceChanged: func(*xdsclient.Resource, error) {
			once.Do(func() {
				f.c.Close()
				f.c.Watch(xdsresource.ClusterType, "c2", xdsclient.WatcherFuncs{OnResourceChanged: func(_ *xdsclient.Resource, err error) {
					if !contains(err, "closed") {
						order <- "watch after Close got " + err.Error()
						return
					}
					order <- "refused: closed"
				}})
				order <- "callback returned"
			})
		},
	})()
	st := f.NextStream()
	f.RecvType(st, cdsURL)
	f.send(st, cdsURL, "1", controlplane.Cluster("c1", "c1"))
	expectInOrder(t, order, "callback returned", "refused: closed")
}

func TestWatchAfterClose(t *testing.T) {
	f := newFixture(t, nil)
	f.c.Close()
	rec := xdstest.NewWatcher()
	cancel := f.c.Watch(xdsresource.ClusterType, "c1", rec)
	e := rec.Expect(t, xdsclient.NotifyResourceError, codes.Unavailable)
	if !contains(e.Err, "closed") || !contains(e.Err, `"c1"`) {
		t.Errorf("error %v does not say the client is closed and name the resource", e.Err)
	}
	cancel()
}

// Under churn (updates flowing while watches are cancelled from other
// goroutines), no callback of a watch runs once its cancel has returned.
func TestNoCallbackAfterCancelReturns(t *testing.T) {
	f := newFixture(t, nil)
	defer f.c.Watch(xdsresource.ClusterType, "keep", xdsclient.WatcherFuncs{})()
	st := f.NextStream()
	stop := make(chan struct{})
	var pushes sync.WaitGroup
	pushes.Go(func() {
		for v := 0; ; v++ {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := st.RecvType(f.Ctx, cdsURL); err != nil {
				return
			}
			resp := xdstest.Response(cdsURL, fmt.Sprint(v), controlplane.Cluster("keep", "k"), controlplane.Cluster("c1", fmt.Sprint("c1-", v)))
			if st.Send(resp) != nil {
				return
			}
		}
	})
	var late atomic.Int32
	var churn sync.WaitGroup
	for g := 0; g < 4; g++ {
		churn.Go(func() {
			for i := 0; i < 20; i++ {
				var cancelled atomic.Bool
				started := make(chan struct{}, 100)
				cancel := f.c.Watch(xdsresource.ClusterType, "c1", xdsclient.WatcherFuncs{
					OnResourceChanged: func(*xdsclient.Resource, error) {
						started <- struct{}{}
						for range 1000 {
							runtime.Gosched() // the cancel below runs meanwhile
						}
						if cancelled.Load() {
							late.Add(1) // this callback was still running after cancel returned
						}
					},
				})
				select {
				case <-started: // the cached resource is being delivered: cancel now
				case <-f.Ctx.Done():
					return
				}
				cancel()
				cancelled.Store(true)
			}
		})
	}
	churn.Wait()
	close(stop)
	st.End(status.Error(codes.Unavailable, "done"))
	pushes.Wait()
	if n := late.Load(); n > 0 {
		t.Fatalf("%d callbacks ran after their watch's cancel returned", n)
	}
}

// callingBack is user code that calls the client back: a resource type
// whose methods, and a slog handler whose Enabled and Handle,
// read the client's cache (Dump, which takes the client's lock). Each call
// is made on a goroutine of its own and waited for, with a deadline: were
// the lock held around the user's code, the call would not return, and
// the test reports where, instead of hanging.
type callingBack struct {
	c     atomic.Pointer[xdsclient.Client]
	mu    sync.Mutex
	stuck []string         // where a call back did not return
	calls map[string]int   // calls back that returned, by where
	wrote chan slog.Record // the log lines handled
}

func newCallingBack() *callingBack {
	return &callingBack{calls: map[string]int{}, wrote: make(chan slog.Record, 100)}
}

// callBack calls the client from where.
func (cb *callingBack) callBack(where string) {
	c := cb.c.Load()
	if c == nil {
		return
	}
	done := make(chan struct{})
	go func() { c.Dump(); close(done) }()
	select {
	case <-done:
		cb.mu.Lock()
		cb.calls[where]++
		cb.mu.Unlock()
	case <-time.After(xdstest.Timeout / 2):
		cb.mu.Lock()
		cb.stuck = append(cb.stuck, where)
		cb.mu.Unlock()
		// The call returns once the caller's code does, and the lock
		// around it is released.
	}
}

func (cb *callingBack) Enabled(context.Context, slog.Level) bool {
	cb.callBack("slog.Handler.Enabled")
	return true
}

func (cb *callingBack) Handle(_ context.Context, r slog.Record) error {
	cb.callBack("slog.Handler.Handle")
	select {
	case cb.wrote <- r:
	default:
	}
	return nil
}

func (cb *callingBack) WithAttrs([]slog.Attr) slog.Handler { return cb }
func (cb *callingBack) WithGroup(string) slog.Handler      { return cb }

// callingBackType is extensionType, reading names without decoding, and
// calling the client back from every method.
type callingBackType struct {
	extensionType
	cb *callingBack
}

func (t callingBackType) TypeURL() string {
	t.cb.callBack("xdsresource.Type.TypeURL")
	return t.extensionType.TypeURL()
}

func (t callingBackType) ShortName() string {
	t.cb.callBack("xdsresource.Type.ShortName")
	return t.extensionType.ShortName()
}

func (t callingBackType) FullState() bool {
	t.cb.callBack("xdsresource.Type.FullState")
	return t.extensionType.FullState()
}

func (t callingBackType) ReadName(b []byte) ([]byte, bool) {
	t.cb.callBack("xdsresource.NameReader.ReadName")
	return xdsresource.ReadStringField(b, 1)
}

func (t callingBackType) Decode(opts xdsresource.DecodeOptions, a *anypb.Any) (string, any, error) {
	t.cb.callBack("xdsresource.Type.Decode")
	return t.extensionType.Decode(opts, a)
}

// No user code runs under the client's lock: a resource type's methods
// (TypeURL, ShortName, FullState, ReadName, Decode), and a logger's handler,
// may call the client.
func TestUserCodeMayCallTheClient(t *testing.T) {
	cb := newCallingBack()
	f := newFixture(t, nil, xdsclient.WithLogger(slog.New(cb)))
	cb.c.Store(f.c)
	typ := callingBackType{cb: cb}
	w := xdstest.NewWatcher()
	defer f.c.Watch(typ, "ext", w)()
	st := f.NextStream()
	f.RecvType(st, extensionURL)
	cfg, _ := anypb.New(&corev3.Node{Id: "payload"})
	res := &corev3.TypedExtensionConfig{Name: "ext", TypedConfig: cfg}
	f.send(st, extensionURL, "1", res)
	w.Expect(t, xdsclient.NotifyResource, 0)
	f.RecvType(st, extensionURL) // ACK of 1
	f.send(st, extensionURL, "2", res)
	f.RecvType(st, extensionURL) // ACK of 2
	// A late watcher has the held bytes decoded for it.
	late := xdstest.NewWatcher()
	defer f.c.Watch(typ, "ext", late)()
	late.Expect(t, xdsclient.NotifyResource, 0)
	// A response of a type never subscribed is logged.
	f.send(st, cdsURL, "1", controlplane.Cluster("c1", "c1"))
	select {
	case r := <-cb.wrote:
		if !strings.Contains(r.Message, "never subscribed") {
			t.Errorf("log line %q, want the one of a type never subscribed", r.Message)
		}
	case <-xdstest.Context(t).Done():
		t.Fatal("no log line for a response of a type never subscribed")
	}

	cb.mu.Lock()
	defer cb.mu.Unlock()
	if len(cb.stuck) > 0 {
		t.Errorf("calls to the client from %v did not return: user code ran under the client's lock", cb.stuck)
	}
	for _, where := range []string{
		"xdsresource.Type.TypeURL", "xdsresource.Type.ShortName", "xdsresource.Type.FullState",
		"xdsresource.NameReader.ReadName", "xdsresource.Type.Decode", "slog.Handler.Enabled", "slog.Handler.Handle",
	} {
		if cb.calls[where] == 0 {
			t.Errorf("%s never called the client back", where)
		}
	}
}
