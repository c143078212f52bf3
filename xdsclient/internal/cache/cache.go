// Package cache is a client's cache of xDS resources: one entry per
// subscribed resource, in the states gRFC A88 names, holding the bytes of
// the resource in use and its watchers. What happens to an entry is
// decided by one pure function, transition, and carried out in one place,
// carryOut: the state, the resource held, the failure record, the
// CacheStateChanged hook, the does-not-exist timer and the watcher
// callbacks all come from its outcome, so none of them can disagree.
//
// Apply takes one transport.Update (a response of either protocol) from
// one server: it recognises the resources whose bytes are those held
// (unchanged: not decoded again), decodes the others with the lock
// released (on several goroutines for a large response), making each
// changed one ready for watchers as it is decoded (a copy of its bytes and
// what Config.Deliver makes of it), finds the event of each resource, TP3
// error, removal and absence, decides them all (response.go asks
// transition, through the server's features: source.go), then has them
// carried out (apply.go), and returns the ACK or NACK (nack.go). What runs
// with the lock held is kept to what needs it: finding the entries,
// deciding, carrying out. An event that comes alone (a timer, a subscription sent, a
// server that failed, a new watcher) is decided the same way where it
// comes.
//
// Everything is guarded by the client's lock (a txn.Tx); nothing a user
// supplies runs under it: hooks and watcher callbacks are posted to the
// lane of the server the event came from (package lane), a type reads
// names (xdsresource.NameReader) and decodes with the lock released, and
// the client's Observer turns events into hooks.
package cache

import (
	"fmt"
	"iter"
	"reflect"
	"sync"
	"time"

	"google.golang.org/protobuf/types/known/anypb"

	"github.com/xdslens/xdslens/xdsclient/internal/txn"
	"github.com/xdslens/xdslens/xdsclient/internal/xerr"
	"github.com/xdslens/xdslens/xdsclient/xdsresource"
)

// Config is what a Cache is made with.
type Config struct {
	// Mutex is the client's lock, which guards the cache.
	Mutex *txn.Mutex
	// NodeID goes into every error (gRFC A88).
	NodeID string
	// Legacy selects the data error handling that preceded gRFC A88.
	Legacy bool
	// Observer is told of every event, to call the hooks.
	Observer Observer
	// Deliver returns what makes, for the n changed resources of one
	// response, what watchers get of each: package xdsclient's *Resource,
	// which it can then allocate together, each in its place (0 to n-1),
	// or alone for a place out of that range. It may be called on several
	// goroutines at once, for distinct places.
	Deliver func(n int) func(place int, d Delivery) any
	// Cancel ends the watch of a Watcher of an entry: what its Stop does.
	Cancel func(w *Watcher)
}

// Delivery is a valid resource on its way to watchers: of type Type, named
// Name, decoded into Value from Raw, carried by the update of Version from
// Server that arrived at At.
type Delivery struct {
	Type    xdsresource.Type
	Name    string
	Version string
	Value   any
	Raw     *anypb.Any
	Server  string
	At      time.Time
}

// Observer is told of the events of the cache, to call the hooks (package
// xdsclient's). Its methods run under the lock and post hook calls; they
// must not call user code.
type Observer interface {
	// StateChanged: e changed state or started or stopped holding a
	// resource (from StateNone: it was made; to StateNone: removed).
	StateChanged(tx *txn.Tx, e *Entry, old State, oldCached bool)
	// TimerStarted, TimerStopped: e's does-not-exist timer on src.
	TimerStarted(tx *txn.Tx, e *Entry, src *Source)
	TimerStopped(tx *txn.Tx, e *Entry, src *Source)
	// Logged: a log line about e (gRFC A53's), version the update's.
	Logged(tx *txn.Tx, e *Entry, src *Source, l Log, version string)
	// Applied: a response from src was applied (ResponseReceived).
	Applied(tx *txn.Tx, src *Source, typeURL, version, nonce string, delta bool, a Applied)
}

// Log is a log line of the cache.
type Log uint8

// The log lines.
const (
	// LogDeletionIgnored (warning): a deletion ignored, the resource kept
	// (gRFC A53).
	LogDeletionIgnored Log = iota + 1
	// LogDeletionUnignored (info): the server sends the resource again.
	LogDeletionUnignored
	// LogDeletionUnwatched (info): the watch of a resource whose deletion
	// was ignored was cancelled.
	LogDeletionUnwatched
	// LogUnknownType (warning): a response of a type never subscribed.
	LogUnknownType
)

// Cache is the cache entries of one client.
type Cache struct {
	cfg Config
	s   txn.Guarded[state]
	// scratch holds what Apply works in (*scratch), between responses;
	// the collector empties it.
	scratch sync.Pool
}

type state struct {
	kinds map[string]*Kind // by type URL
	order []*Kind          // in the order they were registered
	n     int              // entries
	gen   uint32           // responses applied (see nextGen)
}

// Kind is the entries of one resource type.
type Kind struct {
	TypeInfo
	Rank  int // the order the type was registered in: requests go in it
	table entryTable
	cache *Cache
	// groups holds what the entries of each group share; extras the
	// side fields of the few entries that have some (flagExtra).
	groups map[*Group]*kindGroup
	extras map[*Entry]*extra
}

