// Package hookqueue runs hook calls one at a time, in the order they
// were posted, on a goroutine of the queue's own rather than on the
// goroutine of the event: a hook that gRPC would otherwise call from
// inside its resolver or balancer (whose goroutines grpc.ClientConn.Close
// waits for) may then close the channel, or block, without deadlocking
// gRPC. The goroutine runs while calls are pending and ends when none
// is left, so an idle queue costs no goroutine.
package hookqueue

import "sync"

// Queue is a serial queue of hook calls. The zero Queue is ready to use.
type Queue struct {
	mu       sync.Mutex
	pending  []func()
	draining bool          // a goroutine runs the pending calls
	inCall   bool          // it runs one at this moment
	idle     chan struct{} // closed when that goroutine ends
	closed   bool
}

// Post queues f, to run after every call posted before it. Once the
// queue is closed and has run what it had, f runs at once on the caller's
// goroutine.
func (q *Queue) Post(f func()) {
	q.mu.Lock()
	if q.closed && !q.draining {
		q.mu.Unlock()
		f()
		return
	}
	q.pending = append(q.pending, f)
	if !q.draining {
		q.draining = true
		q.idle = make(chan struct{})
		go q.drain()
	}
	q.mu.Unlock()
}

func (q *Queue) drain() {
	q.mu.Lock()
	for len(q.pending) > 0 {
		f := q.pending[0]
		q.pending[0] = nil
		q.pending = q.pending[1:]
		q.inCall = true
		q.mu.Unlock()
		f()
		q.mu.Lock()
		q.inCall = false
	}
	q.pending = nil
	q.draining = false
	close(q.idle)
	q.mu.Unlock()
}

// Close waits until every call posted before it has run, and makes later
// calls run on their caller. When a call is running at that moment, it
// may be the caller of Close (a hook that closes the channel): then Close
// returns at once, and the calls posted before it still run, in order,
// once that call returns.
func (q *Queue) Close() {
	q.mu.Lock()
	q.closed = true
	idle, wait := q.idle, q.draining && !q.inCall
	q.mu.Unlock()
	if wait {
		<-idle
	}
}
