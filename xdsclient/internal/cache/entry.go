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
// A client may hold tens of thousands of entries, so an entry is kept to
// 112 bytes: the resource is held as its bytes (decoded again for a watcher
// that joins later), the version, time and server of an update are shared
// by every entry the update carried, the server in use is its group's, and
// what most entries never need (a failure, a second watcher) lives in a
// side struct.
type Entry struct {
	kind    *Kind
	name    string
	group   *Group
	watcher *Watcher // the first watcher; the others are in x.watchers
	res     held     // the resource in use, if any
	x       *extra   // nil when every field of it is zero
	seenGen uint64   // the response that last named this entry
	// prev and next link the cache's entries in the order they were made
	// (Dump walks them); a removed entry keeps next.
	prev, next *Entry

	timerGen        uint32 // counts the starts and stops of the timer
	state           State
	removed         bool
	deletionIgnored bool // gRFC A53: a deletion was ignored (legacy mode)
	timing          bool // the does-not-exist timer runs, on the group's server
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
func (w *Watcher) Stop() { w.entry.kind.cache.cfg.Cancel(w) }

// Entry returns the watcher's entry, nil for a watch that was refused.
func (w *Watcher) Entry() *Entry { return w.entry }

// Name returns the entry's resource name, as subscribed.
func (e *Entry) Name() string { return e.name }

// Type returns the entry's resource type.
func (e *Entry) Type() xdsresource.Type { return e.kind.Type }

// Kind returns the entry's kind: its type and the order of requests.
func (e *Entry) Kind() *Kind { return e.kind }

// Group returns the entry's group, the entries of its authority.
func (e *Entry) Group() *Group { return e.group }

// Source returns the server the entry uses now.
func (e *Entry) Source(tx *txn.Tx) *Source { return e.group.Active(tx) }

// State returns the entry's state and whether it holds a resource.
func (e *Entry) State(*txn.Tx) (State, bool) { return e.state, e.res.ok() }

// Err returns the data error the entry carries, nil when none.
func (e *Entry) Err(*txn.Tx) error { return e.failureErr() }

// current returns what transition reads of e.
func (e *Entry) current() entryState {
	return entryState{state: e.state, cached: e.res.ok(), deletionIgnored: e.deletionIgnored}
}

// Snapshot is one entry as Dump copies it.
type Snapshot struct {
	State    State
	Server   string
	Watchers int
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
}

// Snapshot copies the entry.
func (e *Entry) Snapshot(tx *txn.Tx) Snapshot {
	s := Snapshot{State: e.state, Server: e.group.Active(tx).URI, Watchers: e.watcherCount()}
	if r := e.res; r.ok() {
		s.Cached, s.Raw, s.Version, s.UpdatedAt, s.ResourceServer = true, r.raw, r.from.version, r.from.at, r.from.src.URI
	}
	if f := e.failure(); f != nil {
		s.Err, s.FailedVersion, s.FailedAt, s.FailedRaw = f.err, f.version, f.at, f.raw
	}
	return s
}

// extraFields returns e.x, making it if needed.
func (e *Entry) extraFields() *extra {
	if e.x == nil {
		e.x = &extra{}
	}
	return e.x
}

// tidy drops e.x once all of it is zero.
func (e *Entry) tidy() {
	if x := e.x; x != nil && x.fail.err == nil && len(x.watchers) == 0 {
		e.x = nil
	}
}

// failure returns the data error e carries, nil when none.
func (e *Entry) failure() *failure {
	if e.x == nil || e.x.fail.err == nil {
		return nil
	}
	return &e.x.fail
}

func (e *Entry) failureErr() error {
	if f := e.failure(); f != nil {
		return f.err
	}
	return nil
}

func (e *Entry) clearFailure() {
	if e.x != nil {
		e.x.fail = failure{}
		e.tidy()
	}
}

// watchers yields e's watchers in the order they were added.
func (e *Entry) watchers(yield func(*Watcher) bool) {
	if e.watcher == nil || !yield(e.watcher) {
		return
	}
	if e.x != nil {
		for _, w := range e.x.watchers {
			if !yield(w) {
				return
			}
		}
	}
}

func (e *Entry) watcherCount() int {
	switch {
	case e.watcher == nil:
		return 0
	case e.x == nil:
		return 1
	}
	return 1 + len(e.x.watchers)
}

func (e *Entry) addWatcher(w *Watcher) {
	if e.watcher == nil {
		e.watcher = w
		return
	}
	x := e.extraFields()
	x.watchers = append(x.watchers, w)
}

func (e *Entry) removeWatcher(w *Watcher) {
	var rest []*Watcher
	if e.x != nil {
		rest = e.x.watchers
	}
	if e.watcher == w {
		e.watcher = nil
		if len(rest) > 0 {
			e.watcher, e.x.watchers = rest[0], rest[1:]
		}
	} else if i := slices.Index(rest, w); i >= 0 {
		e.x.watchers = slices.Delete(rest, i, i+1)
	}
	e.tidy()
}
