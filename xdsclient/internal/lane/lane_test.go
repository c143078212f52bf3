package lane

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/xdslens/xdslens/internal/testing/testmain"
	"github.com/xdslens/xdslens/xdsclient/internal/txn"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m, goleak.Cleanup(testmain.Exit)) }

// rec is a watcher record that logs its callbacks.
type rec struct {
	Watch
	name string
}

// fixture is a client lock and a log of what lanes ran.
type fixture struct {
	mu  txn.Mutex
	set Set
	log chan string
}

func newFixture() *fixture { return &fixture{log: make(chan string, 100)} }

func (f *fixture) lane(t *testing.T, ctx context.Context) *Lane[*rec] {
	t.Helper()
	return New(&f.set, ctx, func(w *rec, payload any, err error, ambient bool) {
		f.log <- fmt.Sprintf("%s:%v", w.name, payload)
	})
}

func (f *fixture) expect(t *testing.T, want ...string) {
	t.Helper()
	var got []string
	for range want {
		select {
		case s := <-f.log:
			got = append(got, s)
		case <-time.After(10 * time.Second):
			t.Fatalf("ran %v, want %v", got, want)
		}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("ran %v, want %v", got, want)
	}
}

// wait waits for ch, or fails.
func wait(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
	}
}

// Hooks and callbacks run in the order posted; callbacks held during a
// response run after the hooks posted meanwhile.
func TestOrderAndHold(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f := newFixture()
	l := f.lane(t, ctx)
	w := &rec{name: "w"}
	tx := f.mu.Lock()
	l.Hook(tx, func() { f.log <- "hook1" })
	l.Hold(tx)
	l.Grow(tx, 2)
	l.Notify(tx, w, 1, nil, false)
	l.Hook(tx, func() { f.log <- "hook2" })
	l.Notify(tx, w, 2, nil, false)
	l.Hook(tx, func() { f.log <- "response" })
	l.Release(tx)
	done := l.Barrier(tx)
	tx.Unlock()
	f.expect(t, "hook1", "hook2", "response", "w:1", "w:2")
	wait(t, done, "barrier")
	cancel()
	wait(t, l.Done(), "lane end")
}

// A blocked callback holds back its own lane only; a fence makes a lane
// wait for what another had been given.
func TestLanesIndependentAndFence(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f := newFixture()
	a, b := f.lane(t, ctx), f.lane(t, ctx)
	block := make(chan struct{})
	tx := f.mu.Lock()
	a.Hook(tx, func() { <-block })
	a.Hook(tx, func() { f.log <- "a after block" })
	b.Hook(tx, func() { f.log <- "b runs" })
	tx.Unlock()
	f.expect(t, "b runs")

	tx = f.mu.Lock()
	b.Fence(tx, a)
	b.Hook(tx, func() { f.log <- "b after fence" })
	tx.Unlock()
	select {
	case s := <-f.log:
		t.Fatalf("%q ran before the fenced lane a was through", s)
	case <-time.After(50 * time.Millisecond):
	}
	close(block)
	f.expect(t, "a after block", "b after fence")
	cancel()
	wait(t, a.Done(), "lane a end")
	wait(t, b.Done(), "lane b end")
}

// Cancel then Wait returns once the running callback is over, from another
// goroutine; from the callback itself Wait returns at once.
func TestCancelWaitsForRunningCallback(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var (
		mu      txn.Mutex
		entered = make(chan struct{})
		release = make(chan struct{})
		calls   sync.WaitGroup
		self    *rec
		set     Set
	)
	l := New(&set, ctx, func(w *rec, payload any, err error, ambient bool) {
		switch payload {
		case "block":
			close(entered)
			<-release
		case "self":
			w.Cancel()
			w.Wait(&set) // must not wait for itself
		}
		calls.Done()
	})
	w := &rec{name: "w"}
	calls.Add(1)
	tx := mu.Lock()
	l.Notify(tx, w, "block", nil, false)
	tx.Unlock()
	wait(t, entered, "callback start")
	waited := make(chan struct{})
	go func() {
		w.Cancel()
		w.Wait(&set)
		close(waited)
	}()
	select {
	case <-waited:
		t.Fatal("Wait returned while the callback ran")
	case <-time.After(50 * time.Millisecond):
	}
	close(release)
	wait(t, waited, "Wait")
	calls.Wait()

	self = &rec{name: "self"}
	calls.Add(1)
	tx = mu.Lock()
	l.Notify(tx, self, "self", nil, false)
	l.Notify(tx, self, "after cancel", nil, false) // not run: cancelled
	done := l.Barrier(tx)
	tx.Unlock()
	wait(t, done, "barrier")
	calls.Wait()
	cancel()
	wait(t, l.Done(), "lane end")
}

// Once the client is closed, hooks and Calls still run, Notify callbacks
// do not; what is posted after the lane ended runs on a drain goroutine.
func TestClosedClient(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	f := newFixture()
	l := f.lane(t, ctx)
	cancel()
	wait(t, l.Done(), "lane end")
	w := &rec{name: "w"}
	tx := f.mu.Lock()
	l.Notify(tx, w, 1, nil, false)
	l.Hook(tx, func() { f.log <- "hook" })
	l.Call(tx, w, func() { f.log <- "refused" })
	done := l.Barrier(tx)
	tx.Unlock()
	f.expect(t, "hook", "refused")
	wait(t, done, "barrier")
}

