package cache

import (
	"slices"
	"time"

	"github.com/xdslens/xdslens/xdsclient/internal/lane"
	"github.com/xdslens/xdslens/xdsclient/internal/txn"
	"github.com/xdslens/xdslens/xdsclient/xdsresource"
)

// Entry is one cache entry: a subscribed resource, what is held for it and
// who watches it. Its kind, name and group never change and are read
// without the lock; the rest is reached with a Tx.
//
// A client may hold tens of thousands of entries, so an entry, its first
// watcher's record included, is kept to 96 bytes: the resource is held as
// its bytes (decoded again for a watcher that joins later), the version,
// time and server of an update are shared by every entry the update
// carried, the kind and group by every entry of both, the server in use is
// its group's, and what most entries never need (a failure, a second
// watcher) is in a side table of the kind (Kind.extras), as is the
// generation of a running timer in its server's timers.
type Entry struct {
	kg    *kindGroup
	name  string
	first Watcher // the record of the entry's first watcher (see NewWatcher)
	res   held    // the resource in use, if any
	// seenGen is the response that last named this entry (response.gen).
	seenGen uint32
	state   State
	flags   entryFlags
}

// entryFlags are an entry's yes-or-no facts, one bit each.
type entryFlags uint8

const (
	// flagRemoved: the entry left the cache.
	flagRemoved entryFlags = 1 << iota
	// flagDeletionIgnored: gRFC A53, a deletion was ignored (legacy mode).
	flagDeletionIgnored
	// flagTiming: the does-not-exist timer runs, on the group's server.
	flagTiming
	// flagFirstWatching: the record first is a watcher of the entry.
	flagFirstWatching
	// flagExtra: the entry has fields in its kind's side table.
	flagExtra
)

func (e *Entry) is(f entryFlags) bool { return e.flags&f != 0 }

func (e *Entry) set(f entryFlags, on bool) {
	if on {
		e.flags |= f
	} else {
		e.flags &^= f
	}
}

// kindGroup is what the entries of one kind in one group share.
type kindGroup struct {
	kind   *Kind
	group  *Group
	n      int  // entries
	picked bool // in the groups Names was asked for, while it runs
}

// held is a resource an entry holds: its serialized bytes (the value of the
// Any) and the update that last carried them. The zero held is none.
type held struct {
	raw  []byte
	from *update
}

func (h held) ok() bool { return h.from != nil }

// update is what the resources of one response share: its version_info
// (shown: as a message quotes it, bounded), when it arrived, and the
// server that sent it.
type update struct {
	version, shown string
	at             time.Time
	src            *Source
}

// extra holds the fields of an entry that most entries never need.
type extra struct {
	fail     failure    // the data error the entry carries; zero when none
	watchers []*Watcher // watchers after the first
}

// failure is the data error of an entry (NACK, TP3 error, deletion,
// timeout) and the update that caused it, when one did. err is nil when
// there is none.
type failure struct {
	err     error
	version string
	at      time.Time
	raw     []byte // the rejected resource, when its bytes are known
}

// Watcher is one watcher of an entry, as the cache and the lanes know it.
type Watcher struct {
	lane.Watch
	// heardAmbient: the last callback queued to it was an ambient error
	// whose cause is not over; when it ends, it gets AmbientError(nil).
	heardAmbient bool
	// Sink is what the callbacks go to: package xdsclient's Watcher,
	// or its TypedWatcher of a built-in type.
	Sink  any
	entry *Entry // nil for a watch refused at the start
}

// Stop ends the watch of w, a watcher of an entry, through the cache's
// Config.Cancel. As a method value it is a watch's cancel func: one word
// besides the watcher, which a client holding many watches keeps once.
func (w *Watcher) Stop() { w.entry.kg.kind.cache.cfg.Cancel(w) }

// Entry returns the watcher's entry, nil for a watch that was refused.
func (w *Watcher) Entry() *Entry { return w.entry }

// Name returns the entry's resource name, as subscribed.
func (e *Entry) Name() string { return e.name }

// Type returns the entry's resource type.
func (e *Entry) Type() xdsresource.Type { return e.kg.kind.Type }

// Kind returns the entry's kind: its type and the order of requests.
func (e *Entry) Kind() *Kind { return e.kg.kind }

// Group returns the entry's group, the entries of its authority.
func (e *Entry) Group() *Group { return e.kg.group }

// Source returns the server the entry uses now.
func (e *Entry) Source(tx *txn.Tx) *Source { return e.kg.group.Active(tx) }

// State returns the entry's state and whether it holds a resource.
func (e *Entry) State(*txn.Tx) (State, bool) { return e.state, e.res.ok() }

// Err returns the data error the entry carries, nil when none.
func (e *Entry) Err(*txn.Tx) error { return e.failureErr() }

