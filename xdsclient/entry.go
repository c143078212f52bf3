package xdsclient

import (
	"fmt"
	"slices"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/xdslens/xdslens/internal/truncate"
	"github.com/xdslens/xdslens/xdsclient/internal/xerr"
	"github.com/xdslens/xdslens/xdsclient/xdsresource"
)

// entry is one cache entry: a subscribed resource, what is held for it and
// who watches it. All fields are guarded by Client.mu, but kind and name,
// which never change.
//
// A client may hold tens of thousands of entries, so an entry is kept to
// 112 bytes: the resource is held as its bytes (decoded again for a watcher
// that joins later), the version, time and server of an update are shared
// by every entry the update carried, the server in use is the authority's
// active one, and what most entries never need (a failure, a second
// watcher, pending errors, fallback subscriptions) lives in a side struct.
type entry struct {
	kind    *typeEntries // the entry's type and the table it is in
	name    string
	auth    *authority
	watcher *watcherRef // the first watcher; the others are in x.watchers
	res     held        // the resource in use, if any
	x       *entryExtra // nil when every field of it is zero
	sent    sentOn      // the stream of a server on which the subscription last went out; others in x.sent
	seenGen uint64      // the response that last named this entry
	// prev and next link the client's entries in the order they were made
	// (Client.link); a removed entry keeps next.
	prev, next *entry

	timerGen        uint32 // counts the starts and stops of the timer
	state           CacheState
	removed         bool
	deletionIgnored bool // gRFC A53: a deletion was ignored (legacy mode)
	timing          bool // the does-not-exist timer runs, on the active server
}

// held is a resource a cache entry holds: its serialized bytes (the value of
// the Any) and the update that last carried them. The zero held is none.
type held struct {
	raw  []byte
	from *update
}

func (h held) ok() bool { return h.from != nil }

// update is what the resources of one response share: its version_info,
// when it arrived, and the server that sent it.
type update struct {
	version string
	at      time.Time
	ch      *channel
}

// typeEntries is the cache entries of one resource type.
type typeEntries struct {
	typ   xdsresource.Type
	table entryTable
}

// entryExtra holds the fields of an entry that most entries never need.
type entryExtra struct {
	fail     failure       // the data error the entry carries, in the cache; zero when none
	watchers []*watcherRef // watchers after the first
	sent     []sentOn      // subscriptions on other servers than sent's (gRFC A71)
}

// failure is the data error of a cache entry (NACK, TP3 error, deletion,
// timeout) and the update that caused it, when one did. err is nil when
// there is none.
type failure struct {
	err     error
	version string
	at      time.Time
	raw     []byte // the rejected resource, when its bytes are known
}

// active returns the server the entry uses now: its authority's active one.
func (e *entry) active() *channel { return e.auth.activeChan() }

// extra returns e.x, making it if needed.
func (e *entry) extra() *entryExtra {
	if e.x == nil {
		e.x = &entryExtra{}
	}
	return e.x
}

// tidy drops e.x once all of it is zero.
func (e *entry) tidy() {
	if x := e.x; x != nil && x.fail.err == nil && len(x.watchers) == 0 && len(x.sent) == 0 {
		e.x = nil
	}
}

// failure returns the data error e carries, nil when none.
func (e *entry) failure() *failure {
	if e.x == nil || e.x.fail.err == nil {
		return nil
	}
	return &e.x.fail
}

// failureErr returns the data error e carries, nil when none.
func (e *entry) failureErr() error {
	if f := e.failure(); f != nil {
		return f.err
	}
	return nil
}

