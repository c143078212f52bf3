package txn

import (
	"slices"
	"testing"
)

type flusher struct {
	name string
	log  *[]string
	then Flusher // registered while flushing
}

func (f *flusher) Flush(tx *Tx) {
	*f.log = append(*f.log, "flush "+f.name)
	if f.then != nil {
		tx.Flush(f.then)
		f.then = nil
	}
}

// Flushers run before the lock is released, in the order they
// registered (one registered by a Flusher too), After funcs after it is
// released, and Now is read once per holding.
func TestUnlockOrder(t *testing.T) {
	var (
		m   Mutex
		log []string
		g   Guarded[int]
	)
	tx := m.Lock()
	*g.Of(tx) = 7
	now := tx.Now()
	if tx.Now() != now {
		t.Error("Now changed within one holding")
	}
	tx.After(func() {
		if !m.mu.TryLock() {
			t.Error("After ran with the lock held")
		} else {
			m.mu.Unlock()
		}
		log = append(log, "after")
	})
	tx.Flush(&flusher{name: "a", log: &log, then: &flusher{name: "c", log: &log}})
	tx.Flush(&flusher{name: "b", log: &log})
	tx.Unlock()
	if want := []string{"flush a", "flush b", "flush c", "after"}; !slices.Equal(log, want) {
		t.Errorf("unlock ran %v, want %v", log, want)
	}
	tx = m.Lock()
	if *g.Of(tx) != 7 {
		t.Errorf("guarded value %d, want 7", *g.Of(tx))
	}
	tx.Unlock()
}

// A Tx that is not held does not open a Guarded value.
func TestGuardedNeedsHeldTx(t *testing.T) {
	var (
		m Mutex
		g Guarded[int]
	)
	tx := m.Lock()
	tx.Unlock()
	defer func() {
		if recover() == nil {
			t.Error("Guarded.Of with a released Tx did not panic")
		}
	}()
	g.Of(tx)
}
