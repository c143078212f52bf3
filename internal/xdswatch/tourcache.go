package xdswatch

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/xdslens/xdslens/xdsclient"
	"github.com/xdslens/xdslens/xdsclient/xdsresource"
)

// serverRole names a server of the tour's bootstrap.
type serverRole string

// The servers of the tour.
const (
	// primaryServer is listed first in the bootstrap.
	primaryServer serverRole = "primary"
	// secondaryServer is listed second: the fallback.
	secondaryServer serverRole = "secondary"
)

// tourEntry is what the tour says one cache entry of the client shows, as
// CSDS shows it: its state and the version of the resource it holds.
type tourEntry struct {
	state xdsclient.CacheState
	// version is that of the resource in use, "" when the entry holds none.
	version string
	// from is the server that sent the resource in use, "" when the entry
	// holds none.
	from serverRole
}

// held is an entry in state that holds a resource of version from server.
func held(state xdsclient.CacheState, version string, from serverRole) tourEntry {
	return tourEntry{state: state, version: version, from: from}
}

// empty is an entry in state that holds no resource.
func empty(state xdsclient.CacheState) tourEntry { return tourEntry{state: state} }

// tourCache is the whole cache the tour announces after a step: every
// entry of the client, by resource. The tour waits until the client shows
// exactly this, and says so.
type tourCache map[resourceKey]tourEntry

// with returns a copy of c whose entry for typ and name is e.
func (c tourCache) with(typ xdsresource.Type, name string, e tourEntry) tourCache {
	out := maps.Clone(c)
	if out == nil {
		out = tourCache{}
	}
	out[spec{typ: typ, name: name}.key()] = e
	return out
}

// allAt returns a cache in which every one of specs is ACKED, holding
// version from server.
func allAt(specs []spec, version string, from serverRole) tourCache {
	c := tourCache{}
	for _, s := range specs {
		c[s.key()] = held(xdsclient.StateACKed, version, from)
	}
	return c
}

// matches reports whether the client's entries are exactly c, the servers
// of the roles being at the addresses addr gives.
func (c tourCache) matches(entries map[resourceKey]xdsclient.EntrySnapshot, addr func(serverRole) string) bool {
	if len(entries) != len(c) {
		return false
	}
	for k, want := range c {
		e, ok := entries[k]
		if !ok || e.State != want.state || e.Cached != (want.version != "") {
			return false
		}
		if e.Cached && (e.Version != want.version || e.ResourceServer != addr(want.from)) {
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

// sortedKeys returns the keys of c, listener first, then by name.
func (c tourCache) sortedKeys() []resourceKey {
	keys := slices.Collect(maps.Keys(c))
	slices.SortFunc(keys, func(a, b resourceKey) int {
		if d := typeOrder[a.typeURL] - typeOrder[b.typeURL]; d != 0 {
			return d
		}
		return strings.Compare(a.name, b.name)
	})
	return keys
}

// changes describes, for people, what differs in next from prev: each
// group of entries that changed to the same state, "every demo resource"
// or "every other demo resource" when the group is all of demoSpecs that
// the other groups leave, the server named when it is not the one the
// entries had.
func changes(prev, next tourCache, demoSpecs []spec, addr func(serverRole) string) string {
	type group struct {
		entry   tourEntry
		newFrom bool
		keys    []resourceKey
	}
	var groups []*group
	for _, k := range next.sortedKeys() {
		e := next[k]
		old, had := prev[k]
		if had && old == e {
			continue
		}
		newFrom := e.from != "" && (!had || old.from != e.from)
		i := slices.IndexFunc(groups, func(g *group) bool { return g.entry == e && g.newFrom == newFrom })
		if i < 0 {
			groups = append(groups, &group{entry: e, newFrom: newFrom})
			i = len(groups) - 1
		}
		groups[i].keys = append(groups[i].keys, k)
	}
	if len(groups) == 0 {
		return "no change"
	}
	demos := map[resourceKey]bool{}
	for _, s := range demoSpecs {
		demos[s.key()] = true
	}
	var parts, rest []string
	for _, g := range groups {
		names := make([]string, len(g.keys))
		allDemos := len(g.keys) > 1
		for i, k := range g.keys {
			names[i] = keyLabel(k)
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
		s := subject + " " + g.entry.state.String()
		if g.entry.version != "" {
			s += ", using version " + g.entry.version
		}
		if g.newFrom {
			s += fmt.Sprintf(", from the %s server %s", g.entry.from, addr(g.entry.from))
		}
		if strings.HasPrefix(subject, "every other") {
			// Said after the entries it excludes.
			rest = append(rest, s)
			continue
		}
		parts = append(parts, s)
	}
	parts = append(parts, rest...)
	for _, k := range prev.sortedKeys() {
		if _, ok := next[k]; !ok {
			parts = append(parts, keyLabel(k)+" no longer in the cache")
		}
	}
	return strings.Join(parts, "; ")
}

// keyLabel is how the tour names a resource: "cds demo-cluster".
func keyLabel(k resourceKey) string {
	typ, err := resolveType(k.typeURL)
	if err != nil {
		return k.typeURL + " " + k.name
	}
	return typeLabel(typ) + " " + k.name
}
