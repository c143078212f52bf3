package clusterlb

import "sync"

// serializer runs funcs one at a time, in the order they were scheduled,
// on a goroutine of its own. Everything that reads or changes a Balancer's
// state runs there, so that the state needs no lock, and so that the
// children's callbacks, which arrive on any goroutine and possibly under
// the children's own locks, only queue work and never call back into a
// child.
type serializer struct {
	mu     sync.Mutex
	queue  []func() // guarded by mu
	closed bool     // guarded by mu
	wake   chan struct{}
	done   chan struct{} // closed when the goroutine returns
}

func newSerializer() *serializer {
	s := &serializer{wake: make(chan struct{}, 1), done: make(chan struct{})}
	go s.loop()
	return s
}

// schedule queues f, unless the serializer is stopped; it reports whether
// f will run.
func (s *serializer) schedule(f func()) bool {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return false
	}
	s.queue = append(s.queue, f)
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
	return true
}

// do runs f on the serializer and waits for it to return. It must not be
// called from the serializer's goroutine. It reports whether f ran.
func (s *serializer) do(f func()) bool {
	done := make(chan struct{})
	if !s.schedule(func() { f(); close(done) }) {
		return false
	}
	<-done
	return true
}

// stop runs the funcs already queued, refuses new ones and waits for the
// goroutine to return. It must not be called from the serializer's
// goroutine.
func (s *serializer) stop() {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
	<-s.done
}

func (s *serializer) loop() {
	defer close(s.done)
	for range s.wake {
		for {
			s.mu.Lock()
			if len(s.queue) == 0 {
				closed := s.closed
				s.mu.Unlock()
				if closed {
					return
				}
				break
			}
			f := s.queue[0]
			s.queue[0] = nil
			s.queue = s.queue[1:]
			s.mu.Unlock()
			f()
		}
	}
}
