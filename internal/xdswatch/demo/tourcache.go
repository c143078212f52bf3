package demo

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/xdslens/xdslens/xdsclient"
	"github.com/xdslens/xdslens/xdsclient/xdsresource"
)

// Key identifies one resource: its type URL and name.
type Key struct {
	TypeURL, Name string
}

// String names the resource as the tour does: "cds demo-cluster".
func (k Key) String() string {
	if typ := xdsresource.ByTypeURL(k.TypeURL); typ != nil {
		return typ.ShortName() + " " + k.Name
	}
	return k.TypeURL + " " + k.Name
}

// keyOf is the key of r.
func keyOf(r Resource) Key { return Key{TypeURL: r.Type.TypeURL(), Name: r.Name} }

// Role names a server of the tour's bootstrap.
type Role string

// The servers of the tour.
const (
	// Primary is listed first in the bootstrap.
	Primary Role = "primary"
	// Secondary is listed second: the fallback.
	Secondary Role = "secondary"
)

// Entry is what the tour says one cache entry of the client shows, as
// CSDS shows it: its state and the version of the resource it holds.
type Entry struct {
	State xdsclient.CacheState
	// Version is that of the resource in use, "" when the entry holds
	// none.
	Version string
	// From is the server that sent the resource in use, "" when the entry
	// holds none.
	From Role
}

// held is an entry in state that holds a resource of version from server.
func held(state xdsclient.CacheState, version string, from Role) Entry {
	return Entry{State: state, Version: version, From: from}
}

// empty is an entry in state that holds no resource.
func empty(state xdsclient.CacheState) Entry { return Entry{State: state} }

// Cache is the whole cache the tour announces after a step: every
// entry of the client, by resource. The tour waits until the client shows
// exactly this, and says so.
type Cache map[Key]Entry

// with returns a copy of c whose entry for typ and name is e.
func (c Cache) with(typ xdsresource.Type, name string, e Entry) Cache {
	out := maps.Clone(c)
	if out == nil {
		out = Cache{}
	}
	out[Key{TypeURL: typ.TypeURL(), Name: name}] = e
	return out
}

// allAt returns a cache in which every one of specs is ACKED, holding
// version from server.
func allAt(specs []Resource, version string, from Role) Cache {
	c := Cache{}
	for _, s := range specs {
		c[keyOf(s)] = held(xdsclient.StateACKed, version, from)
	}
	return c
}

// matches reports whether the client's entries are exactly c, the servers
// of the roles being at the addresses addr gives.
func (c Cache) matches(entries map[Key]xdsclient.EntrySnapshot, addr func(Role) string) bool {
	if len(entries) != len(c) {
		return false
	}
	for k, want := range c {
		e, ok := entries[k]
		if !ok || e.State != want.State || e.Cached != (want.Version != "") {
			return false
		}
		if e.Cached && (e.Version != want.Version || e.ResourceServer != addr(want.From)) {
			return false
		}
	}
	return true
}

// typeOrder sorts the four types as a listener leads to the others.
var typeOrder = map[string]int{
	xdsresource.ListenerType.TypeURL():    0,
	xdsresource.RouteConfigType.TypeURL(): 1,
	xdsresource.ClusterType.TypeURL():     2,
	xdsresource.EndpointsType.TypeURL():   3,
}

// SortedKeys returns the keys of c, listener first, then by name.
func (c Cache) SortedKeys() []Key {
	keys := slices.Collect(maps.Keys(c))
	slices.SortFunc(keys, func(a, b Key) int {
		if d := typeOrder[a.TypeURL] - typeOrder[b.TypeURL]; d != 0 {
			return d
		}
		return strings.Compare(a.Name, b.Name)
	})
	return keys
}

// changes describes, for people, what differs in next from prev: each
// group of entries that changed to the same state, "every demo resource"
// or "every other demo resource" when the group is all of demoSpecs that
// the other groups leave, the server named when it is not the one the
// entries had.
func changes(prev, next Cache, demoSpecs []Resource, addr func(Role) string) string {
	type group struct {
		entry   Entry
		newFrom bool
		keys    []Key
	}
	var groups []*group
	for _, k := range next.SortedKeys() {
		e := next[k]
		old, had := prev[k]
		if had && old == e {
			continue
		}
		newFrom := e.From != "" && (!had || old.From != e.From)
		i := slices.IndexFunc(groups, func(g *group) bool { return g.entry == e && g.newFrom == newFrom })
		if i < 0 {
			groups = append(groups, &group{entry: e, newFrom: newFrom})
			i = len(groups) - 1
		}
		groups[i].keys = append(groups[i].keys, k)
	}
	var gone []string
	for _, k := range prev.SortedKeys() {
		if _, ok := next[k]; !ok {
			gone = append(gone, k.String()+" no longer in the cache")
		}
	}
	if len(groups) == 0 && len(gone) == 0 {
		return "no change"
	}
	demos := map[Key]bool{}
	for _, s := range demoSpecs {
		demos[keyOf(s)] = true
	}
	var parts, rest []string
	for _, g := range groups {
		names := make([]string, len(g.keys))
		allDemos := len(g.keys) > 1
		for i, k := range g.keys {
			names[i] = k.String()
			allDemos = allDemos && demos[k]
		}
		subject := strings.Join(names, ", ")
		if allDemos {
			// Every demo resource not in another group.
			others := 0
			for _, o := range groups {
				for _, k := range o.keys {
					if o != g && demos[k] {
						others++
					}
				}
			}
			switch {
			case len(g.keys) == len(demoSpecs):
				subject = "every demo resource"
			case len(g.keys)+others == len(demoSpecs):
				subject = "every other demo resource"
			}
		}
		s := subject + " " + g.entry.State.String()
		if g.entry.Version != "" {
			s += ", using version " + g.entry.Version
		}
		if g.newFrom {
			s += fmt.Sprintf(", from the %s server %s", g.entry.From, addr(g.entry.From))
		}
		if strings.HasPrefix(subject, "every other") {
			// Said after the entries it excludes.
			rest = append(rest, s)
			continue
		}
		parts = append(parts, s)
	}
	parts = append(parts, rest...)
	parts = append(parts, gone...)
	return strings.Join(parts, "; ")
}
