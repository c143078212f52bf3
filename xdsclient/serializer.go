package xdsclient

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/xdslens/xdslens/xdsclient/internal/goid"
)

// notification is one queued event for the serializer: a watcher callback
// (w set), a hook call (hook set), or a barrier (done set).
type notification struct {
	w       *watcherRef
	res     *Resource
	err     error
	ambient bool
	hook    func()
	done    chan struct{}
}

// callbackSerializer runs hook calls and watcher callbacks one at a time, in
// the order they were queued, on its own goroutine. The client queues them
// while it holds its lock, in the order the events happened, so hooks and
// watchers see one history.
type callbackSerializer struct {
	mu      sync.Mutex
	queue   []notification
	wake    chan struct{}
	stopped chan struct{}
	before  func(notification) // called before each watcher callback
	gid     atomic.Int64       // the serializer goroutine's ID
	// over is set (under mu) once run has returned; what is queued then
	// (the one callback of a watch on a closed client) is run by a drain
	// goroutine, started when draining is not set.
	over, draining bool

	// current is the watcher whose callback runs now. A cancel of that
	// watcher from another goroutine waits for the callback to return;
	// waiting counts such cancels, and cond (on mu) wakes them.
	current atomic.Pointer[watcherRef]
	waiting atomic.Int32
	cond    sync.Cond
}

func newCallbackSerializer(ctx context.Context, before func(notification)) *callbackSerializer {
	s := &callbackSerializer{wake: make(chan struct{}, 1), stopped: make(chan struct{}), before: before}
	s.cond.L = &s.mu
	started := make(chan struct{})
	go s.run(ctx, started)
	<-started
	return s
}

func (s *callbackSerializer) add(n ...notification) {
	s.mu.Lock()
	s.queue = append(s.queue, n...)
	s.wakeLocked()
}

// wakeLocked has what was just queued run, and releases mu: run is told,
// or once it has returned, a drain goroutine starts unless one runs.
func (s *callbackSerializer) wakeLocked() {
	start := s.over && !s.draining
	if start {
		s.draining = true
	}
	s.mu.Unlock()
	if start {
		go s.drain()
		return
	}
	signal(s.wake)
}

// addAll queues ns. When nothing is queued it takes ns over and returns
// nil; otherwise it copies ns and returns it emptied, for reuse. Either way
// the serializer keeps no queue once it has run it, so a burst of
// callbacks leaves no large buffer behind.
func (s *callbackSerializer) addAll(ns []notification) []notification {
	s.mu.Lock()
	if len(s.queue) == 0 {
		s.queue, ns = ns, nil
	} else {
		s.queue = append(s.queue, ns...)
	}
	s.wakeLocked()
	clear(ns)
	return ns[:0]
}

// barrier returns a channel closed once every notification added before the
// call has run.
func (s *callbackSerializer) barrier() <-chan struct{} {
	done := make(chan struct{})
	s.add(notification{done: done})
	return done
}

// onSerializer reports whether the caller runs on the serializer's
// goroutine, that is inside a hook or a watcher callback.
func (s *callbackSerializer) onSerializer() bool { return s.gid.Load() == goid.Get() }

// waitCallback returns once no callback of r runs, unless the caller is that
// callback: then it returns at once (the callbacks after it find r
// cancelled).
func (s *callbackSerializer) waitCallback(r *watcherRef) {
	if s.current.Load() != r || s.onSerializer() {
		return
	}
	s.waiting.Add(1)
	s.mu.Lock()
	for s.current.Load() == r {
		s.cond.Wait()
	}
	s.mu.Unlock()
	s.waiting.Add(-1)
}

func (s *callbackSerializer) run(ctx context.Context, started chan struct{}) {
	defer close(s.stopped)
	s.gid.Store(goid.Get())
	close(started)
	for {
		s.mu.Lock()
		q := s.queue
		s.queue = nil
		s.mu.Unlock()
		for i := range q {
			s.runOne(&q[i], ctx.Err() == nil)
		}
		if len(q) > 0 {
			continue
		}
		select {
		case <-s.wake:
		case <-ctx.Done():
			// The client is closed: hooks queued before Close still run,
			// so observers see what Close did; watchers hear nothing
			// more, but for the one callback of a watch made on the
			// closed client.
			s.runQueued(func() { s.over = true })
			return
		}
	}
}

// runQueued runs what is queued, hooks and the callbacks of watches on a
// closed client but no other watcher callback, until the queue is empty;
// then it calls done with mu held.
func (s *callbackSerializer) runQueued(done func()) {
	for {
		s.mu.Lock()
		q := s.queue
		s.queue = nil
		if len(q) == 0 {
			done()
			s.mu.Unlock()
			return
		}
		s.mu.Unlock()
		for i := range q {
			s.runOne(&q[i], false)
		}
	}
}

// drain runs what was queued after run returned, one at a time and in
// order as run does, and ends once the queue is empty. It counts as the
// serializer's goroutine while it runs.
func (s *callbackSerializer) drain() {
	s.gid.Store(goid.Get())
	s.runQueued(func() { s.draining = false })
}

// runOne runs one queued notification; watcher callbacks only if watchers
// is set.
func (s *callbackSerializer) runOne(n *notification, watchers bool) {
	switch {
	case n.done != nil:
		close(n.done)
	case n.hook != nil:
		n.hook()
	case watchers:
		s.runWatcher(n.w, func() {
			s.before(*n)
			if n.ambient {
				n.w.w.AmbientError(n.err)
			} else {
				n.w.w.ResourceChanged(n.res, n.err)
			}
		})
	}
	*n = notification{}
}

// runWatcher runs call, a callback of w, unless w is cancelled.
func (s *callbackSerializer) runWatcher(w *watcherRef, call func()) {
	// current is published before cancelled is read, and cancel sets
	// cancelled before reading current: either this sees the cancel or the
	// cancel sees this callback and waits for it.
	s.current.Store(w)
	if !w.cancelled.Load() {
		call()
	}
	s.current.Store(nil)
	if s.waiting.Load() > 0 {
		s.mu.Lock()
		s.cond.Broadcast()
		s.mu.Unlock()
	}
}

// watcherRef is one registered watcher of the cache entry e. The fields
// after cancelled are guarded by Client.mu.
type watcherRef struct {
	w         Watcher
	e         *entry
	cancelled atomic.Bool
	// heardAmbient: the last notification queued to w was an ambient error
	// whose cause is not over; when it ends, w gets AmbientError(nil).
	heardAmbient bool
}

// cancel ends the watch. Once it returns, no callback of the watch runs.
func (r *watcherRef) cancel() {
	c := r.e.auth.c
	if r.cancelled.CompareAndSwap(false, true) {
		c.cancelWatch(r)
	}
	c.callbacks.waitCallback(r)
}
