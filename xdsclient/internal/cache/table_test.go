package cache

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"unsafe"

	"github.com/xdslens/xdslens/xdsclient/xdsresource"
)

// The table agrees with a map through random adds and removes, across
// growth and shrinking, and its iteration yields each entry once.
func TestEntryTableMatchesMap(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var tab entryTable
	model := map[string]*Entry{}
	check := func(step int) {
		t.Helper()
		if tab.n != len(model) {
			t.Fatalf("step %d: table has %d entries, want %d", step, tab.n, len(model))
		}
		seen := map[*Entry]bool{}
		for e := range tab.all() {
			if seen[e] || model[e.name] != e {
				t.Fatalf("step %d: iteration yielded %q twice or not in the model", step, e.name)
			}
			seen[e] = true
		}
		if len(seen) != len(model) {
			t.Fatalf("step %d: iteration yielded %d entries, want %d", step, len(seen), len(model))
		}
		for name, e := range model {
			if got := tab.get(name); got != e {
				t.Fatalf("step %d: get(%q) = %p, want %p", step, name, got, e)
			}
			if got := tab.getBytes([]byte(name)); got != e {
				t.Fatalf("step %d: getBytes(%q) = %p, want %p", step, name, got, e)
			}
		}
	}
	// Grow to 3,000 names, then shrink to a few, twice; names are drawn
	// from a small space so that removes hit and miss.
	for step := 0; step < 20000; step++ {
		name := fmt.Sprintf("c%d", rng.IntN(4000))
		adding := (step/5000)%2 == 0
		if e := model[name]; e != nil {
			if !adding || rng.IntN(4) == 0 {
				tab.remove(e)
				delete(model, name)
			}
		} else if adding {
			e := &Entry{name: name}
			tab.add(e)
			model[name] = e
		} else if tab.get(name) != nil {
			t.Fatalf("step %d: get(%q) found a name never added or removed", step, name)
		}
		if step%997 == 0 {
			check(step)
		}
	}
	check(-1)
	if len(model) < 1000 && len(tab.slots) > 8*max(len(model), minTableSlots) {
		t.Errorf("%d entries keep %d slots: the table did not shrink", len(model), len(tab.slots))
	}
	for _, e := range model {
		tab.remove(e)
	}
	if tab.n != 0 || len(tab.slots) != minTableSlots {
		t.Errorf("emptied table: %d entries, %d slots; want 0 and %d", tab.n, len(tab.slots), minTableSlots)
	}
	var nilTable *entryTable
	if nilTable.get("x") != nil || nilTable.getBytes([]byte("x")) != nil {
		t.Error("a nil table found an entry")
	}
	for range nilTable.all() {
		t.Error("a nil table yielded an entry")
	}
}

// Removing an entry keeps every other entry of a long probe run reachable
// (backward-shift deletion), whichever entry of the run goes.
func TestEntryTableRemoveInProbeRun(t *testing.T) {
	for victim := 0; victim < 6; victim++ {
		var tab entryTable
		var entries []*Entry
		for i := 0; i < 6; i++ {
			e := &Entry{name: fmt.Sprintf("n%d", i)}
			tab.add(e)
			entries = append(entries, e)
		}
		tab.remove(entries[victim])
		for i, e := range entries {
			want := e
			if i == victim {
				want = nil
			}
			if got := tab.get(e.name); got != want {
				t.Fatalf("after removing %q: get(%q) = %v, want %v", entries[victim].name, e.name, got, want)
			}
		}
	}
}

// A cache entry, its first watcher's record included, stays within its
// size class: a client may hold tens of thousands, and the retained heap
// target depends on it.
func TestEntrySize(t *testing.T) {
	if got := unsafe.Sizeof(Entry{}); got > 96 {
		t.Errorf("entry is %d bytes, want at most 96", got)
	}
	if got := unsafe.Sizeof(Watcher{}); got > 32 {
		t.Errorf("Watcher is %d bytes, want at most 32", got)
	}
}

