package cache

import (
	"fmt"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/xdslens/xdslens/internal/truncate"
	"github.com/xdslens/xdslens/xdsclient/internal/txn"
	"github.com/xdslens/xdslens/xdsclient/internal/xerr"
)

// details are what an event brings besides its kind: the resource of a
// valid event (what watchers get, the bytes, and the update that carried
// them), and for an error its cause (the text after the resource, server
// and node the error names) and what the cache records of the failed
// update.
type details struct {
	res     any
	raw     []byte
	u       *update
	cause   string
	version string
	at      time.Time
	failRaw []byte
}

// apply is where every event of an entry takes effect: it asks transition
// what ev does to e and carries that out: the timer, the A53 logs, the
// failure record, the state and resource (setState, which tells the
// Observer), then the watchers. Nothing else changes an entry's state or
// tells its watchers of an event.
func (c *Cache) apply(tx *txn.Tx, e *Entry, ev event, d details) {
	src := e.group.Active(tx)
	out := transition(entryState{state: e.state, cached: e.res.ok(), deletionIgnored: e.deletionIgnored}, ev, src.features())
	switch {
	case out.stopTimer:
		c.stopTimer(tx, e, src)
	case out.startTimer:
		c.startTimer(tx, e, src)
	}
	switch {
	case out.logIgnored:
		c.cfg.Observer.Logged(tx, e, src, LogDeletionIgnored, d.version)
	case out.logUnignored:
		c.cfg.Observer.Logged(tx, e, src, LogDeletionUnignored, d.version)
	}
	e.deletionIgnored = out.deletionIgnored
	var err error
	if out.notify == notifyError || out.notify == notifyAmbient || out.failure == recordFailure {
		err = c.resourceErr(out.errCode, e, src, d.cause)
	}
	switch out.failure {
	case recordFailure:
		e.extraFields().fail = failure{err: err, version: d.version, at: d.at, raw: d.failRaw}
	case clearFailure:
		e.clearFailure()
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
	c.setState(tx, e, out.state, res)
	switch out.notify {
	case notifyResource:
		c.notify(tx, e, d.res, nil, false)
	case notifyError:
		c.notify(tx, e, nil, err, false)
	case notifyAmbient:
		c.notify(tx, e, nil, err, true)
	case notifyCleared:
		for w := range e.watchers {
			if w.heardAmbient {
				c.notifyOne(tx, e, w, nil, nil, true)
			}
		}
	}
}

// features returns what decides the behaviour of entries on src.
func (src *Source) features() features {
	f := src.Features
	return features{legacy: f.Legacy, failOnDataErrors: f.FailOnDataErrors, ignoreDeletion: f.IgnoreDeletion, transientTimer: f.TransientTimer}
}

// resourceErr is the error the watchers of e get, from src, with cause.
func (c *Cache) resourceErr(code codes.Code, e *Entry, src *Source, cause string) error {
	return xerr.Resource(code, xerr.ShortName(e.kind.Type), e.name, src.URI, c.cfg.NodeID, cause)
}

// setState is the one place where an entry changes state or starts or
// stops holding a resource; the Observer sees every change here.
func (c *Cache) setState(tx *txn.Tx, e *Entry, state State, res held) {
	old, oldCached := e.state, e.res.ok()
	e.res = res
	e.state = state
	if old == state && oldCached == res.ok() {
		return
	}
	if gs := e.group.g.Of(tx); old != state {
		if old == StateRequested {
			gs.requested--
		}
		if state == StateRequested {
			gs.requested++
		}
	}
	c.cfg.Observer.StateChanged(tx, e, old, oldCached)
}

// notify posts a callback for every watcher of e, on the lane of the
// server e uses.
func (c *Cache) notify(tx *txn.Tx, e *Entry, res any, err error, ambient bool) {
	for w := range e.watchers {
		c.notifyOne(tx, e, w, res, err, ambient)
	}
}

// notifyOne posts a callback for w, and records whether it now carries an
// ambient error.
func (c *Cache) notifyOne(tx *txn.Tx, e *Entry, w *Watcher, res any, err error, ambient bool) {
	w.heardAmbient = ambient && err != nil
	e.group.Active(tx).Lane.Notify(tx, w, res, err, ambient)
}

// The events of a response, each with the cause its error gives.

func (c *Cache) applyInvalid(tx *txn.Tx, e *Entry, raw []byte, cause error, u *update) {
	f := e.failure()
	same := f != nil && f.raw != nil && string(f.raw) == string(raw)
	c.apply(tx, e, event{kind: evInvalid, sameBytes: same}, details{
		cause: fmt.Sprintf("rejected (NACK) version %s: %v", xerr.Shown(u.version), cause), version: u.version, at: u.at, failRaw: raw})
}

func (c *Cache) applyReceivedError(tx *txn.Tx, e *Entry, code codes.Code, msg string, u *update) {
	c.apply(tx, e, event{kind: evServerError, code: code}, details{
		cause: fmt.Sprintf("control plane reported %s: %s", code, truncate.String(msg, xerr.MaxShown)), version: u.version, at: u.at})
}

func (c *Cache) applyAbsence(tx *txn.Tx, e *Entry, u *update) {
	c.apply(tx, e, event{kind: evDeletion}, details{
		cause: fmt.Sprintf("deleted by the server (absent from the response at version %s)", xerr.Shown(u.version)), version: u.version, at: u.at})
}

func (c *Cache) applyRemoval(tx *txn.Tx, e *Entry, u *update) {
	c.apply(tx, e, event{kind: evDeletion, explicit: true}, details{
		cause: fmt.Sprintf("deleted by the server (removed_resources of the response at system version %s)", xerr.Shown(u.version)), version: u.version, at: u.at})
}
