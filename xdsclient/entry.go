package xdsclient

import (
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/xdslens/xdslens/xdsclient/xdsresource"
)

// entry is one cache entry: a subscribed resource, what is held for it and
// who watches it. All fields are guarded by Client.mu.
//
// An entry is kept small, since a client may hold many: its authority's name
// is auth.name, and the failure record, which most entries lack, is a
// separate struct.
type entry struct {
	typ             xdsresource.Type
	name            string
	auth            *authority
	ch              *channel // the server the entry uses now: its authority's active one
	watchers        []*watcherRef
	removed         bool
	deletionIgnored bool // gRFC A53: a deletion was ignored (legacy mode)
	timing          bool // the does-not-exist timer runs, on e.ch

	state     CacheState
	res       *Resource // the resource in use, nil when none
	hash      uint64    // hash of res.Raw.Value
	version   string    // version_info of the response that last carried res
	updatedAt time.Time

	fail *failure // the data error the entry carries, in the cache; nil when none

	ambient   error // pending ambient error, given to new watchers after res
	notifyErr error // error last given through ResourceChanged while nothing is held

	sent     []sentOn // the streams on which the subscription last went out, per server
	seenGen  uint64   // the response that last named this entry
	timerGen uint64   // counts the starts and stops of the timer
}

// failure is the data error of a cache entry (NACK, TP3 error, deletion,
// timeout) and the update that caused it, when one did.
type failure struct {
	err     error
	version string
	at      time.Time
	raw     *anypb.Any // the rejected resource, when its bytes are known
}

// errLocked returns the data error e carries, nil when none.
func (e *entry) errLocked() error {
	if e.fail == nil {
		return nil
	}
	return e.fail.err
}

// sentOn records that a subscription went out on a stream of a server.
type sentOn struct {
	ch     *channel
	stream uint64
}

// sentStream returns the stream of ch on which e's subscription last went
// out, 0 if none.
func (e *entry) sentStream(ch *channel) uint64 {
	for _, s := range e.sent {
		if s.ch == ch {
			return s.stream
		}
	}
	return 0
}

func (e *entry) markSent(ch *channel, stream uint64) {
	for i := range e.sent {
		if e.sent[i].ch == ch {
			e.sent[i].stream = stream
			return
		}
	}
	e.sent = append(e.sent, sentOn{ch, stream})
}

func (e *entry) forgetSent(ch *channel) {
	for i := range e.sent {
		if e.sent[i].ch == ch {
			e.sent = append(e.sent[:i], e.sent[i+1:]...)
			return
		}
	}
}

// setStateLocked is the one place where a cache entry changes state or
// starts or stops holding a resource; CacheStateChanged hooks see every
// change here. hash is the hash of res's bytes when res is new.
func (c *Client) setStateLocked(e *entry, state CacheState, res *Resource, hash uint64) {
	old, oldCached := e.state, e.res != nil
	if res != e.res {
		byHash := c.byHash[e.typ.TypeURL()]
		if byHash == nil {
			byHash = map[uint64]*entry{}
			c.byHash[e.typ.TypeURL()] = byHash
		}
		if e.res != nil && byHash[e.hash] == e {
			delete(byHash, e.hash)
		}
		e.res = res
		if res != nil {
			e.hash = hash
			if !e.removed {
				byHash[hash] = e
			}
		}
	}
	e.state = state
	if old == state && oldCached == (res != nil) {
		return
	}
	for _, h := range c.hookList() {
		if f := h.CacheStateChanged; f != nil {
			info := CacheStateInfo{
				Target: c.o.target, Authority: e.auth.name, TypeURL: e.typ.TypeURL(), Name: e.name,
				Old: old, New: state, OldCached: oldCached, NewCached: res != nil, Server: e.ch.uri, Err: e.errLocked(),
			}
			c.hook(func() { f(info) })
		}
	}
}

// notifyLocked queues a callback for every watcher of e.
func (c *Client) notifyLocked(e *entry, res *Resource, err error, ambient bool) {
	for _, w := range e.watchers {
		c.notes = append(c.notes, notification{w: w, res: res, err: err, ambient: ambient})
	}
}

// resourceChangedLocked records and delivers ResourceChanged(res, err).
func (c *Client) resourceChangedLocked(e *entry, res *Resource, err error) {
	e.ambient = nil
	e.notifyErr = err
	c.notifyLocked(e, res, err, false)
}

// ambientLocked records and delivers AmbientError(err).
func (c *Client) ambientLocked(e *entry, err error) {
	e.ambient = err
	c.notifyLocked(e, nil, err, true)
}

// reportLocked delivers an error according to whether a resource is held:
// AmbientError if one is, ResourceChanged otherwise (gRFC A88).
func (c *Client) reportLocked(e *entry, err error) {
	if e.res != nil {
		c.ambientLocked(e, err)
	} else {
		c.resourceChangedLocked(e, nil, err)
	}
}

