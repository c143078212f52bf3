package xdsclient

import (
	"slices"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/anypb"

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
	fail      failure       // the data error the entry carries, in the cache; zero when none
	ambient   error         // pending ambient error, given to new watchers after the resource
	notifyErr error         // error last given through ResourceChanged while nothing is held
	watchers  []*watcherRef // watchers after the first
	sent      []sentOn      // subscriptions on other servers than sent's (gRFC A71)
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
	if x := e.x; x != nil && x.fail.err == nil && x.ambient == nil && x.notifyErr == nil && len(x.watchers) == 0 && len(x.sent) == 0 {
		e.x = nil
	}
}

func (e *entry) ambient() error {
	if e.x == nil {
		return nil
	}
	return e.x.ambient
}

func (e *entry) notifyErr() error {
	if e.x == nil {
		return nil
	}
	return e.x.notifyErr
}

// setErrs records the pending ambient error and the last error delivered
// through ResourceChanged.
func (e *entry) setErrs(ambient, notifyErr error) {
	if ambient == nil && notifyErr == nil && e.x == nil {
		return
	}
	x := e.extra()
	x.ambient, x.notifyErr = ambient, notifyErr
	e.tidy()
}

// failure returns the data error e carries, nil when none.
func (e *entry) failure() *failure {
	if e.x == nil || e.x.fail.err == nil {
		return nil
	}
	return &e.x.fail
}

