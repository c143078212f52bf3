package xdstest

import (
	"fmt"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/xdslens/xdslens/xdsclient"
)

// Callback is one callback of a [Watcher].
type Callback struct {
	// Kind tells which callback it was: ResourceChanged with a resource or
	// with an error, or AmbientError.
	Kind xdsclient.NotificationKind
	// Resource is the resource of xdsclient.NotifyResource.
	Resource *xdsclient.Resource
	// Err is the error of the other kinds.
	Err error
}

// String describes the callback, with the version of its resource or the
// code and text of its error.
func (c Callback) String() string {
	if c.Kind == xdsclient.NotifyResource {
		return fmt.Sprintf("resource(%s@%s)", c.Resource.Name, c.Resource.Version)
	}
	return fmt.Sprintf("%s(%s: %v)", c.Kind, status.Code(c.Err), c.Err)
}

// watcherBuffer is how many callbacks a Watcher holds before the client
// blocks in them.
const watcherBuffer = 1000

// Watcher is an xdsclient.Watcher that records its callbacks, in order, for
// a test to take one at a time with [Watcher.Next] or [Watcher.Expect].
type Watcher struct {
	ch chan Callback
}

// NewWatcher returns a Watcher with no callback recorded.
func NewWatcher() *Watcher { return &Watcher{ch: make(chan Callback, watcherBuffer)} }

// ResourceChanged records a callback of kind xdsclient.NotifyResource, or
// xdsclient.NotifyResourceError if err is not nil.
func (w *Watcher) ResourceChanged(res *xdsclient.Resource, err error) {
	if err != nil {
		w.ch <- Callback{Kind: xdsclient.NotifyResourceError, Err: err}
		return
	}
	w.ch <- Callback{Kind: xdsclient.NotifyResource, Resource: res}
}

// AmbientError records a callback of kind xdsclient.NotifyAmbientError.
func (w *Watcher) AmbientError(err error) {
	w.ch <- Callback{Kind: xdsclient.NotifyAmbientError, Err: err}
}

// Next takes the oldest callback not yet taken, waiting up to [Timeout] for
// one, and fails t if none comes.
func (w *Watcher) Next(t testing.TB) Callback {
	t.Helper()
	return w.NextWithin(t, Timeout)
}

// NextWithin is Next with a wait of d, for events that a test cannot make
// come sooner (a keepalive of gRPC's minimum interval).
func (w *Watcher) NextWithin(t testing.TB, d time.Duration) Callback {
	t.Helper()
	select {
	case c := <-w.ch:
		return c
	case <-time.After(d):
		t.Fatalf("no watcher callback within %v", d)
		return Callback{}
	}
}

// Expect takes the next callback as Next does and fails t unless it is of
// kind and, for an error, has code as its gRPC status code.
func (w *Watcher) Expect(t testing.TB, kind xdsclient.NotificationKind, code codes.Code) Callback {
	t.Helper()
	c := w.Next(t)
	if c.Kind != kind {
		t.Fatalf("got %v, want a %v callback", c, kind)
	}
	if kind != xdsclient.NotifyResource && status.Code(c.Err) != code {
		t.Fatalf("got %v, want code %v", c, code)
	}
	return c
}

// ExpectNone fails t if a callback is waiting to be taken. It does not
// wait: a test calls it once the client has had the chance to deliver a
// callback, for example after a later event that the client reported.
func (w *Watcher) ExpectNone(t testing.TB) {
	t.Helper()
	select {
	case c := <-w.ch:
		t.Fatalf("unexpected watcher callback %v", c)
	default:
	}
}
