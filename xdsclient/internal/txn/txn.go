// Package txn makes a client's lock a value. Mutex.Lock returns a *Tx,
// the lock held; Tx.Unlock is the only way to release it. What the lock
// guards is kept in Guarded values, which hand their content only to the
// holder of a Tx, so the compiler, rather than a naming convention, says
// which code runs with the lock held.
//
// A Tx also carries the effects of the events that happen while it is
// held: Flushers (the callback lanes) are flushed just before the lock is
// released, so that what one holding queued is queued before what the
// next one queues; After funcs (closing connections, say) run once it is
// released. Nothing a user supplies (a hook, a watcher, a logger's
// handler, a resource type's decoder) runs while a Tx is held.
package txn

import (
	"sync"
	"time"
)

// Mutex is a client's lock. The zero Mutex is unlocked.
type Mutex struct {
	mu sync.Mutex
	tx Tx
}

// Tx is a Mutex held: the capability to reach what the Mutex guards. It is
// valid from the Lock that returned it to its Unlock, and must not be kept
// or used after that.
type Tx struct {
	m       *Mutex
	now     time.Time
	flush   []Flusher
	after   []func()
	holding bool
}

// Flusher is told, once per holding of the lock in which it registered
// (Tx.Flush), that the lock is about to be released.
type Flusher interface {
	// Flush runs with the lock still held, after every event of the
	// holding.
	Flush(tx *Tx)
}

// Lock takes the lock and returns it as a Tx.
func (m *Mutex) Lock() *Tx {
	m.mu.Lock()
	tx := &m.tx
	tx.m, tx.now, tx.holding = m, time.Time{}, true
	return tx
}

// Unlock flushes the Flushers registered while the lock was held, in the
// order they registered, releases the lock, and then runs the After funcs
// in order.
func (tx *Tx) Unlock() {
	for i := 0; i < len(tx.flush); i++ { // a Flusher may register another
		tx.flush[i].Flush(tx)
		tx.flush[i] = nil
	}
	tx.flush = tx.flush[:0]
	after := tx.after
	tx.after = nil
	tx.holding = false
	tx.m.mu.Unlock()
	for _, f := range after {
		f()
	}
}

// Now returns the time of the events of this holding of the lock, read
// once: the events of one holding happen together.
func (tx *Tx) Now() time.Time {
	if tx.now.IsZero() {
		tx.now = time.Now()
	}
	return tx.now
}

// Flush registers f to be flushed before the lock is released. The caller
// registers f once per holding (it knows whether it has something queued).
func (tx *Tx) Flush(f Flusher) { tx.flush = append(tx.flush, f) }

// After registers f to run once the lock is released, after the Flushers.
func (tx *Tx) After(f func()) { tx.after = append(tx.after, f) }

// Guarded is a T that a Mutex guards: it is reached only through a Tx.
// The zero Guarded holds the zero T.
type Guarded[T any] struct{ v T }

// Of returns the guarded value, for the holder of tx.
func (g *Guarded[T]) Of(tx *Tx) *T {
	if !tx.holding {
		panic("txn: Guarded value reached through a Tx that is not held")
	}
	return &g.v
}
