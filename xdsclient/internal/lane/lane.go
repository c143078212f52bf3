// Package lane runs a client's hook calls and watcher callbacks. A Lane
// runs what is posted to it one at a time, in the order posted, on a
// goroutine of its own, never under the client's lock. The client has one
// lane per xDS server, for everything that server's stream causes, and one
// for what no server causes; so a hook or a watcher that blocks holds back
// only its lane, and the stream that waits for that lane (Barrier) before
// it reads on: the streams of other servers keep delivering.
//
// What a lane runs:
//
//	posted with   runs                                  after the client closed
//	Hook          a hook call                           yes
//	Notify        a watcher callback, through Run       no
//	Call          a callback of a watcher, as given     yes (a watch refused on a closed client)
//	Barrier       closes a channel: what came before ran
//	Fence         waits for another lane's Barrier
//
// Posting happens under the client's lock (a txn.Tx), at the moment of the
// event; the posts of one holding of the lock reach the lane when it is
// released (txn.Flusher), so each lane sees the events in the order they
// happened. A watcher's callbacks stay in order when its resource moves to
// another server's lane (fallback): the new lane is fenced behind the old.
package lane

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/xdslens/xdslens/xdsclient/internal/goid"
	"github.com/xdslens/xdslens/xdsclient/internal/txn"
)

// Watch is the state a watcher shares with the lanes that run its
// callbacks: whether it is cancelled. Embed it in the watcher's record to
// make that record a Watcher.
type Watch struct {
	cancelled atomic.Bool
}

func (w *Watch) watch() *Watch { return w }

// Watcher is a watcher's record: any type that embeds a Watch.
type Watcher interface{ watch() *Watch }

// Cancel marks w cancelled; no callback of w starts after it. It reports
// whether w was not cancelled before.
func (w *Watch) Cancel() bool { return w.cancelled.CompareAndSwap(false, true) }

// Wait returns once no lane of set runs a callback of w, but the one the
// caller may run in: a watcher that cancels itself from its own callback
// does not wait for itself (the callbacks after it find w cancelled).
// Whether the caller is that callback is asked (goid) only of a lane that
// runs a callback of w at that moment, which a cancel seldom meets.
func (w *Watch) Wait(set *Set) {
	var me int64
	for _, c := range set.runningOf(w) {
		if me == 0 {
			me = goid.Get()
		}
		if c.gid.Load() == me {
			continue
		}
		c.waiting.Add(1)
		c.mu.Lock()
		for c.current.Load() == w {
			c.cond.Wait()
		}
		c.mu.Unlock()
		c.waiting.Add(-1)
	}
}

// Set is the lanes of one client that have a goroutine running, which a
// cancel looks through and Close waits for. The zero Set is empty.
type Set struct {
	mu    sync.Mutex
	cond  sync.Cond     // on mu: a lane left
	cores map[*core]any // the Lane of each core
}

func (s *Set) add(c *core, l any) {
	s.mu.Lock()
	if s.cores == nil {
		s.cores = map[*core]any{}
	}
	s.cores[c] = l
	s.mu.Unlock()
}

func (s *Set) remove(c *core) {
	s.mu.Lock()
	delete(s.cores, c)
	if s.cond.L != nil {
		s.cond.Broadcast()
	}
	s.mu.Unlock()
}

// Wait returns once no lane of s has a goroutine running: each ran what
// was posted to it and ended (its client closed, or it was closed).
func (s *Set) Wait() {
	s.mu.Lock()
	s.cond.L = &s.mu
	for len(s.cores) > 0 {
		s.cond.Wait()
	}
	s.mu.Unlock()
}

// runningOf returns the lanes of s that run a callback of w now: nil,
// without allocating, when none does.
func (s *Set) runningOf(w *Watch) []*core {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*core
	for c := range s.cores {
		if c.current.Load() == w {
			out = append(out, c)
		}
	}
	return out
}

// Running reports whether the caller runs on a lane of s: inside a hook
// call or a callback.
func (s *Set) Running() bool { return s.Current() != nil }

// Current returns the lane (a *Lane[W]) the caller runs on, nil if none.
// Only a lane that runs a hook or a callback at that moment can be the
// caller's, and only then is the caller's goroutine ID read (goid): when
// no lane runs one, Current costs a look at each lane.
func (s *Set) Current() any {
	s.mu.Lock()
	defer s.mu.Unlock()
	var me int64
	for c, l := range s.cores {
		if c.current.Load() == nil {
			continue
		}
		if me == 0 {
			me = goid.Get()
		}
		if c.gid.Load() == me {
			return l
		}
	}
	return nil
}

// Lane is one serial queue of hook calls and watcher callbacks; W is the
// watcher's record.
type Lane[W Watcher] struct {
	core
	ctx  context.Context
	run  func(w W, payload any, err error, ambient bool)
	p    txn.Guarded[posted[W]]
	wake chan struct{}
	// done is closed when the lane's goroutine has returned: the client
	// closed (ctx), or the lane was closed and ran what it had.
	done chan struct{}
	// queue is what the goroutine has yet to run; over is set once it has
	// returned, and draining while a drain goroutine runs what was posted
	// after that. Guarded by mu.
	queue          []item[W]
	over, draining bool
}

