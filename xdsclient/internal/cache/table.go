package cache

import (
	"hash/maphash"
	"iter"
	"slices"
)

// entryTable is the set of cache entries of one resource type, keyed by
// name. It is an open-addressing hash table of entry pointers with linear
// probing: a slot costs 8 bytes where a map[string]*Entry costs about 40 per
// entry, which matters for a client holding tens of thousands of small
// resources. It is not safe for concurrent use (the client's lock guards it), and
// entries must not be added or removed while iterating; but its slots can
// be frozen (freeze) for a walk with the lock released, which Dump makes:
// until then, the table writes to a copy of them.
type entryTable struct {
	slots  []*Entry // len is zero or a power of two
	n      int
	frozen int // walks that hold slots (freeze), which must not change
}

var tableSeed = maphash.MakeSeed()

// Sizing: the table grows when more than 3/4 full and shrinks when less
// than 1/8 full, so that a large subscription that ends gives its memory
// back.
const minTableSlots = 8

// slot returns the first slot to probe for a name with hash h.
func (t *entryTable) slot(h uint64) int { return int(h & uint64(len(t.slots)-1)) }

// get returns the entry named name, or nil.
func (t *entryTable) get(name string) *Entry {
	if t == nil || t.n == 0 {
		return nil
	}
	for i := t.slot(maphash.String(tableSeed, name)); ; i = (i + 1) & (len(t.slots) - 1) {
		e := t.slots[i]
		if e == nil || e.name == name {
			return e
		}
	}
}

// getBytes is get for a name held as bytes, without copying it.
func (t *entryTable) getBytes(name []byte) *Entry {
	if t == nil || t.n == 0 {
		return nil
	}
	for i := t.slot(maphash.Bytes(tableSeed, name)); ; i = (i + 1) & (len(t.slots) - 1) {
		e := t.slots[i]
		if e == nil || e.name == string(name) {
			return e
		}
	}
}

// add inserts e, whose name must not be in the table.
func (t *entryTable) add(e *Entry) {
	if (t.n+1)*4 > len(t.slots)*3 {
		t.resize(max(minTableSlots, 2*len(t.slots)))
	} else {
		t.own()
	}
	t.place(e)
	t.n++
}

// place puts e in the first free slot of its probe sequence.
func (t *entryTable) place(e *Entry) {
	i := t.slot(maphash.String(tableSeed, e.name))
	for t.slots[i] != nil {
		i = (i + 1) & (len(t.slots) - 1)
	}
	t.slots[i] = e
}

// remove deletes e if it is in the table. Later entries of the probe run
// are moved back into the gap (backward-shift deletion), so lookups need no
// tombstones.
func (t *entryTable) remove(e *Entry) {
	if t.n == 0 {
		return
	}
	t.own()
	mask := len(t.slots) - 1
	i := t.slot(maphash.String(tableSeed, e.name))
	for t.slots[i] != e {
		if t.slots[i] == nil {
			return
		}
		i = (i + 1) & mask
	}
	t.slots[i] = nil
	t.n--
	for j := (i + 1) & mask; t.slots[j] != nil; j = (j + 1) & mask {
		home := t.slot(maphash.String(tableSeed, t.slots[j].name))
		// Move slots[j] into the gap at i unless its home lies in (i, j]:
		// then it is already reachable from its home without crossing i.
		if (j-home)&mask >= (j-i)&mask {
			t.slots[i], t.slots[j] = t.slots[j], nil
			i = j
		}
	}
	if len(t.slots) > minTableSlots && t.n*8 < len(t.slots) {
		t.resize(len(t.slots) / 2)
	}
}

// resize rehashes every entry into size slots.
func (t *entryTable) resize(size int) {
	old := t.slots
	t.slots, t.frozen = make([]*Entry, size), 0
	for _, e := range old {
		if e != nil {
			t.place(e)
		}
	}
}

// all yields every entry, in no particular order. A nil table has none.
func (t *entryTable) all() iter.Seq[*Entry] {
	return func(yield func(*Entry) bool) {
		if t == nil {
			return
		}
		for _, e := range t.slots {
			if e != nil && !yield(e) {
				return
			}
		}
	}
}

// freeze returns the slots, which stay as they are, entries and all, for a
// walk with the lock released: until thaw, the table makes itself a copy of
// them before it changes. A table with no slots returns nil.
func (t *entryTable) freeze() []*Entry {
	if len(t.slots) == 0 {
		return nil
	}
	t.frozen++
	return t.slots
}

// thaw ends a walk of slots, which freeze returned: if the table still
// writes to them, it may again once no other walk holds them.
func (t *entryTable) thaw(slots []*Entry) {
	if len(slots) > 0 && len(t.slots) == len(slots) && &t.slots[0] == &slots[0] {
		t.frozen--
	}
}

// own makes the slots the table's own to change: a copy, if a walk holds
// them.
func (t *entryTable) own() {
	if t.frozen > 0 {
		t.slots, t.frozen = slices.Clone(t.slots), 0
	}
}
