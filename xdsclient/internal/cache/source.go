package cache

import (
	"time"

	"github.com/xdslens/xdslens/xdsclient/internal/lane"
	"github.com/xdslens/xdslens/xdsclient/internal/txn"
	"github.com/xdslens/xdslens/xdsclient/xdsresource"
)

// Source is an xDS server as the cache sees it: where the resources of the
// entries that use it come from, how to decode them, which behaviours its
// server features select, where the callbacks of its events run, and its
// does-not-exist timers.
type Source struct {
	URI      string
	Features Features
	Decode   xdsresource.DecodeOptions
	// Lane runs the hook calls and callbacks of the server's events.
	Lane *lane.Lane[*Watcher]
	// Timeout is the does-not-exist timer; Transient is set when it is
	// resource_timer_is_transient_error's (TIMEOUT rather than
	// DOES_NOT_EXIST).
	Timeout   time.Duration
	Transient bool

	c *Cache
	t txn.Guarded[timers]
}

// Features are what decides between behaviours: the data error handling
// mode and the server features of the server an entry uses.
type Features struct {
	Legacy           bool // GRPC_EXPERIMENTAL_XDS_DATA_ERROR_HANDLING=false
	FailOnDataErrors bool // fail_on_data_errors (ignored in legacy mode)
	IgnoreDeletion   bool // ignore_resource_deletion (legacy mode only, gRFC A53)
	TransientTimer   bool // resource_timer_is_transient_error (ignored in legacy mode)
}

// outcome returns what ev does to e, an entry that uses src: transition's
// answer under src's features, and whether it changes anything.
func (src *Source) outcome(e *Entry, ev event) (_ outcome, changes bool) {
	return src.outcomeOf(e.current(), ev)
}

// outcomeOf is outcome for an entry in state s.
func (src *Source) outcomeOf(s entryState, ev event) (_ outcome, changes bool) {
	f := src.Features
	out := transition(s, ev, features{legacy: f.Legacy, failOnDataErrors: f.FailOnDataErrors, ignoreDeletion: f.IgnoreDeletion, transientTimer: f.TransientTimer})
	return out, out != unchanged(s)
}

// NewSource returns the cache's view of a server. Its fields are set once,
// before it is used.
func (c *Cache) NewSource() *Source { return &Source{c: c} }

// Group is the entries of one authority (gRFC A47): they share the server
// in use, which fallback (gRFC A71) changes for all of them at once.
type Group struct {
	// Name is the authority's name ("#old" for old-style names).
	Name string
	g    txn.Guarded[groupState]
}

type groupState struct {
	active    *Source
	n         int // entries
	requested int // entries in REQUESTED
}

// NewGroup returns an empty group whose entries use active.
func NewGroup(tx *txn.Tx, name string, active *Source) *Group {
	g := &Group{Name: name}
	g.g.Of(tx).active = active
	return g
}

// Active returns the server the group's entries use.
func (g *Group) Active(tx *txn.Tx) *Source { return g.g.Of(tx).active }

// Len returns how many entries the group has.
func (g *Group) Len(tx *txn.Tx) int { return g.g.Of(tx).n }

// Missing reports whether a resource of the group was never received:
// neither a resource nor an answer about it (an error, a deletion, a
// timeout) came, so another server may have it (gRFC A71: fallback is for
// resources that are missing, not for data errors a server reported).
func (g *Group) Missing(tx *txn.Tx) bool { return g.g.Of(tx).requested > 0 }

// SetActive makes src the server of the group's entries. The timers
// running on the old one stop; on src they start for the subscriptions
// already sent on its stream (StartTimers).
func (c *Cache) SetActive(tx *txn.Tx, g *Group, src *Source) {
	gs := g.g.Of(tx)
	if gs.active == src {
		return
	}
	old := gs.active
	for e := range c.EntriesOf(tx, g) {
		c.stopTimer(tx, e, old)
	}
	gs.active = src
}