// core is the part of a Lane that watchers wait on.
type core struct {
	set  *Set
	mu   sync.Mutex
	cond sync.Cond
	// current is the watcher whose callback runs now, hookRunning while a
	// hook call runs, nil between them.
	current atomic.Pointer[Watch]
	waiting atomic.Int32 // Wait calls waiting on cond
	// gid is the ID of the goroutine that runs the lane's items, read
	// when it first runs a hook or a callback (enter); 0 until then.
	gid atomic.Int64
}

// hookRunning is what current holds while a hook call runs.
var hookRunning Watch

// enter publishes that the lane's goroutine runs user code now: a
// callback of w, or a hook call (w is hookRunning). The goroutine's ID is
// published before, so that whoever sees current sees it too.
func (c *core) enter(w *Watch) {
	if c.gid.Load() == 0 {
		c.gid.Store(goid.Get())
	}
	c.current.Store(w)
}

// posted is what was posted to a lane during one holding of the lock.
type posted[W Watcher] struct {
	items      []item[W]
	held       []item[W] // watcher callbacks held back (Hold)
	hold       bool
	registered bool // the lane is among the Tx's Flushers
}

type kind uint8

const (
	kindHook kind = iota + 1
	kindNotify
	kindCall
	kindBarrier
	kindFence
	kindClose
)

type item[W Watcher] struct {
	kind    kind
	ambient bool
	w       W
	payload any
	err     error
	fn      func()
	ch      chan struct{}
}

// New starts a lane of set that runs watcher callbacks with run, until ctx
// is done: then it runs what was posted before but the Notify callbacks,
// and returns.
func New[W Watcher](set *Set, ctx context.Context, run func(w W, payload any, err error, ambient bool)) *Lane[W] {
	l := &Lane[W]{ctx: ctx, run: run, wake: make(chan struct{}, 1), done: make(chan struct{})}
	l.set = set
	l.cond.L = &l.mu
	set.add(&l.core, l)
	started := make(chan struct{})
	go l.loop(started)
	<-started
	return l
}

// Done is closed once the lane's goroutine has returned.
func (l *Lane[W]) Done() <-chan struct{} { return l.done }

// Hook posts a hook call.
func (l *Lane[W]) Hook(tx *txn.Tx, fn func()) { l.post(tx, item[W]{kind: kindHook, fn: fn}) }

// Notify posts a watcher callback: run(w, payload, err, ambient), unless
// w is cancelled by then. Between Hold and Release it is held back.
func (l *Lane[W]) Notify(tx *txn.Tx, w W, payload any, err error, ambient bool) {
	it := item[W]{kind: kindNotify, w: w, payload: payload, err: err, ambient: ambient}
	p := l.p.Of(tx)
	if p.hold {
		p.held = append(p.held, it)
		return
	}
	l.post(tx, it)
}

// Call posts fn as a callback of w: it runs unless w is cancelled by then,
// also once the client is closed.
func (l *Lane[W]) Call(tx *txn.Tx, w W, fn func()) {
	l.post(tx, item[W]{kind: kindCall, w: w, fn: fn})
}

// Hold holds the watcher callbacks posted from now back until Release.
func (l *Lane[W]) Hold(tx *txn.Tx) { l.p.Of(tx).hold = true }

// Release posts the callbacks held since Hold, after what was posted
// meanwhile.
func (l *Lane[W]) Release(tx *txn.Tx) {
	p := l.p.Of(tx)
	p.hold = false
	if len(p.held) == 0 {
		return
	}
	l.register(tx, p)
	if len(p.items) == 0 {
		p.items, p.held = p.held, p.items
		return
	}
	p.items = append(p.items, p.held...)
	clear(p.held)
	p.held = p.held[:0]
	if cap(p.held) > 1024 {
		p.held = nil // a large response leaves no large buffer behind
	}
}

// growSlack is the room Grow leaves for the items posted after the held
// callbacks.
const growSlack = 4

// Grow makes room for n more held callbacks, so that a response with many
// changes allocates its queue once: the room includes the few items
// posted after them in the same holding of the lock (a Barrier, say),
// since the held callbacks become the queue they are appended to.
func (l *Lane[W]) Grow(tx *txn.Tx, n int) {
	p := l.p.Of(tx)
	if cap(p.held)-len(p.held) < n {
		held := make([]item[W], len(p.held), len(p.held)+n+growSlack)
		copy(held, p.held)
		p.held = held
	}
}

// Barrier returns a channel closed once everything posted to l before it
// has run (or been skipped, once the client is closed).
func (l *Lane[W]) Barrier(tx *txn.Tx) <-chan struct{} {
	ch := make(chan struct{})
	l.post(tx, item[W]{kind: kindBarrier, ch: ch})
	return ch
}