// settled reports whether a valid response that carries the bytes e holds,
// from the server that sent them, changes nothing of e but the update
// that last carried them (held.from): e is ACKED, holds a resource, no
// timer runs, no deletion was ignored, it has no side fields (no failure,
// one watcher at most) and its watcher carries no ambient error
// (transition's evValid, unchanged: no state, no hook, no callback).
func (e *Entry) settled() bool {
	return e.state == StateACKed && e.res.ok() && e.flags&(flagDeletionIgnored|flagTiming|flagExtra) == 0 &&
		!(e.is(flagFirstWatching) && e.first.heardAmbient)
}

// current returns what transition reads of e.
func (e *Entry) current() entryState {
	return entryState{state: e.state, cached: e.res.ok(), deletionIgnored: e.is(flagDeletionIgnored)}
}

// Snapshot is one entry as Dump copies it. Package xdsclient exports it
// as EntrySnapshot, whose fields are these, by name: its conversion is
// generated from the two definitions (go generate in xdsclient), and
// fails to build or its test fails when they differ.
type Snapshot struct {
	// TypeURL, Name and Authority name the entry; Server is the server it
	// is subscribed on.
	TypeURL   string
	Name      string
	Authority string
	Server    string
	State     State
	// Cached, with the bytes held, the version and time of the update that
	// last carried them and the server that sent them.
	Cached         bool
	Raw            []byte
	Version        string
	UpdatedAt      time.Time
	ResourceServer string
	// Err, with the version, time and bytes of the update that failed.
	Err           error
	FailedVersion string
	FailedAt      time.Time
	FailedRaw     []byte
	Watchers      int
}

// Snapshot copies the entry.
func (e *Entry) Snapshot(tx *txn.Tx) Snapshot {
	s := Snapshot{TypeURL: e.kg.kind.URL, Name: e.name, Authority: e.kg.group.Name, State: e.state, Server: e.kg.group.Active(tx).URI, Watchers: e.watcherCount()}
	if r := e.res; r.ok() {
		s.Cached, s.Raw, s.Version, s.UpdatedAt, s.ResourceServer = true, r.raw, r.from.version, r.from.at, r.from.src.URI
	}
	if f := e.failure(); f != nil {
		s.Err, s.FailedVersion, s.FailedAt, s.FailedRaw = f.err, f.version, f.at, f.raw
	}
	return s
}

// extra returns e's side fields, nil if it has none.
func (e *Entry) extra() *extra {
	if !e.is(flagExtra) {
		return nil
	}
	return e.kg.kind.extras[e]
}

// extraFields returns e's side fields, making them if needed.
func (e *Entry) extraFields() *extra {
	if x := e.extra(); x != nil {
		return x
	}
	k := e.kg.kind
	if k.extras == nil {
		k.extras = map[*Entry]*extra{}
	}
	x := &extra{}
	k.extras[e] = x
	e.set(flagExtra, true)
	return x
}

// tidy drops e's side fields once all of them are zero, or when e left
// the cache.
func (e *Entry) tidy() {
	if x := e.extra(); x != nil && (e.is(flagRemoved) || x.fail.err == nil && len(x.watchers) == 0) {
		delete(e.kg.kind.extras, e)
		e.set(flagExtra, false)
	}
}

// failure returns the data error e carries, nil when none.
func (e *Entry) failure() *failure {
	if x := e.extra(); x != nil && x.fail.err != nil {
		return &x.fail
	}
	return nil
}

func (e *Entry) failureErr() error {
	if f := e.failure(); f != nil {
		return f.err
	}
	return nil
}

func (e *Entry) clearFailure() {
	if x := e.extra(); x != nil {
		x.fail = failure{}
		e.tidy()
	}
}

// watchers yields e's watchers in the order they were added: the first
// one's record, if it still watches, was added before the others.
func (e *Entry) watchers(yield func(*Watcher) bool) {
	if e.is(flagFirstWatching) && !yield(&e.first) {
		return
	}
	if x := e.extra(); x != nil {
		for _, w := range x.watchers {
			if !yield(w) {
				return
			}
		}
	}
}

func (e *Entry) watcherCount() int {
	n := 0
	if e.is(flagFirstWatching) {
		n = 1
	}
	if x := e.extra(); x != nil {
		n += len(x.watchers)
	}
	return n
}

// addWatcher adds w, which is e.first when e had no watcher before.
func (e *Entry) addWatcher(w *Watcher) {
	if w == &e.first {
		e.set(flagFirstWatching, true)
		return
	}
	x := e.extraFields()
	x.watchers = append(x.watchers, w)
}

func (e *Entry) removeWatcher(w *Watcher) {
	if w == &e.first {
		e.set(flagFirstWatching, false)
		return
	}
	if x := e.extra(); x != nil {
		if i := slices.Index(x.watchers, w); i >= 0 {
			x.watchers = slices.Delete(x.watchers, i, i+1)
		}
		e.tidy()
	}
}