// A closed lane runs what it had, and later posts on a drain goroutine,
// watcher callbacks included while the client is open.
func TestCloseLane(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f := newFixture()
	l := f.lane(t, ctx)
	w := &rec{name: "w"}
	tx := f.mu.Lock()
	l.Notify(tx, w, 1, nil, false)
	l.Close(tx)
	l.Notify(tx, w, 2, nil, false)
	tx.Unlock()
	f.expect(t, "w:1", "w:2")
	wait(t, l.Done(), "lane end")
	tx = f.mu.Lock()
	l.Notify(tx, w, 3, nil, false)
	done := l.Barrier(tx)
	tx.Unlock()
	f.expect(t, "w:3")
	wait(t, done, "barrier")
}

// TestGrowRoomForBarrier: the callbacks of a large response, held with
// room made by Grow, become the lane's queue as they are, with the
// barrier posted after them: the queue of n callbacks is allocated once,
// not copied to make room for the barrier.
func TestGrowRoomForBarrier(t *testing.T) {
	f := newFixture()
	ctx, cancel := context.WithCancel(context.Background())
	defer func() { cancel(); f.set.Wait() }()
	l := New(&f.set, ctx, func(*rec, any, error, bool) {})
	ws := make([]*rec, 1000)
	for i := range ws {
		ws[i] = &rec{name: fmt.Sprint(i)}
	}
	allocs := testing.AllocsPerRun(20, func() {
		tx := f.mu.Lock()
		l.Hold(tx)
		l.Grow(tx, len(ws))
		for _, w := range ws {
			l.Notify(tx, w, nil, nil, false)
		}
		l.Release(tx)
		ch := l.Barrier(tx)
		tx.Unlock()
		<-ch
	})
	// The queue (Grow) and the barrier's channel.
	if allocs > 2 {
		t.Errorf("a held response and its barrier: %v allocations, want 2", allocs)
	}
}

// Current names the lane the caller runs on, from a hook or a callback,
// whatever the other lanes run at the same moment; nil outside any. A
// lane's later goroutine (the drain goroutine of a closed lane) is
// recognised as well as its first, from a hook as from a callback that
// cancels itself.
func TestCurrentIsTheCallersLane(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var (
		mu   txn.Mutex
		set  Set
		seen = make(chan string, 10)
	)
	both := make(chan struct{}, 2) // each hook says it runs, then waits for the other
	release := make(chan struct{})
	var a, b *Lane[*rec]
	name := func(l any) string {
		switch l {
		case a:
			return "a"
		case b:
			return "b"
		case nil:
			return "none"
		}
		return "another"
	}
	run := func(w *rec, payload any, err error, ambient bool) {
		seen <- fmt.Sprintf("callback %s on %s", w.name, name(set.Current()))
		if payload == "self" {
			w.Cancel()
			w.Wait(&set) // its own callback: must not wait for itself
		}
	}
	a, b = New(&set, ctx, run), New(&set, ctx, run)
	hook := func(who string) func() {
		return func() {
			both <- struct{}{}
			<-release
			seen <- fmt.Sprintf("hook %s on %s", who, name(set.Current()))
		}
	}
	tx := mu.Lock()
	a.Hook(tx, hook("a"))
	b.Hook(tx, hook("b"))
	tx.Unlock()
	for range 2 {
		select {
		case <-both:
		case <-time.After(10 * time.Second):
			t.Fatal("the hooks never ran")
		}
	}
	if got := set.Current(); got != nil {
		t.Errorf("Current outside the lanes, both running a hook = %s", name(got))
	}
	close(release)
	var got []string
	for range 2 {
		got = append(got, <-seen)
	}
	slices.Sort(got)
	if want := []string{"hook a on a", "hook b on b"}; !slices.Equal(got, want) {
		t.Errorf("hooks saw %q, want %q", got, want)
	}

	// a closed: what is posted later runs on a drain goroutine of a.
	tx = mu.Lock()
	a.Close(tx)
	tx.Unlock()
	wait(t, a.Done(), "lane a end")
	w := &rec{name: "w"}
	tx = mu.Lock()
	a.Hook(tx, func() { seen <- "drain hook on " + name(set.Current()) })
	a.Notify(tx, w, "self", nil, false)
	a.Notify(tx, w, "after cancel", nil, false)
	done := a.Barrier(tx)
	tx.Unlock()
	wait(t, done, "the drain goroutine's barrier")
	close(seen)
	got = got[:0]
	for s := range seen {
		got = append(got, s)
	}
	if want := []string{"drain hook on a", "callback w on a"}; !slices.Equal(got, want) {
		t.Errorf("the drain goroutine saw %q, want %q", got, want)
	}
}

// A cancel that finds no callback of its watcher running, and Running
// outside the lanes, allocate nothing.
func TestReentryChecksAllocateNothing(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var set Set
	defer func() { cancel(); set.Wait() }()
	for range 3 {
		New(&set, ctx, func(*rec, any, error, bool) {})
	}
	w := &rec{name: "w"}
	w.Cancel()
	if n := testing.AllocsPerRun(100, func() { w.Wait(&set) }); n != 0 {
		t.Errorf("Wait allocates %v times", n)
	}
	if n := testing.AllocsPerRun(100, func() { set.Running() }); n != 0 {
		t.Errorf("Running allocates %v times", n)
	}
}
