package cache

import (
	"fmt"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/xdslens/xdslens/xdsclient/internal/txn"
	"github.com/xdslens/xdslens/xdsclient/internal/xerr"
)

// Applied is what a response did, counted as gRFC A78 counts: subscribed
// resources that passed or failed validation, plus entries whose name could
// not be determined and TP3 errors, counted as invalid. NACK is the error
// that rejects the response, nil to ACK it; Wait is closed once the
// watchers have taken it.
type Applied struct {
	Valid, Invalid, Errors, Removed int
	NACK                            error
	Wait                            <-chan struct{}
}

// pending is an event of the response other than a resource's, with its
// details.
type pending struct {
	decision
	d details
}

// details are what an event brings besides its kind: the resource of a
// valid event (what watchers get, the bytes, and the update that carried
// them), the update of a data error (for the failure record: its version
// and time, and the rejected bytes) with what the server said (the NACK's
// reason, a TP3 message, bounded by the transport), or, for a server
// failure, its cause as the authority words it.
type details struct {
	res     any
	raw     []byte
	u       *update
	failRaw []byte
	err     error
	msg     string
	cause   string
}

// commit carries out the events of response r, decided (decide): the
// watchers' callbacks are held back until the response's hook is posted,
// so that observers hear of the update before watchers act on it.
func (c *Cache) commit(r *response) Applied {
	tx, src := r.tx, r.src
	src.Lane.Hold(tx)
	src.Lane.Grow(tx, r.changed)
	for i := range r.items {
		if it := &r.items[i]; it.ev.kind != 0 {
			c.carryOut(tx, it.e, src, it.ev, it.out, details{res: it.res, raw: it.kept, u: it.u, failRaw: it.kept, err: it.err})
		}
	}
	for _, p := range r.others {
		c.carryOut(tx, p.e, src, p.ev, p.out, p.d)
	}
	c.cfg.Observer.Applied(tx, src, r.typeURL, r.base.version, r.nonce, r.delta, r.Applied)
	src.Lane.Release(tx)
	a := r.Applied
	a.Wait = src.Lane.Barrier(tx)
	return a
}

// decision is an event of entry e, in state s, and, once decided, what
// it does.
type decision struct {
	e   *Entry
	ev  event
	s   entryState
	out outcome
}

// apply decides an event that comes alone (a timer that fires, a
// subscription sent, the failure of a server) and carries it out.
func (c *Cache) apply(tx *txn.Tx, e *Entry, ev event, d details) {
	src := e.kg.group.Active(tx)
	out, _ := src.outcome(e, ev)
	c.carryOut(tx, e, src, ev, out, d)
}

// carryOut is where every event of an entry takes effect, as decided:
// out, what ev (with d) does to e, which uses src. It carries out the
// timer, the A53 logs, the failure record, the state and resource
// (setState, which tells the Observer), then the watchers. Nothing else
// changes an entry's state or tells its watchers of an event.
func (c *Cache) carryOut(tx *txn.Tx, e *Entry, src *Source, ev event, out outcome, d details) {
	switch {
	case out.stopTimer:
		c.stopTimer(tx, e, src)
	case out.startTimer:
		c.startTimer(tx, e, src)
	}
	switch {
	case out.logIgnored:
		c.cfg.Observer.Logged(tx, e, src, LogDeletionIgnored, d.u.version)
	case out.logUnignored:
		c.cfg.Observer.Logged(tx, e, src, LogDeletionUnignored, d.u.version)
	}
	e.set(flagDeletionIgnored, out.deletionIgnored)
	var err error
	if out.notify == notifyError || out.notify == notifyAmbient || out.failure == recordFailure {
		err = c.resourceErr(out.errCode, e, src, cause(ev, d, src))
	}
	switch out.failure {
	case recordFailure:
		f := failure{err: err, raw: d.failRaw}
		if d.u != nil {
			f.version, f.at = d.u.version, d.u.at
		}
		e.extraFields().fail = f
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

// cause returns what an error of ev says after the resource, the server
// and the node it names. What it quotes of the server is bounded already.
func cause(ev event, d details, src *Source) string {
	switch ev.kind {
	case evInvalid:
		return fmt.Sprintf("rejected (NACK) version %q: %v", d.u.shown, d.err)
	case evServerError:
		return fmt.Sprintf("control plane reported %s: %s", ev.code, d.msg)
	case evDeletion:
		if ev.explicit {
			return fmt.Sprintf("deleted by the server (removed_resources of the response at system version %q)", d.u.shown)
		}
		return fmt.Sprintf("deleted by the server (absent from the response at version %q)", d.u.shown)
	case evTimer:
		if src.Transient {
			return fmt.Sprintf("not received within %v of subscribing (resource_timer_is_transient_error: the server may be slow)", src.Timeout)
		}
		return fmt.Sprintf("does not exist: not received within %v of subscribing", src.Timeout)
	}
	return d.cause
}

// resourceErr is the error the watchers of e get, from src, with cause.
func (c *Cache) resourceErr(code codes.Code, e *Entry, src *Source, cause string) error {
	return xerr.Resource(code, e.kg.kind.Short, e.name, src.URI, c.cfg.NodeID, cause)
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
	if gs := e.kg.group.g.Of(tx); old != state {
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
	e.kg.group.Active(tx).Lane.Notify(tx, w, res, err, ambient)
}

// startTimer starts e's timer on src, the server it uses, unless it runs.
func (c *Cache) startTimer(tx *txn.Tx, e *Entry, src *Source) {
	t := src.t.Of(tx)
	if e.is(flagTiming|flagRemoved) || t.closed || e.kg.group.Active(tx) != src {
		return
	}
	t.gen++
	e.set(flagTiming, true)
	now := tx.Now()
	t.q = append(t.q, timerSlot{e: e, gen: t.gen, at: now.Add(src.Timeout)})
	if len(t.q) == 1 {
		if t.wheel == nil {
			t.wheel = time.AfterFunc(src.Timeout, func() { c.onWheel(src) })
		} else {
			t.wheel.Reset(src.Timeout)
		}
	}
	if t.timed == nil {
		t.timed = map[*Entry]uint32{}
	}
	t.timed[e] = t.gen
	c.cfg.Observer.TimerStarted(tx, e, src)
}

// stopTimer stops e's timer if it runs on src.
func (c *Cache) stopTimer(tx *txn.Tx, e *Entry, src *Source) {
	if !e.is(flagTiming) || src == nil {
		return
	}
	t := src.t.Of(tx)
	if _, ok := t.timed[e]; !ok {
		return
	}
	e.set(flagTiming, false)
	t.untime(e)
	c.cfg.Observer.TimerStopped(tx, e, src)
}

// untime removes e from t.timed. Once no timer runs, the slots left are
// stale and the wheel need not fire; the map is dropped too, since after a
// large subscription it would keep room for every entry.
func (t *timers) untime(e *Entry) {
	delete(t.timed, e)
	if len(t.timed) == 0 {
		t.timed = nil
		t.q = nil
		if t.wheel != nil {
			t.wheel.Stop()
		}
	}
}
