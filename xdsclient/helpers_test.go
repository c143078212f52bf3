package xdsclient_test

import (
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/xdslens/xdslens/internal/testing/xdstest"
	"github.com/xdslens/xdslens/xdsclient"
	"github.com/xdslens/xdslens/xdsclient/bootstrap"
)

const (
	testNodeID = "test-node"
	// testNode is the node of the bootstrap configs, as JSON.
	testNode = `{"id": "` + testNodeID + `"}`
)

// bootstrapFor returns a bootstrap config with one insecure server.
func bootstrapFor(t testing.TB, addr string, features ...string) *bootstrap.Config {
	t.Helper()
	return xdstest.Bootstrap{Servers: []string{addr}, Features: features, Node: testNode}.Parse(t)
}

// newClient makes a client whose backoff and timers suit tests and closes
// it at the end of the test.
func newClient(t testing.TB, cfg *bootstrap.Config, opts ...xdsclient.Option) *xdsclient.Client {
	t.Helper()
	return xdstest.NewClient(t, cfg, xdstest.ClientOptions(append([]xdsclient.Option{xdsclient.WithTarget("test-target")}, opts...)...)...)
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
	deadline := time.NewTimer(xdstest.Timeout)
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

func toMessages(in []any) []proto.Message {
	out := make([]proto.Message, len(in))
	for i, m := range in {
		out[i] = m.(proto.Message)
	}
	return out
}

func errUnavailable(msg string) error { return status.Error(codes.Unavailable, msg) }
