package cache

import (
	"time"

	"github.com/xdslens/xdslens/xdsclient/internal/txn"
)

// timers are the does-not-exist timers of one Source. They share one
// runtime timer, wheel, set for the first slot of q: every timer of a
// source lasts as long, so the order they start in is the order they fire
// in. Slots of stopped timers are skipped when they come due.
type timers struct {
	q     []timerSlot
	wheel *time.Timer
	// timed holds the entries whose timer runs, with the generation it
	// was started as: a slot of another generation is stale.
	timed  map[*Entry]uint32
	gen    uint32 // counts the starts
	closed bool
}

// timerSlot is the timer of e started as generation gen, due at at.
type timerSlot struct {
	e   *Entry
	gen uint32
	at  time.Time
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
		if gen, ok := t.timed[s.e]; ok && gen == s.gen {
			c.fire(tx, s.e, src)
		}
	}
	if len(t.q) > 0 {
		t.wheel.Reset(t.q[0].at.Sub(now))
	}
}

// fire fires e's timer, running on src and due.
func (c *Cache) fire(tx *txn.Tx, e *Entry, src *Source) {
	if e.is(flagRemoved) || !e.is(flagTiming) {
		return
	}
	e.set(flagTiming, false)
	src.t.Of(tx).untime(e)
	c.apply(tx, e, event{kind: evTimer}, details{})
}

// Sent starts the timers of the names of k just subscribed on a stream of
// src, if gRFC A57 allows: the caller has checked that the stream is
// current and the channel seen READY; the entry must use src and have
// received nothing (transition).
func (c *Cache) Sent(tx *txn.Tx, src *Source, k *Kind, names []string) {
	for _, name := range names {
		if e := k.table.get(name); e != nil && e.kg.group.Active(tx) == src {
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