// watchers yields e's watchers in the order they were added.
func (e *entry) watchers(yield func(*watcherRef) bool) {
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

func (e *entry) watcherCount() int {
	switch {
	case e.watcher == nil:
		return 0
	case e.x == nil:
		return 1
	}
	return 1 + len(e.x.watchers)
}

func (e *entry) addWatcher(w *watcherRef) {
	if e.watcher == nil {
		e.watcher = w
		return
	}
	x := e.extra()
	x.watchers = append(x.watchers, w)
}

func (e *entry) removeWatcher(w *watcherRef) {
	var rest []*watcherRef
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

// sentOn records that a subscription went out on a stream of a server.
type sentOn struct {
	ch     *channel
	stream uint64
}

// sentStream returns the stream of ch on which e's subscription last went
// out, 0 if none.
func (e *entry) sentStream(ch *channel) uint64 {
	if e.sent.ch == ch {
		return e.sent.stream
	}
	if e.x != nil {
		for _, s := range e.x.sent {
			if s.ch == ch {
				return s.stream
			}
		}
	}
	return 0
}

func (e *entry) markSent(ch *channel, stream uint64) {
	if e.sent.ch == nil || e.sent.ch == ch {
		e.sent = sentOn{ch, stream}
		return
	}
	x := e.extra()
	for i := range x.sent {
		if x.sent[i].ch == ch {
			x.sent[i].stream = stream
			return
		}
	}
	x.sent = append(x.sent, sentOn{ch, stream})
}

func (e *entry) forgetSent(ch *channel) {
	var rest []sentOn
	if e.x != nil {
		rest = e.x.sent
	}
	if e.sent.ch == ch {
		e.sent = sentOn{}
		if len(rest) > 0 {
			e.sent, e.x.sent = rest[0], rest[1:]
		}
	} else if i := slices.IndexFunc(rest, func(s sentOn) bool { return s.ch == ch }); i >= 0 {
		e.x.sent = slices.Delete(rest, i, i+1)
	}
	e.tidy()
}

// setState is the one place where a cache entry changes state or
// starts or stops holding a resource; CacheStateChanged hooks see every
// change here.
func (tx *txn) setState(e *entry, state CacheState, res held) {
	c := tx.c
	old, oldCached := e.state, e.res.ok()
	e.res = res
	e.state = state
	if old == state && oldCached == res.ok() {
		return
	}
	if f := c.hooks().CacheStateChanged; f != nil {
		info := CacheStateInfo{
			Target: c.o.target, Authority: e.auth.name, TypeURL: e.kind.typ.TypeURL(), Name: e.name,
			Old: old, New: state, OldCached: oldCached, NewCached: res.ok(), Server: e.active().uri, Err: e.failureErr(), At: tx.clock(),
		}
		tx.hook(func() { f(info) })
	}
}

// decodeHeld returns the resource h, held by e, for delivery, decoding its
// bytes again: the cache keeps bytes, not decoded values, which watchers
// keep if they need them. It reads only what never changes (e's type and
// name, h's bytes and update), so the lock need not be held. It returns an error
// if the bytes no longer decode, which a Type that is deterministic, as it
// must be, never does.
func (c *Client) decodeHeld(e *entry, h held) (*Resource, error) {
	ch := h.from.ch
	typ := e.kind.typ
	raw := &anypb.Any{TypeUrl: typ.TypeURL(), Value: h.raw}
	opts := ch.decodeOptions()
	_, value, err := typ.Decode(opts, raw)
	if err != nil {
		return nil, c.resourceErrorf(codes.Internal, e, ch.uri, "held resource no longer decodes: %v", err)
	}
	return newResource(typ, e.name, value, raw, h.from), nil
}

// newResource makes the Resource delivered for value, decoded from raw,
// which update u carried.
func newResource(typ xdsresource.Type, name string, value any, raw *anypb.Any, u *update) *Resource {
	return &Resource{Type: typ, Name: name, Version: u.version, Value: value, Raw: raw, Server: u.ch.uri, ReceivedAt: u.at}
}

// notify queues a callback for every watcher of e, and records for
// each whether it now carries an ambient error.
func (tx *txn) notify(e *entry, res *Resource, err error, ambient bool) {
	for w := range e.watchers {
		tx.notifyOne(w, res, err, ambient)
	}
}

func (tx *txn) notifyOne(w *watcherRef, res *Resource, err error, ambient bool) {
	c := tx.c
	w.heardAmbient = ambient && err != nil
	n := notification{w: w, res: res, err: err, ambient: ambient}
	if c.holdWatchers {
		c.held = append(c.held, n)
		return
	}
	c.notes = append(c.notes, n)
}

// releaseWatchers queues the watcher callbacks held back while a
// response was applied, after the response's hooks.
func (tx *txn) releaseWatchers() {
	c := tx.c
	c.holdWatchers = false
	if len(c.held) == 0 {
		return
	}
	c.notes = append(c.notes, c.held...)
	clear(c.held)
	c.held = c.held[:0]
	if cap(c.held) > 1024 {
		c.held = nil // a large response leaves no large buffer behind
	}
}

// clearAmbient tells the watchers of e that heard an ambient error
// that its cause is over: AmbientError(nil), once (gRFC A88).
func (tx *txn) clearAmbient(e *entry) {
	for w := range e.watchers {
		if w.heardAmbient {
			tx.notifyOne(w, nil, nil, true)
		}
	}
}

// currentErr returns the error a watcher joining e now is told: with
// a resource held, the ambient error in force (the entry's data error, else
// the failure of the server in use), given after the resource; without
// one, the error that stands for the resource (its data error, or the
// failure of the server in use while nothing was received). Nothing is
// stored for this: an error whose cause is over is not found.
func (tx *txn) currentErr(e *entry) error {
	c := tx.c
	switch e.state {
	case StateACKed, StateRequested:
		if ch := e.active(); ch.h.Failure != nil {
			return c.unreachableErr(e, ch, ch.h.Failure)
		}
		return nil
	}
	return e.failureErr()
}

// unreachableErr is the error of e's watchers when ch, the server e uses,
// failed with reason.
func (c *Client) unreachableErr(e *entry, ch *channel, reason error) error {
	return c.resourceErrorf(codes.Unavailable, e, ch.uri, "%s", unreachableCause(e, reason))
}

func unreachableCause(e *entry, reason error) string {
	return fmt.Sprintf("xDS server unreachable (servers tried: %s): %v", serverList(e.auth, e.auth.active), reason)
}

func (tx *txn) clearFailure(e *entry) {
	if e.x != nil {
		e.x.fail = failure{}
		e.tidy()
	}
}

// featuresOf returns what decides e's behaviour on server ch (transition).
func (c *Client) featuresOf(ch *channel) features {
	s := ch.server
	return features{legacy: c.o.legacy, failOnDataErrors: s.FailOnDataErrors, ignoreDeletion: s.IgnoreResourceDeletion, transientTimer: s.ResourceTimerIsTransientError}
}

// details are what an event brings besides its kind: the resource of a
// valid event (decoded, as bytes, and the update that carried it), and for
// an error its cause (the text after the resource, server and node the
// error names) and what the cache records of the failed update.
type details struct {
	res     *Resource
	raw     []byte
	u       *update
	cause   string
	version string
	at      time.Time
	failRaw []byte
}

// apply is where every event of a cache entry takes effect: it asks
// transition what ev does to e and carries that out: the timer, the A53
// logs, the failure record, the state and resource (setState, which
// fires CacheStateChanged), then the watchers. Nothing else changes an
// entry's state or tells its watchers of an event.
func (tx *txn) apply(e *entry, ev event, d details) {
	c := tx.c
	ch := e.active()
	out := transition(entryState{state: e.state, cached: e.res.ok(), deletionIgnored: e.deletionIgnored}, ev, c.featuresOf(ch))
	if out.stopTimer {
		ch.stopTimer(tx, e)
	}
	switch {
	case out.logIgnored:
		c.logger.Warn("xDS resource deletion ignored (ignore_resource_deletion): keeping the cached resource",
			"type", xerr.ShortName(e.kind.typ), "name", e.name, "server", ch.uri, "version", truncate.String(d.version, xerr.MaxShown))
	case out.logUnignored:
		c.logger.Info("xDS resource deletion no longer ignored: the server sends the resource again",
			"type", xerr.ShortName(e.kind.typ), "name", e.name, "server", ch.uri)
	}
	e.deletionIgnored = out.deletionIgnored
	var err error
	if out.notify == notifyError || out.notify == notifyAmbient || out.failure == recordFailure {
		err = c.resourceErrorf(out.errCode, e, ch.uri, "%s", d.cause)
	}
	switch out.failure {
	case recordFailure:
		e.extra().fail = failure{err: err, version: d.version, at: d.at, raw: d.failRaw}
	case clearFailure:
		tx.clearFailure(e)
	}
	res := e.res
	switch out.resource {
	case holdNew:
		res = held{raw: d.raw, from: d.u}
	case dropResource:
		res = held{}
	}
	if ev.kind == evValid && ev.unchanged && res.ok() {
		res.from = d.u // the latest update carried the held bytes
	}
	tx.setState(e, out.state, res)
	switch out.notify {
	case notifyResource:
		tx.notify(e, d.res, nil, false)
	case notifyError:
		tx.notify(e, nil, err, false)
	case notifyAmbient:
		tx.notify(e, nil, err, true)
	case notifyCleared:
		tx.clearAmbient(e)
	}
}

// applyValid accepts a valid resource, raw, that update u carried and
// that was decoded into res. unchanged is set when raw equals the bytes
// already held from the same server (res is then nil).
func (tx *txn) applyValid(e *entry, res *Resource, raw []byte, unchanged bool, u *update) {
	tx.apply(e, event{kind: evValid, unchanged: unchanged}, details{res: res, raw: raw, u: u})
}

// applyInvalid records a resource that failed validation (NACK).
func (tx *txn) applyInvalid(e *entry, raw []byte, cause error, version string, now time.Time) {
	f := e.failure()
	same := f != nil && f.raw != nil && string(f.raw) == string(raw)
	tx.apply(e, event{kind: evInvalid, sameBytes: same}, details{
		cause: fmt.Sprintf("rejected (NACK) version %s: %v", xerr.Shown(version), cause), version: version, at: now, failRaw: raw})
}

// applyReceivedError applies a TP3 error sent by the server.
func (tx *txn) applyReceivedError(e *entry, code codes.Code, msg, version string, now time.Time) {
	tx.apply(e, event{kind: evServerError, code: code}, details{
		cause: fmt.Sprintf("control plane reported %s: %s", code, truncate.String(msg, xerr.MaxShown)), version: version, at: now})
}

// applyDeletion handles an LDS or CDS resource missing from a full
// state response.
func (tx *txn) applyDeletion(e *entry, version string, now time.Time) {
	tx.apply(e, event{kind: evDeletion}, details{
		cause: fmt.Sprintf("deleted by the server (absent from the response at version %s)", xerr.Shown(version)), version: version, at: now})
}

// applyRemoval handles a resource, of any type, named in removed_resources
// of a delta response.
func (tx *txn) applyRemoval(e *entry, version string, now time.Time) {
	tx.apply(e, event{kind: evDeletion, explicit: true}, details{
		cause: fmt.Sprintf("deleted by the server (removed_resources of the response at system version %s)", xerr.Shown(version)), version: version, at: now})
}

// resourceTimeout is the does-not-exist timer for resources on a server.
func (c *Client) resourceTimeout(ch *channel) (time.Duration, bool) {
	if !c.o.legacy && ch.server.ResourceTimerIsTransientError {
		return 2 * c.o.resourceTimeout, true
	}
	return c.o.resourceTimeout, false
}

// onTimer fires the does-not-exist timer of e started as generation
// gen.
func (tx *txn) onTimer(e *entry, gen uint32) {
	c := tx.c
	if e.removed || !e.timing || e.timerGen != gen {
		return
	}
	ch := e.active()
	e.timing = false
	ch.untime(e)
	d, transient := c.resourceTimeout(ch)
	cause := fmt.Sprintf("does not exist: not received within %v of subscribing", d)
	if transient {
		cause = fmt.Sprintf("not received within %v of subscribing (resource_timer_is_transient_error: the server may be slow)", d)
	}
	tx.apply(e, event{kind: evTimer}, details{cause: cause})
}
