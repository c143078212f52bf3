package cache_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/xdslens/xdslens/xdsclient/internal/cache"
	"github.com/xdslens/xdslens/xdsclient/internal/txn"
)

// sent tells the cache that the subscriptions of names went out on a
// stream of the rig's server, as its Server does.
func (r *rig) sent(names ...string) {
	tx := r.mu.Lock()
	defer tx.Unlock()
	for _, name := range names {
		r.c.Sent(tx, r.src, r.kind(name), []string{name})
	}
}

// locked runs f with the lock held.
func (r *rig) locked(f func(tx *txn.Tx)) {
	tx := r.mu.Lock()
	defer tx.Unlock()
	f(tx)
}

// next returns the next thing a watcher hears, failing if none comes.
func (r *rig) next() string {
	r.t.Helper()
	select {
	case n := <-r.noted:
		return n
	case <-time.After(10 * time.Second):
		r.t.Fatal("watchers heard nothing")
		return ""
	}
}

// The does-not-exist timer (gRFC A57, A88), as the cache runs it: when it
// starts and stops, which events its observer sees.
func TestTimerStartsAndStops(t *testing.T) {
	const (
		start = "start c1 on xds.test:443"
		stop  = "stop c1 on xds.test:443"
	)
	for _, tc := range []struct {
		row  string
		do   func(r *rig)
		want []string
	}{
		{"the subscription sent: it starts", func(r *rig) { r.sent("c1") }, []string{start}},
		{"sent twice: it starts once", func(r *rig) { r.sent("c1"); r.sent("c1") }, []string{start}},
		{"a response carries the resource: it stops", func(r *rig) {
			r.sent("c1")
			r.apply(sotw(r.t, cdsURL, "1", valid("c1")))
		}, []string{start, stop}},
		{"a response carries a TP3 error for it: it stops", func(r *rig) {
			r.sent("c1")
			r.apply(withErrors(sotw(r.t, cdsURL, "1"), tp3("c1", codes.Unavailable)))
		}, []string{start, stop}},
		{"a response without it: it runs on", func(r *rig) {
			r.sent("c1")
			r.apply(sotw(r.t, cdsURL, "1", valid("c2")))
		}, []string{start}},
		{"the resource received: sending it again starts nothing", func(r *rig) {
			r.apply(sotw(r.t, cdsURL, "1", valid("c1")))
			r.sent("c1")
		}, nil},
		{"the server's timers stopped (its stream ended)", func(r *rig) {
			r.sent("c1")
			r.locked(func(tx *txn.Tx) { r.c.StopTimers(tx, r.src) })
		}, []string{start, stop}},
		{"the server closed: it stops, and never starts again", func(r *rig) {
			r.sent("c1")
			r.locked(func(tx *txn.Tx) { r.c.CloseSource(tx, r.src) })
			r.sent("c1")
		}, []string{start, stop}},
		{"the entry removed: it stops", func(r *rig) {
			r.sent("c1")
			r.locked(func(tx *txn.Tx) { r.c.Remove(tx, r.entries["c1"]) })
		}, []string{start, stop}},
		{"the group moves to another server: it stops; sent on the old one, it does not start", func(r *rig) {
			r.sent("c1")
			r.locked(func(tx *txn.Tx) { r.c.SetActive(tx, r.g, r.c.NewSource()) })
			r.sent("c1")
		}, []string{start, stop}},
		{"a server failure: nothing changes for the timer", func(r *rig) {
			r.sent("c1")
			r.locked(func(tx *txn.Tx) { r.c.Unreachable(tx, r.g, "down") })
		}, []string{start}},
	} {
		t.Run(tc.row, func(t *testing.T) {
			r := newRig(t, cache.Features{}, 0, "c1", "c2")
			tc.do(r)
			if got := slices.DeleteFunc(r.ev.take(), func(s string) bool { return !strings.Contains(s, " c1 ") }); !slices.Equal(got, tc.want) {
				t.Errorf("timer events %q, want %q", got, tc.want)
			}
		})
	}
}

// The timer fires: the resource does not exist (NOT_FOUND), or, with
// resource_timer_is_transient_error, it timed out (UNAVAILABLE), which
// legacy mode does not use; the error says which, and after how long.
func TestTimerFires(t *testing.T) {
	for _, tc := range []struct {
		row   string
		f     cache.Features
		state cache.State
		heard string
		says  string
	}{
		{"does not exist", cache.Features{}, cache.StateDoesNotExist, "c1 error NotFound", "does not exist: not received within 5ms of subscribing"},
		{"resource_timer_is_transient_error: timeout", cache.Features{TransientTimer: true}, cache.StateTimeout, "c1 error Unavailable",
			"not received within 5ms of subscribing (resource_timer_is_transient_error: the server may be slow)"},
		{"legacy: resource_timer_is_transient_error not used", cache.Features{Legacy: true, TransientTimer: true}, cache.StateDoesNotExist, "c1 error NotFound", "does not exist"},
	} {
		t.Run(tc.row, func(t *testing.T) {
			r := newRig(t, tc.f, 5*time.Millisecond, "c1")
			r.sent("c1")
			if got := r.next(); got != tc.heard {
				t.Fatalf("watcher heard %q, want %q", got, tc.heard)
			}
			var err error
			r.locked(func(tx *txn.Tx) { err = r.entries["c1"].Err(tx) })
			if s, cached := r.state("c1"); s != tc.state || cached {
				t.Errorf("c1 %v (cached %v), want %v, not cached", s, cached, tc.state)
			}
			if err == nil || !strings.Contains(err.Error(), tc.says) || !strings.Contains(err.Error(), `node ID "node-1"`) {
				t.Errorf("c1's error %v, want it to say %q and name the node", err, tc.says)
			}
		})
	}
}

// A timer stopped and started again on a server whose other timers run
// on (its authority fell back and switched back, while another authority
// stayed) fires once, a whole timeout after its new start: the slot of its
// first start, due earlier, is skipped.
func TestTimerRestarted(t *testing.T) {
	const timeout = 40 * time.Millisecond
	r := newRig(t, cache.Features{}, timeout, "c1")
	r.locked(func(tx *txn.Tx) {
		other := cache.NewGroup(tx, "other", r.src)
		e := r.c.Add(tx, r.cds, "c2", other)
		r.c.Watch(tx, e, &cache.Watcher{Sink: "c2"}, nil, nil, "")
		r.entries["c2"] = e
	})
	r.sent("c1", "c2")
	r.locked(func(tx *txn.Tx) { r.c.SetActive(tx, r.g, r.c.NewSource()) })
	// Half the timeout passes before the switch back, so that the first
	// start's slot comes due well before the restarted timer may fire.
	time.Sleep(timeout / 2)
	restart := time.Now()
	r.locked(func(tx *txn.Tx) { r.c.SetActive(tx, r.g, r.src) })
	r.sent("c1")
	if got := r.next(); got != "c2 error NotFound" {
		t.Fatalf("watchers heard %q first, want c2's NOT_FOUND", got)
	}
	if got := r.next(); got != "c1 error NotFound" {
		t.Fatalf("watchers heard %q, want c1's NOT_FOUND", got)
	}
	if waited := time.Since(restart); waited < timeout {
		t.Fatalf("c1's restarted timer fired %v after the restart, before the timeout of %v", waited, timeout)
	}
	if got := r.heard(); len(got) != 0 {
		t.Fatalf("watchers heard %q after the timers fired, want nothing", got)
	}
}
