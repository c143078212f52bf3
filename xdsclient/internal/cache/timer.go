package cache

import (
	"fmt"
	"time"

	"github.com/xdslens/xdslens/xdsclient/internal/txn"
)

// timers are the does-not-exist timers of one Source. They share one
// runtime timer, wheel, set for the first slot of q: every timer of a
// source lasts as long, so the order they start in is the order they fire
// in. Slots of stopped timers are skipped when they come due.
type timers struct {
	q      []timerSlot
	wheel  *time.Timer
	timed  map[*Entry]struct{}
	closed bool
}

// timerSlot is the timer of e started as generation gen, due at at.
type timerSlot struct {
	e   *Entry
	gen uint32
	at  time.Time
}

// startTimer starts e's timer on src, the server it uses, unless it runs.
func (c *Cache) startTimer(tx *txn.Tx, e *Entry, src *Source) {
	t := src.t.Of(tx)
	if e.timing || e.removed || t.closed || e.group.Active(tx) != src {
		return
	}
	e.timerGen++
	e.timing = true
	now := tx.Now()
	t.q = append(t.q, timerSlot{e: e, gen: e.timerGen, at: now.Add(src.Timeout)})
	if len(t.q) == 1 {
		if t.wheel == nil {
			t.wheel = time.AfterFunc(src.Timeout, func() { c.onWheel(src) })
		} else {
			t.wheel.Reset(src.Timeout)
		}
	}
	if t.timed == nil {
		t.timed = map[*Entry]struct{}{}
	}
	t.timed[e] = struct{}{}
	c.cfg.Observer.TimerStarted(tx, e, src)
}

// stopTimer stops e's timer if it runs on src.
func (c *Cache) stopTimer(tx *txn.Tx, e *Entry, src *Source) {
	if !e.timing || src == nil {
		return
	}
	t := src.t.Of(tx)
	if _, ok := t.timed[e]; !ok {
		return
	}
	e.timing = false
	e.timerGen++
	t.untime(e)
	c.cfg.Observer.TimerStopped(tx, e, src)
}

// untime removes e from t.timed. Once no timer runs, the slots left are
// stale and the wheel need not fire; the map is dropped too, since after a
// large subscription it would keep room for every entry.
func (t *timers) untime(e *Entry) {
	delete(t.timed, e)
	if len(t.timed) == 0 {
		t.timed = nil
		t.q = nil
		if t.wheel != nil {
			t.wheel.Stop()
		}
	}
}

// onWheel fires the timers of src that are due, then sets the wheel for
// the next slot.
func (c *Cache) onWheel(src *Source) {
	tx := c.cfg.Mutex.Lock()
	defer tx.Unlock()
	t := src.t.Of(tx)
	if t.closed {
		return
	}
	now := tx.Now()
	for len(t.q) > 0 && !t.q[0].at.After(now) {
		s := t.q[0]
		t.q[0] = timerSlot{}
		t.q = t.q[1:]
		if _, ok := t.timed[s.e]; ok {
			c.fire(tx, s.e, s.gen, src)
		}
	}
	if len(t.q) > 0 {
		t.wheel.Reset(t.q[0].at.Sub(now))
	}
}

// fire fires e's timer started as generation gen on src.
func (c *Cache) fire(tx *txn.Tx, e *Entry, gen uint32, src *Source) {
	if e.removed || !e.timing || e.timerGen != gen {
		return
	}
	e.timing = false
	src.t.Of(tx).untime(e)
	cause := fmt.Sprintf("does not exist: not received within %v of subscribing", src.Timeout)
	if src.Transient {
		cause = fmt.Sprintf("not received within %v of subscribing (resource_timer_is_transient_error: the server may be slow)", src.Timeout)
	}
	c.apply(tx, e, event{kind: evTimer}, details{cause: cause})
}

// Sent starts the timers of the names of k just subscribed on a stream of
// src, if gRFC A57 allows: the caller has checked that the stream is
// current and the channel seen READY; the entry must use src and have
// received nothing (transition).
func (c *Cache) Sent(tx *txn.Tx, src *Source, k *Kind, names []string) {
	for _, name := range names {
		if e := k.table.get(name); e != nil && e.group.Active(tx) == src {
			c.apply(tx, e, event{kind: evSent}, details{})
		}
	}
}

// StopTimers stops every timer running on src.
func (c *Cache) StopTimers(tx *txn.Tx, src *Source) {
	for e := range src.t.Of(tx).timed {
		c.stopTimer(tx, e, src)
	}
}

// CloseSource stops src's timers for good: its server is no longer used.
func (c *Cache) CloseSource(tx *txn.Tx, src *Source) {
	c.StopTimers(tx, src)
	src.t.Of(tx).closed = true
}
