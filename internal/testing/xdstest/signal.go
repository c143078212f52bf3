package xdstest

import (
	"context"
	"sync"
	"testing"
)

// signal wakes every goroutine waiting on it. A waiter takes the channel
// from wait before it checks its condition, so a change made after the
// check always closes that channel.
type signal struct {
	mu sync.Mutex
	ch chan struct{}
}

// wait returns a channel that is closed at the next notify.
func (s *signal) wait() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ch == nil {
		s.ch = make(chan struct{})
	}
	return s.ch
}

// notify wakes all current waiters.
func (s *signal) notify() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ch != nil {
		close(s.ch)
		s.ch = nil
	}
}

// anyChange is notified on every event of every ADSServer in the process
// and by Notify; WaitFor waits on it.
var anyChange signal

// Notify wakes every [WaitFor] in the process so that it evaluates its
// condition again. Servers in this package call it on every event (a
// stream opening or ending, a request arriving, a response sent, a stop or
// restart); call it also from hooks whose state a WaitFor condition reads,
// such as a client's event hooks.
func Notify() { anyChange.notify() }

// WaitFor blocks until cond returns true, evaluating it once at the start
// and again after each [Notify]. If ctx ends first it fails the test with a
// message naming what, so it must be called from the test's goroutine.
// cond must be cheap and safe to call concurrently with the code it
// observes. Spurious wake-ups from unrelated servers only cost an extra
// evaluation.
func WaitFor(t testing.TB, ctx context.Context, what string, cond func() bool) {
	t.Helper()
	if !Until(ctx, cond) {
		t.Fatalf("xdstest: gave up waiting for %s: %v", what, context.Cause(ctx))
	}
}

// Until blocks until cond returns true or ctx ends, evaluating cond as
// [WaitFor] does, and reports whether cond held. It does not fail the test,
// so that the caller can say what it saw instead, and it may be called from
// any goroutine.
func Until(ctx context.Context, cond func() bool) bool {
	for {
		woken := anyChange.wait()
		if cond() {
			return true
		}
		select {
		case <-woken:
		case <-ctx.Done():
			return false
		}
	}
}