// TypeInfo is a resource type and what it says of itself, read once by
// Describe: a Type may be the user's, whose methods never run under the
// client's lock, and its URL, names and FullState are constants.
type TypeInfo struct {
	Type      xdsresource.Type
	URL       string // the type URL
	Short     string // the short name, as errors give it ("cds"), or URL
	FullState bool   // whether a SotW response carries every resource
}

// Describe reads what t says of itself. Call it without the lock held.
func Describe(t xdsresource.Type) TypeInfo {
	return TypeInfo{Type: t, URL: t.TypeURL(), Short: xerr.ShortName(t), FullState: t.FullState()}
}

// New returns an empty cache.
func New(cfg Config) *Cache { return &Cache{cfg: cfg} }

// Register makes the type t describes the type of its type URL and returns
// its kind. A type URL has one type for the cache's life: another one for
// it is an error, since requests, the cache and CSDS know a resource by
// its type URL alone.
func (c *Cache) Register(tx *txn.Tx, t TypeInfo) (*Kind, error) {
	s := c.s.Of(tx)
	url := t.URL
	if k := s.kinds[url]; k != nil {
		if sameType(k.Type, t.Type) {
			return k, nil
		}
		return nil, fmt.Errorf("type URL %q is already registered to another resource type (%T)", url, k.Type)
	}
	if !reflect.TypeOf(t.Type).Comparable() {
		return nil, fmt.Errorf("resource type %T for %q is not comparable: use a pointer", t.Type, url)
	}
	if s.kinds == nil {
		s.kinds = map[string]*Kind{}
	}
	k := &Kind{TypeInfo: t, Rank: len(s.order), cache: c}
	s.kinds[url] = k
	s.order = append(s.order, k)
	return k, nil
}

// sameType reports whether a and b are the same Type value.
func sameType(a, b xdsresource.Type) bool {
	return reflect.TypeOf(a) == reflect.TypeOf(b) && reflect.TypeOf(a).Comparable() && a == b
}

// KindOf returns the kind of typeURL, nil if none is registered.
func (c *Cache) KindOf(tx *txn.Tx, typeURL string) *Kind { return c.s.Of(tx).kinds[typeURL] }

// Get returns the entry of k named name, nil if none.
func (c *Cache) Get(tx *txn.Tx, k *Kind, name string) *Entry {
	c.s.Of(tx)
	return k.table.get(name)
}

// Add makes the entry of k named name, in group g, in StateRequested.
func (c *Cache) Add(tx *txn.Tx, k *Kind, name string, g *Group) *Entry {
	s := c.s.Of(tx)
	kg := k.groups[g]
	if kg == nil {
		if k.groups == nil {
			k.groups = map[*Group]*kindGroup{}
		}
		kg = &kindGroup{kind: k, group: g}
		k.groups[g] = kg
	}
	kg.n++
	e := &Entry{kg: kg, name: name}
	k.table.add(e)
	s.n++
	g.g.Of(tx).n++
	c.setState(tx, e, StateRequested, held{})
	return e
}

// Remove takes e, which has no watcher left, out of the cache.
func (c *Cache) Remove(tx *txn.Tx, e *Entry) {
	s := c.s.Of(tx)
	if e.is(flagDeletionIgnored) {
		c.cfg.Observer.Logged(tx, e, e.Source(tx), LogDeletionUnwatched, "")
	}
	c.setState(tx, e, StateNone, held{})
	c.stopTimer(tx, e, e.Source(tx))
	e.set(flagRemoved, true)
	e.tidy()
	k, g := e.kg.kind, e.kg.group
	k.table.remove(e)
	if e.kg.n--; e.kg.n == 0 {
		delete(k.groups, g)
	}
	s.n--
	g.g.Of(tx).n--
}

// Clear drops every entry, when the client closes; no hook is called.
func (c *Cache) Clear(tx *txn.Tx) {
	s := c.s.Of(tx)
	for e := range c.All(tx) {
		e.set(flagRemoved, true)
	}
	*s = state{kinds: s.kinds, order: s.order}
	for _, k := range s.order {
		k.table, k.groups, k.extras = entryTable{}, nil, nil
	}
}

// All yields every entry. Entries must not be added or removed meanwhile.
func (c *Cache) All(tx *txn.Tx) iter.Seq[*Entry] {
	s := c.s.Of(tx)
	return func(yield func(*Entry) bool) {
		for _, k := range s.order {
			for e := range k.table.all() {
				if !yield(e) {
					return
				}
			}
		}
	}
}

// EntriesOf yields the entries of group g, of every type.
func (c *Cache) EntriesOf(tx *txn.Tx, g *Group) iter.Seq[*Entry] {
	return func(yield func(*Entry) bool) {
		for e := range c.All(tx) {
			if e.kg.group == g && !yield(e) {
				return
			}
		}
	}
}

// nextGen numbers a new response. The numbers wrap around after 2^32
// responses: then every entry forgets the response that last named it, so
// that none seems named by a response that did not name it.
func (c *Cache) nextGen(tx *txn.Tx) uint32 {
	s := c.s.Of(tx)
	if s.gen++; s.gen == 0 {
		for e := range c.All(tx) {
			e.seenGen = 0
		}
		s.gen = 1
	}
	return s.gen
}
