package xdsclient_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/xdslens/xdslens/xdsclient"
	"github.com/xdslens/xdslens/xdsclient/bootstrap"
)

const testNodeID = "test-node"

// testTimeout bounds every wait in these tests.
const testTimeout = 10 * time.Second

// bootstrapFor returns a bootstrap config with one insecure server.
func bootstrapFor(t testing.TB, addr string, features ...string) *bootstrap.Config {
	t.Helper()
	fs := ""
	if len(features) > 0 {
		fs = `, "server_features": ["` + strings.Join(features, `", "`) + `"]`
	}
	cfg, err := bootstrap.Parse([]byte(fmt.Sprintf(`{
		"xds_servers": [{"server_uri": %q, "channel_creds": [{"type": "insecure"}]%s}],
		"node": {"id": %q}
	}`, addr, fs, testNodeID)))
	if err != nil {
		t.Fatalf("bootstrap: %v", err)
	}
	return cfg
}

// newClient makes a client whose backoff and timers suit tests and closes
// it at the end of the test.
func newClient(t testing.TB, cfg *bootstrap.Config, opts ...xdsclient.Option) *xdsclient.Client {
	t.Helper()
	base := []xdsclient.Option{
		xdsclient.WithTarget("test-target"),
		xdsclient.WithBackoff(func(int) time.Duration { return 10 * time.Millisecond }),
		xdsclient.WithLegacyDataErrorHandling(false),
		xdsclient.WithLogger(slog.New(slog.DiscardHandler)),
	}
	c, err := xdsclient.New(cfg, append(base, opts...)...)
	if err != nil {
		t.Fatalf("xdsclient.New: %v", err)
	}
	t.Cleanup(c.Close)
	return c
}

// event is one watcher callback, as recorded by recorder.
type event struct {
	kind xdsclient.NotificationKind
	res  *xdsclient.Resource
	err  error
}

func (e event) String() string {
	switch e.kind {
	case xdsclient.NotifyResource:
		return fmt.Sprintf("resource(%s@%s)", e.res.Name, e.res.Version)
	default:
		return fmt.Sprintf("%s(%s: %v)", e.kind, status.Code(e.err), e.err)
	}
}

// recorder is a Watcher that records its callbacks and lets a test wait for
// the next one.
type recorder struct {
	ch chan event
}

func newRecorder() *recorder { return &recorder{ch: make(chan event, 1000)} }

func (r *recorder) ResourceChanged(res *xdsclient.Resource, err error) {
	if err != nil {
		r.ch <- event{kind: xdsclient.NotifyResourceError, err: err}
		return
	}
	r.ch <- event{kind: xdsclient.NotifyResource, res: res}
}

func (r *recorder) AmbientError(err error) {
	r.ch <- event{kind: xdsclient.NotifyAmbientError, err: err}
}

// next waits for the next callback.
func (r *recorder) next(t testing.TB) event {
	t.Helper()
	select {
	case e := <-r.ch:
		return e
	case <-time.After(testTimeout):
		t.Fatalf("no watcher callback within %v", testTimeout)
		return event{}
	}
}

// expect waits for the next callback and checks its kind and, for errors,
// its code.
func (r *recorder) expect(t testing.TB, kind xdsclient.NotificationKind, code codes.Code) event {
	t.Helper()
	e := r.next(t)
	if e.kind != kind {
		t.Fatalf("got %v, want a %v callback", e, kind)
	}
	if kind != xdsclient.NotifyResource && status.Code(e.err) != code {
		t.Fatalf("got %v, want code %v", e, code)
	}
	return e
}

// expectNone checks that no callback is queued after the client has had the
// chance to deliver one: it waits for a barrier event that the test makes
// the client deliver later, through another watcher.
func (r *recorder) empty(t testing.TB) {
	t.Helper()
	select {
	case e := <-r.ch:
		t.Fatalf("unexpected watcher callback %v", e)
	default:
	}
}

// hookLog records hook events of one kind for assertions.
type hookLog[T any] struct {
	mu   sync.Mutex
	all  []T
	wake chan struct{}
}

func newHookLog[T any]() *hookLog[T] { return &hookLog[T]{wake: make(chan struct{}, 1)} }

func (l *hookLog[T]) add(v T) {
	l.mu.Lock()
	l.all = append(l.all, v)
	l.mu.Unlock()
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

func (l *hookLog[T]) snapshot() []T {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]T(nil), l.all...)
}

// waitFor waits until some recorded event satisfies cond.
func (l *hookLog[T]) waitFor(t testing.TB, what string, cond func(T) bool) T {
	t.Helper()
	deadline := time.NewTimer(testTimeout)
	defer deadline.Stop()
	for {
		for _, v := range l.snapshot() {
			if cond(v) {
				return v
			}
		}
		select {
		case <-l.wake:
		case <-deadline.C:
			t.Fatalf("timed out waiting for %s; saw %+v", what, l.snapshot())
		}
	}
}

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	t.Cleanup(cancel)
	return ctx
}

func toMessages(in []any) []proto.Message {
	out := make([]proto.Message, len(in))
	for i, m := range in {
		out[i] = m.(proto.Message)
	}
	return out
}

func errUnavailable(msg string) error { return status.Error(codes.Unavailable, msg) }
