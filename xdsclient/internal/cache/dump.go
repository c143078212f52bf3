package cache

import (
	"maps"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/xdslens/xdslens/xdsclient/internal/txn"
)

// dumpChunk is how many entries Dump copies per holding of the lock: an
// update never waits behind more than this many copies, however large the
// cache.
const dumpChunk = 128

// Dump calls each for every entry, sorted by type URL and name, with the
// lock held, and returns false if open reported the client closed on one
// of its holdings of the lock. It never holds the lock for long, whatever
// the size of the cache: it freezes the entry table of every kind
// (entryTable.freeze: a table that changes meanwhile changes a copy), lists
// their entries and sorts them with the lock released (by type URL and
// name, which never change), thaws the tables, and calls each dumpChunk at
// a time, leaving out the entries removed by then; entries made after the
// tables were frozen are not seen. held, when not nil, is told how long
// each holding lasted.
func (c *Cache) Dump(open func(tx *txn.Tx) bool, each func(tx *txn.Tx, e *Entry), held func(time.Duration)) bool {
	// step runs f with the lock held, unless the client is closed. Each
	// holding starts with a fresh time slice, so that the scheduler seldom
	// preempts the goroutine while it holds the lock.
	step := func(f func(tx *txn.Tx)) bool {
		runtime.Gosched()
		tx := c.cfg.Mutex.Lock()
		start := time.Now()
		ok := open(tx)
		if ok {
			f(tx)
		}
		tx.Unlock()
		if held != nil {
			held(time.Since(start))
		}
		return ok
	}
	var (
		n      int
		kinds  []*Kind
		frozen [][]*Entry
	)
	freeze := func(tx *txn.Tx) {
		s := c.s.Of(tx)
		n = s.n
		for _, k := range s.order {
			if slots := k.table.freeze(); slots != nil {
				kinds, frozen = append(kinds, k), append(frozen, slots)
			}
		}
	}
	if !step(freeze) {
		return false
	}
	list := make([]*Entry, 0, n)
	for _, slots := range frozen {
		for _, e := range slots {
			if e != nil {
				list = append(list, e)
			}
		}
	}
	thaw := func(*txn.Tx) {
		for i, k := range kinds {
			k.table.thaw(frozen[i])
		}
	}
	if !step(thaw) {
		return false
	}
	sortEntries(list)
	for lo := 0; lo < len(list); lo += dumpChunk {
		copyChunk := func(tx *txn.Tx) {
			for _, e := range list[lo:min(lo+dumpChunk, len(list))] {
				if !e.is(flagRemoved) {
					each(tx, e)
				}
			}
		}
		if !step(copyChunk) {
			return false
		}
	}
	clear(list)
	return true
}

// sortEntries sorts entries by type URL and name, fields set when an entry
// is made and never changed, so the lock need not be held.
func sortEntries(entries []*Entry) {
	rank := map[*Kind]int32{}
	for _, e := range entries {
		rank[e.kg.kind] = 0
	}
	kinds := slices.SortedFunc(maps.Keys(rank), func(a, b *Kind) int {
		return strings.Compare(a.URL, b.URL)
	})
	for i, k := range kinds {
		rank[k] = int32(i)
	}
	type key struct {
		name string
		rank int32
		e    *Entry
	}
	keys := make([]key, len(entries))
	for i, e := range entries {
		keys[i] = key{e.name, rank[e.kg.kind], e}
	}
	slices.SortFunc(keys, func(a, b key) int {
		if a.rank != b.rank {
			return int(a.rank - b.rank)
		}
		return strings.Compare(a.name, b.name)
	})
	for i := range keys {
		entries[i] = keys[i].e
	}
}