func (c *Client) recordFailureLocked(e *entry, err error, version string, raw *anypb.Any, now time.Time) {
	if e.fail == nil {
		e.fail = &failure{}
	}
	*e.fail = failure{err: err, version: version, at: now, raw: raw}
}

func (c *Client) clearFailureLocked(e *entry) {
	e.fail = nil
}

// applyValidLocked accepts a valid resource. unchanged is set when its bytes
// equal those already held, in which case nothing is decoded or delivered
// unless the entry was not ACKED.
func (c *Client) applyValidLocked(e *entry, res *Resource, hash uint64, unchanged bool, version string, now time.Time) {
	e.ch.stopTimerLocked(e)
	e.version, e.updatedAt = version, now
	if e.deletionIgnored {
		e.deletionIgnored = false
		c.logger.Info("xDS resource deletion no longer ignored: the server sends the resource again",
			"type", shortName(e.typ), "name", e.name, "server", e.ch.uri)
	}
	if unchanged && e.state == StateACKed {
		return
	}
	if unchanged {
		res = e.res
	}
	c.clearFailureLocked(e)
	c.setStateLocked(e, StateACKed, res, hash)
	c.resourceChangedLocked(e, res, nil)
}

// dataErrorLocked applies a data error (NACK, deletion, TP3 NOT_FOUND or
// PERMISSION_DENIED) as gRFC A88 says: with fail_on_data_errors the held
// resource is dropped and ResourceChanged delivers the error; otherwise it
// is kept and the error is ambient. In legacy mode the feature is not used.
func (c *Client) dataErrorLocked(e *entry, state CacheState, err error) {
	keep := e.res
	if keep != nil && !c.o.legacy && e.ch.server.FailOnDataErrors {
		keep = nil
	}
	c.setStateLocked(e, state, keep, e.hash)
	c.reportLocked(e, err)
}

// applyInvalidLocked records a resource that failed validation (NACK).
func (c *Client) applyInvalidLocked(e *entry, raw *anypb.Any, cause error, version string, now time.Time) {
	e.ch.stopTimerLocked(e)
	err := c.resourceErrorf(codes.InvalidArgument, e, e.ch.uri, "rejected (NACK) version %q: %v", version, cause)
	if e.state == StateNACKed && e.fail != nil && e.fail.raw != nil && string(e.fail.raw.GetValue()) == string(raw.GetValue()) {
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
	e.ch.stopTimerLocked(e)
	err := c.resourceErrorf(code, e, e.ch.uri, "control plane reported %s: %s", code, msg)
	c.recordFailureLocked(e, err, version, nil, now)
	if code == codes.NotFound || code == codes.PermissionDenied {
		c.dataErrorLocked(e, StateReceivedError, err)
		return
	}
	c.setStateLocked(e, StateReceivedError, e.res, e.hash)
	c.reportLocked(e, err)
}

// applyDeletionLocked handles an LDS or CDS resource missing from a full
// state response.
func (c *Client) applyDeletionLocked(e *entry, version string, now time.Time) {
	if c.o.legacy {
		if e.ch.server.IgnoreResourceDeletion {
			if !e.deletionIgnored {
				e.deletionIgnored = true
				c.logger.Warn("xDS resource deletion ignored (ignore_resource_deletion): keeping the cached resource",
					"type", shortName(e.typ), "name", e.name, "server", e.ch.uri, "version", version)
			}
			return
		}
		err := c.resourceErrorf(codes.NotFound, e, e.ch.uri, "deleted by the server (absent from the response at version %q)", version)
		c.recordFailureLocked(e, err, version, nil, now)
		c.setStateLocked(e, StateDoesNotExist, nil, 0)
		c.resourceChangedLocked(e, nil, err)
		return
	}
	err := c.resourceErrorf(codes.NotFound, e, e.ch.uri, "deleted by the server (absent from the response at version %q)", version)
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
func (c *Client) onTimerLocked(e *entry, gen uint64) {
	if e.removed || !e.timing || e.timerGen != gen {
		return
	}
	e.timing = false
	e.ch.untime(e)
	if e.state != StateRequested {
		return
	}
	d, transient := c.resourceTimeout(e.ch)
	var err error
	state := StateDoesNotExist
	if transient {
		state = StateTimeout
		err = c.resourceErrorf(codes.Unavailable, e, e.ch.uri, "not received within %v of subscribing (resource_timer_is_transient_error: the server may be slow)", d)
	} else {
		err = c.resourceErrorf(codes.NotFound, e, e.ch.uri, "does not exist: not received within %v of subscribing", d)
	}
	c.recordFailureLocked(e, err, "", nil, time.Time{})
	c.setStateLocked(e, state, nil, 0)
	c.resourceChangedLocked(e, nil, err)
}
