package xdsclient

import (
	"context"
	"sync"
	"sync/atomic"
)

// notification is one queued watcher callback, or a barrier (done set).
type notification struct {
	w       *watcherRef
	res     *Resource
	err     error
	ambient bool
	done    chan struct{}
}

// callbackSerializer runs watcher callbacks one at a time, in order, on its
// own goroutine.
type callbackSerializer struct {
	mu      sync.Mutex
	queue   []notification
	wake    chan struct{}
	stopped chan struct{}
	hook    func(notification)
}

func newCallbackSerializer(ctx context.Context, hook func(notification)) *callbackSerializer {
	s := &callbackSerializer{wake: make(chan struct{}, 1), stopped: make(chan struct{}), hook: hook}
	go s.run(ctx)
	return s
}

func (s *callbackSerializer) add(n ...notification) {
	s.mu.Lock()
	s.queue = append(s.queue, n...)
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
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
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
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

func (s *callbackSerializer) run(ctx context.Context) {
	defer close(s.stopped)
	for {
		s.mu.Lock()
		q := s.queue
		s.queue = nil
		s.mu.Unlock()
		for i := range q {
			n := &q[i]
			if n.done != nil {
				close(n.done)
				continue
			}
			if ctx.Err() != nil || n.w.cancelled.Load() {
				continue
			}
			s.hook(*n)
			switch {
			case n.ambient:
				n.w.w.AmbientError(n.err)
			default:
				n.w.w.ResourceChanged(n.res, n.err)
			}
		}
		if len(q) > 0 {
			continue
		}
		select {
		case <-s.wake:
		case <-ctx.Done():
			s.mu.Lock()
			q := s.queue
			s.queue = nil
			s.mu.Unlock()
			for _, n := range q {
				if n.done != nil {
					close(n.done)
				}
			}
			return
		}
	}
}

// watcherRef is one registered watcher of the cache entry e. A watch that
// was refused has an entry of its own that is in no cache.
type watcherRef struct {
	w         Watcher
	e         *entry
	cancelled atomic.Bool
}

// cancel ends the watch, once.
func (r *watcherRef) cancel() {
	if r.cancelled.CompareAndSwap(false, true) {
		r.e.auth.c.cancelWatch(r)
	}
}
