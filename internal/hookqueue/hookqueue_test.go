package hookqueue

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/xdslens/xdslens/internal/testing/testmain"
)

func TestMain(m *testing.M) { testmain.Run(m) }

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// Calls run in the order posted, one at a time, off the poster's
// goroutine, and all of them run.
func TestOrder(t *testing.T) {
	var q Queue
	var mu sync.Mutex
	var got []int
	running := 0
	done := make(chan struct{})
	const n = 100
	for i := range n {
		q.Post(func() {
			mu.Lock()
			running++
			if running > 1 {
				t.Error("two calls at once")
			}
			got = append(got, i)
			mu.Unlock()
			mu.Lock()
			running--
			mu.Unlock()
			if i == n-1 {
				close(done)
			}
		})
	}
	select {
	case <-done:
	case <-testContext(t).Done():
		t.Fatal("the last call never ran")
	}
	q.Close()
	mu.Lock()
	defer mu.Unlock()
	for i, v := range got {
		if v != i {
			t.Fatalf("call %d ran in place %d", v, i)
		}
	}
}

// Close on an idle queue returns at once; later calls run on their
// caller.
func TestCloseIdle(t *testing.T) {
	var q Queue
	q.Close()
	inline := false
	q.Post(func() { inline = true })
	if !inline {
		t.Error("a call posted after Close did not run on its caller")
	}
}

// A call that blocks holds back the later ones, not the poster.
func TestPostDoesNotWait(t *testing.T) {
	var q Queue
	release := make(chan struct{})
	q.Post(func() { <-release })
	ran := make(chan struct{})
	q.Post(func() { close(ran) })
	select {
	case <-ran:
		t.Fatal("a call ran before the one posted before it returned")
	default:
	}
	close(release)
	select {
	case <-ran:
	case <-testContext(t).Done():
		t.Fatal("the second call never ran")
	}
	q.Close()
}

// Close from a call returns at once; the calls posted before it run once
// that call returns, and those posted after Close run on their caller.
func TestCloseFromACall(t *testing.T) {
	var q Queue
	ctx := testContext(t)
	closed := make(chan struct{})
	q.Post(func() {
		q.Close()
		close(closed)
	})
	later := make(chan struct{})
	q.Post(func() { close(later) })
	for _, c := range []chan struct{}{closed, later} {
		select {
		case <-c:
		case <-ctx.Done():
			t.Fatal("Close from a call never returned, or the call after it never ran")
		}
	}
	q.mu.Lock()
	idle := q.idle
	q.mu.Unlock()
	select {
	case <-idle:
	case <-ctx.Done():
		t.Fatal("the queue's goroutine never ended")
	}
	inline := false
	q.Post(func() { inline = true })
	if !inline {
		t.Error("a call posted after Close did not run on its caller")
	}
}