// Fence makes what is posted to l from now on wait until everything
// posted to the others so far has run.
func (l *Lane[W]) Fence(tx *txn.Tx, others ...*Lane[W]) {
	for _, other := range others {
		if other == l || other == nil {
			continue
		}
		ch := make(chan struct{})
		other.post(tx, item[W]{kind: kindBarrier, ch: ch})
		l.post(tx, item[W]{kind: kindFence, ch: ch})
	}
}

// Close ends the lane once it has run what was posted to it; what is
// posted later runs on a goroutine started for it.
func (l *Lane[W]) Close(tx *txn.Tx) { l.post(tx, item[W]{kind: kindClose}) }

func (l *Lane[W]) post(tx *txn.Tx, it item[W]) {
	p := l.p.Of(tx)
	l.register(tx, p)
	p.items = append(p.items, it)
}

func (l *Lane[W]) register(tx *txn.Tx, p *posted[W]) {
	if !p.registered {
		p.registered = true
		tx.Flush(l)
	}
}

// Flush hands what was posted during this holding of the lock to the
// lane's goroutine. It implements txn.Flusher.
func (l *Lane[W]) Flush(tx *txn.Tx) {
	p := l.p.Of(tx)
	p.registered = false
	if len(p.items) == 0 {
		return
	}
	l.mu.Lock()
	if len(l.queue) == 0 {
		l.queue, p.items = p.items, nil
	} else {
		l.queue = append(l.queue, p.items...)
		clear(p.items)
		p.items = p.items[:0]
	}
	start := l.over && !l.draining
	if start {
		l.draining = true
	}
	l.mu.Unlock()
	if start {
		go l.drain()
		return
	}
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

func (l *Lane[W]) loop(started chan struct{}) {
	defer close(l.done)
	defer l.leave()
	close(started)
	for {
		l.mu.Lock()
		q := l.queue
		l.queue = nil
		l.mu.Unlock()
		for i := range q {
			if l.runOne(&q[i]) {
				// Closed: what follows runs on a drain goroutine.
				l.mu.Lock()
				l.queue = append(q[i+1:len(q):len(q)], l.queue...)
				l.over = true
				start := len(l.queue) > 0 && !l.draining
				l.draining = start
				l.mu.Unlock()
				if start {
					go l.drain()
				}
				return
			}
		}
		if len(q) > 0 {
			continue
		}
		select {
		case <-l.wake:
		case <-l.ctx.Done():
			l.runQueued(func() { l.over = true })
			return
		}
	}
}

// runQueued runs what is queued until the queue is empty, then calls done
// with mu held.
func (l *Lane[W]) runQueued(done func()) {
	for {
		l.mu.Lock()
		q := l.queue
		l.queue = nil
		if len(q) == 0 {
			done()
			l.mu.Unlock()
			return
		}
		l.mu.Unlock()
		for i := range q {
			l.runOne(&q[i])
		}
	}
}

// drain runs what was posted after the lane's goroutine returned, as that
// goroutine would have, and ends once nothing is left. It counts as the
// lane's goroutine while it runs.
func (l *Lane[W]) drain() {
	l.set.add(&l.core, l)
	defer l.leave()
	l.gid.Store(0) // another goroutine than the lane's first one: read again
	l.runQueued(func() { l.draining = false })
}

// leave takes the lane out of its set once no goroutine runs it.
func (l *Lane[W]) leave() {
	l.mu.Lock()
	idle := l.over && !l.draining
	l.mu.Unlock()
	if idle {
		l.set.remove(&l.core)
	}
}

// runOne runs one item, and reports a Close.
func (l *Lane[W]) runOne(it *item[W]) (closed bool) {
	switch it.kind {
	case kindHook:
		l.enter(&hookRunning)
		it.fn()
		l.current.Store(nil)
	case kindBarrier:
		close(it.ch)
	case kindFence:
		select {
		case <-it.ch:
		case <-l.ctx.Done():
		}
	case kindCall:
		l.runWatcher(it.w, it.fn, nil, nil, false)
	case kindNotify:
		if l.ctx.Err() == nil {
			l.runWatcher(it.w, nil, it.payload, it.err, it.ambient)
		}
	case kindClose:
		closed = true
	}
	*it = item[W]{}
	return closed
}

// runWatcher runs a callback of w, fn or run, unless w is cancelled.
func (l *Lane[W]) runWatcher(w W, fn func(), payload any, err error, ambient bool) {
	ws := w.watch()
	// current is published before cancelled is read, and Cancel sets
	// cancelled before Wait reads current: either this sees the cancel or
	// the cancel sees this callback and waits for it.
	l.enter(ws)
	if !ws.cancelled.Load() {
		if fn != nil {
			fn()
		} else {
			l.run(w, payload, err, ambient)
		}
	}
	l.current.Store(nil)
	if l.waiting.Load() > 0 {
		l.mu.Lock()
		l.cond.Broadcast()
		l.mu.Unlock()
	}
}