// The first watcher's record is the entry's own, used once; watchers
// after it go to the kind's side table, which lets the entry go once they
// are gone. Watchers are yielded in the order they were added.
func TestEntrySideStruct(t *testing.T) {
	k := &Kind{}
	e := &Entry{kg: &kindGroup{kind: k}}
	c := &Cache{}
	refs := []*Watcher{c.NewWatcher(nil, e, "a"), c.NewWatcher(nil, e, "b"), c.NewWatcher(nil, e, "c")}
	if refs[0] != &e.first || refs[1] == &e.first || refs[2] == &e.first {
		t.Fatalf("records %p, want the entry's own (%p) first and new ones after", refs, &e.first)
	}
	for _, r := range refs {
		e.addWatcher(r)
	}
	order := func() []*Watcher { return slices.Collect(e.watchers) }
	if got := order(); !slices.Equal(got, refs) || e.watcherCount() != 3 {
		t.Fatalf("watchers %v (count %d), want %v", got, e.watcherCount(), refs)
	}
	e.removeWatcher(refs[0])
	if got := order(); !slices.Equal(got, refs[1:]) {
		t.Fatalf("after removing the first: %v, want %v", got, refs[1:])
	}
	if again := c.NewWatcher(nil, e, "d"); again == &e.first {
		t.Fatal("the entry's own record was handed out twice")
	}
	e.removeWatcher(refs[2])
	e.removeWatcher(refs[1])
	if e.watcherCount() != 0 || e.is(flagExtra) || len(k.extras) != 0 {
		t.Fatalf("no watchers left: count %d, side fields %v", e.watcherCount(), k.extras)
	}
}

// A frozen table's slots stay as they were, entries and all, while the
// table adds, removes and grows (it changes a copy); once thawed, the table
// writes in place again, and lookups agree with a map throughout.
func TestEntryTableFreeze(t *testing.T) {
	var tab entryTable
	model := map[string]*Entry{}
	add := func(name string) {
		e := &Entry{name: name}
		tab.add(e)
		model[name] = e
	}
	for i := range 20 {
		add(fmt.Sprint("e", i))
	}
	frozen := tab.freeze()
	before := slices.Clone(frozen)
	second := tab.freeze() // two walks at once
	for i := range 10 {
		tab.remove(model[fmt.Sprint("e", i)])
		delete(model, fmt.Sprint("e", i))
	}
	for i := range 100 {
		add(fmt.Sprint("n", i)) // grows the table
	}
	if !slices.Equal(frozen, before) || !slices.Equal(second, before) {
		t.Fatal("the frozen slots changed while the table did")
	}
	for name, e := range model {
		if tab.get(name) != e {
			t.Fatalf("get(%q) lost the entry while frozen", name)
		}
	}
	tab.thaw(frozen) // no longer the table's slots: nothing to do
	tab.thaw(second)
	if tab.frozen != 0 {
		t.Fatalf("frozen = %d after the table left the frozen slots, want 0", tab.frozen)
	}
	now := tab.freeze()
	tab.thaw(now)
	add("in-place")
	if &tab.slots[0] != &now[0] {
		t.Error("a thawed table copied its slots to add an entry")
	}
	held := tab.freeze()
	tab.remove(model["in-place"])
	if &tab.slots[0] == &held[0] || !slices.Contains(held, model["in-place"]) {
		t.Error("a remove wrote to slots a walk holds")
	}
}

// sortEntries orders by type URL, then name, as a plain sort would.
func TestSortEntries(t *testing.T) {
	kinds := []*Kind{{TypeInfo: Describe(xdsresource.RouteConfigType)}, {TypeInfo: Describe(xdsresource.ClusterType)}, {TypeInfo: Describe(xdsresource.ListenerType)}}
	for _, n := range []int{0, 1, 2, 7, 1000} {
		var es []*Entry
		for range n {
			es = append(es, &Entry{kg: &kindGroup{kind: kinds[rand.IntN(len(kinds))]}, name: fmt.Sprint("n", rand.IntN(n+1))})
		}
		want := slices.Clone(es)
		slices.SortStableFunc(want, func(a, b *Entry) int {
			if c := strings.Compare(a.kg.kind.Type.TypeURL(), b.kg.kind.Type.TypeURL()); c != 0 {
				return c
			}
			return strings.Compare(a.name, b.name)
		})
		sortEntries(es)
		for i := range es {
			if es[i].kg.kind != want[i].kg.kind || es[i].name != want[i].name {
				t.Fatalf("n=%d: position %d is %s/%s, want %s/%s", n, i, es[i].kg.kind.Type.TypeURL(), es[i].name, want[i].kg.kind.Type.TypeURL(), want[i].name)
			}
		}
		if !sameSet(es, want) {
			t.Fatalf("n=%d: entries lost or repeated by sorting", n)
		}
	}
}

func sameSet(a, b []*Entry) bool {
	seen := map[*Entry]int{}
	for _, e := range a {
		seen[e]++
	}
	for _, e := range b {
		seen[e]--
	}
	for _, n := range seen {
		if n != 0 {
			return false
		}
	}
	return true
}
