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

// A cache entry stays within its size class: a client may hold tens of
// thousands, and the retained heap target depends on it. (128 bytes: 16 of
// them link the entries for Dump, which then never holds the lock for more
// than a few hundred entries.)
func TestEntrySize(t *testing.T) {
	if got := unsafe.Sizeof(Entry{}); got > 128 {
		t.Errorf("entry is %d bytes, want at most 128", got)
	}
	if got := unsafe.Sizeof(Watcher{}); got > 32 {
		t.Errorf("Watcher is %d bytes, want at most 32", got)
	}
}

// Watchers after the first go to the side struct, which is dropped once
// they are gone.
func TestEntrySideStruct(t *testing.T) {
	e := &Entry{}
	refs := []*Watcher{{}, {}, {}}
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
	e.removeWatcher(refs[2])
	e.removeWatcher(refs[1])
	if e.watcherCount() != 0 || e.x != nil {
		t.Fatalf("no watchers left: count %d, side struct %v", e.watcherCount(), e.x)
	}

}

// The list Dump walks: a walk that stopped at an entry goes on from it
// after that entry, and the ones after it, are removed, and sees every
// entry that was never removed, in order, and entries made meanwhile.
func TestEntryListWalk(t *testing.T) {
	c := &state{}
	var es []*Entry
	for i := range 6 {
		e := &Entry{name: fmt.Sprint("e", i)}
		es = append(es, e)
		c.link(e)
	}
	walk := func(from *Entry) []string {
		var names []string
		for e := from; e != nil; e = e.next {
			if !e.removed {
				names = append(names, e.name)
			}
		}
		return names
	}
	at := es[1] // a walk stopped here
	for _, i := range []int{1, 2, 0} {
		es[i].removed = true
		c.unlink(es[i])
	}
	c.link(&Entry{name: "new"})
	es[5].removed = true
	c.unlink(es[5])
	if got, want := walk(at.next), []string{"e3", "e4", "new"}; !slices.Equal(got, want) {
		t.Errorf("walk on from the removed e1 = %v, want %v", got, want)
	}
	if got, want := walk(c.first), []string{"e3", "e4", "new"}; !slices.Equal(got, want) {
		t.Errorf("walk from the start = %v, want %v", got, want)
	}
	if c.last.name != "new" || c.first.name != "e3" || c.first.prev != nil {
		t.Errorf("ends: first %q, last %q", c.first.name, c.last.name)
	}
}

// sortEntries orders by type URL, then name, as a plain sort would.
func TestSortEntries(t *testing.T) {
	kinds := []*Kind{{TypeInfo: Describe(xdsresource.RouteConfigType)}, {TypeInfo: Describe(xdsresource.ClusterType)}, {TypeInfo: Describe(xdsresource.ListenerType)}}
	for _, n := range []int{0, 1, 2, 7, 1000} {
		var es []*Entry
		for range n {
			es = append(es, &Entry{kind: kinds[rand.IntN(len(kinds))], name: fmt.Sprint("n", rand.IntN(n+1))})
		}
		want := slices.Clone(es)
		slices.SortStableFunc(want, func(a, b *Entry) int {
			if c := strings.Compare(a.kind.Type.TypeURL(), b.kind.Type.TypeURL()); c != 0 {
				return c
			}
			return strings.Compare(a.name, b.name)
		})
		sortEntries(es)
		for i := range es {
			if es[i].kind != want[i].kind || es[i].name != want[i].name {
				t.Fatalf("n=%d: position %d is %s/%s, want %s/%s", n, i, es[i].kind.Type.TypeURL(), es[i].name, want[i].kind.Type.TypeURL(), want[i].name)
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