// errLocked returns the data error e carries, nil when none.
func (e *entry) errLocked() error {
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

// setStateLocked is the one place where a cache entry changes state or
// starts or stops holding a resource; CacheStateChanged hooks see every
// change here.
func (c *Client) setStateLocked(e *entry, state CacheState, res held) {
	old, oldCached := e.state, e.res.ok()
	e.res = res
	e.state = state
	if old == state && oldCached == res.ok() {
		return
	}
	for _, h := range c.hookList() {
		if f := h.CacheStateChanged; f != nil {
			info := CacheStateInfo{
				Target: c.o.target, Authority: e.auth.name, TypeURL: e.kind.typ.TypeURL(), Name: e.name,
				Old: old, New: state, OldCached: oldCached, NewCached: res.ok(), Server: e.active().uri, Err: e.errLocked(),
			}
			c.hook(func() { f(info) })
		}
	}
}

// decodeHeld returns the resource h, held by e, for delivery, decoding its
// bytes again: the cache keeps bytes, not decoded values, which watchers
// keep if they need them. It reads only what never changes (e's type and
// name, h's bytes and update), so c.mu need not be held. It returns an error
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

// notifyLocked queues a callback for every watcher of e.
func (c *Client) notifyLocked(e *entry, res *Resource, err error, ambient bool) {
	for w := range e.watchers {
		c.notes = append(c.notes, notification{w: w, res: res, err: err, ambient: ambient})
	}
}

// resourceChangedLocked records and delivers ResourceChanged(res, err).
func (c *Client) resourceChangedLocked(e *entry, res *Resource, err error) {
	e.setErrs(nil, err)
	c.notifyLocked(e, res, err, false)
}

// ambientLocked records and delivers AmbientError(err).
func (c *Client) ambientLocked(e *entry, err error) {
	e.setErrs(err, e.notifyErr())
	c.notifyLocked(e, nil, err, true)
}

// reportLocked delivers an error according to whether a resource is held:
// AmbientError if one is, ResourceChanged otherwise (gRFC A88).
func (c *Client) reportLocked(e *entry, err error) {
	if e.res.ok() {
		c.ambientLocked(e, err)
	} else {
		c.resourceChangedLocked(e, nil, err)
	}
}

func (c *Client) recordFailureLocked(e *entry, err error, version string, raw []byte, now time.Time) {
	e.extra().fail = failure{err: err, version: version, at: now, raw: raw}
}

func (c *Client) clearFailureLocked(e *entry) {
	if e.x != nil {
		e.x.fail = failure{}
		e.tidy()
	}
}

// applyValidLocked accepts a valid resource, raw, that update u carried and
// that was decoded into res. unchanged is set when raw equals the bytes
// already held (res is then nil): nothing is delivered unless the entry was
// not ACKED.
func (c *Client) applyValidLocked(e *entry, res *Resource, raw []byte, unchanged bool, u *update) {
	e.active().stopTimerLocked(e)
	if e.deletionIgnored {
		e.deletionIgnored = false
		c.logger.Info("xDS resource deletion no longer ignored: the server sends the resource again",
			"type", shortName(e.kind.typ), "name", e.name, "server", e.active().uri)
	}
	if unchanged {
		raw = e.res.raw
		e.res.from = u
		if e.state == StateACKed {
			return
		}
		var err error
		if res, err = c.decodeHeld(e, e.res); err != nil {
			c.dataErrorLocked(e, StateNACKed, err)
			return
		}
	}
	c.clearFailureLocked(e)
	c.setStateLocked(e, StateACKed, held{raw: raw, from: u})
	c.resourceChangedLocked(e, res, nil)
}

// dataErrorLocked applies a data error (NACK, deletion, TP3 NOT_FOUND or
// PERMISSION_DENIED) as gRFC A88 says: with fail_on_data_errors the held
// resource is dropped and ResourceChanged delivers the error; otherwise it
// is kept and the error is ambient. In legacy mode the feature is not used.
func (c *Client) dataErrorLocked(e *entry, state CacheState, err error) {
	keep := e.res
	if keep.ok() && !c.o.legacy && e.active().server.FailOnDataErrors {
		keep = held{}
	}
	c.setStateLocked(e, state, keep)
	c.reportLocked(e, err)
}

// applyInvalidLocked records a resource that failed validation (NACK).
func (c *Client) applyInvalidLocked(e *entry, raw []byte, cause error, version string, now time.Time) {
	ch := e.active()
	ch.stopTimerLocked(e)
	err := c.resourceErrorf(codes.InvalidArgument, e, ch.uri, "rejected (NACK) version %q: %v", version, cause)
	if f := e.failure(); e.state == StateNACKed && f != nil && f.raw != nil && string(f.raw) == string(raw) {
		// The same invalid bytes again: the cache records the new attempt,
		// watchers have nothing new to learn.
		c.recordFailureLocked(e, err, version, raw, now)
		return
	}
	c.recordFailureLocked(e, err, version, raw, now)
	c.dataErrorLocked(e, StateNACKed, err)
}

// applyReceivedErrorLocked applies a TP3 error sent by the server.
func (c *Client) applyReceivedErrorLocked(e *entry, code codes.Code, msg, version string, now time.Time) {
	ch := e.active()
	ch.stopTimerLocked(e)
	err := c.resourceErrorf(code, e, ch.uri, "control plane reported %s: %s", code, msg)
	c.recordFailureLocked(e, err, version, nil, now)
	if code == codes.NotFound || code == codes.PermissionDenied {
		c.dataErrorLocked(e, StateReceivedError, err)
		return
	}
	c.setStateLocked(e, StateReceivedError, e.res)
	c.reportLocked(e, err)
}

// applyDeletionLocked handles an LDS or CDS resource missing from a full
// state response.
func (c *Client) applyDeletionLocked(e *entry, version string, now time.Time) {
	ch := e.active()
	if c.o.legacy {
		if ch.server.IgnoreResourceDeletion {
			if !e.deletionIgnored {
				e.deletionIgnored = true
				c.logger.Warn("xDS resource deletion ignored (ignore_resource_deletion): keeping the cached resource",
					"type", shortName(e.kind.typ), "name", e.name, "server", ch.uri, "version", version)
			}
			return
		}
		err := c.resourceErrorf(codes.NotFound, e, ch.uri, "deleted by the server (absent from the response at version %q)", version)
		c.recordFailureLocked(e, err, version, nil, now)
		c.setStateLocked(e, StateDoesNotExist, held{})
		c.resourceChangedLocked(e, nil, err)
		return
	}
	err := c.resourceErrorf(codes.NotFound, e, ch.uri, "deleted by the server (absent from the response at version %q)", version)
	c.recordFailureLocked(e, err, version, nil, now)
	c.dataErrorLocked(e, StateDoesNotExist, err)
}

// resourceTimeout is the does-not-exist timer for resources on a server.
func (c *Client) resourceTimeout(ch *channel) (time.Duration, bool) {
	if !c.o.legacy && ch.server.ResourceTimerIsTransientError {
		return 2 * c.o.resourceTimeout, true
	}
	return c.o.resourceTimeout, false
}

// onTimerLocked fires the does-not-exist timer of e started as generation
// gen.
func (c *Client) onTimerLocked(e *entry, gen uint32) {
	if e.removed || !e.timing || e.timerGen != gen {
		return
	}
	ch := e.active()
	e.timing = false
	ch.untime(e)
	if e.state != StateRequested {
		return
	}
	d, transient := c.resourceTimeout(ch)
	var err error
	state := StateDoesNotExist
	if transient {
		state = StateTimeout
		err = c.resourceErrorf(codes.Unavailable, e, ch.uri, "not received within %v of subscribing (resource_timer_is_transient_error: the server may be slow)", d)
	} else {
		err = c.resourceErrorf(codes.NotFound, e, ch.uri, "does not exist: not received within %v of subscribing", d)
	}
	c.recordFailureLocked(e, err, "", nil, time.Time{})
	c.setStateLocked(e, state, held{})
	c.resourceChangedLocked(e, nil, err)
}
