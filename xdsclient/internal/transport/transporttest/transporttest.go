// Package transporttest is an xDS network in memory for the tests of the
// layers above package transport: a transport.Dialer whose channels reach
// Servers that a test drives. The Conn under test runs its own code from
// the request it frames to the response it parses; only gRPC is left out.
// A test decides each stream attempt (Accept, Refuse), reads the requests
// the client wrote, scripts the responses and the stream's end, and sets
// the connectivity the channels report:
//
//	net := &transporttest.Network{}
//	conn, _ := transport.New(ctx, transport.Config{Server: sc, Dial: net.Dial, ...}, handler)
//	srv := net.Server(sc.URI)
//	st := srv.Accept(t)              // the Conn's first stream
//	req := st.Request(t)             // its first request
//	st.Respond(t, &discoveryv3.DiscoveryResponse{...})
//	st.End(status.Error(codes.Unavailable, "gone"))
//
// Messages cross it serialized, as over gRPC: a request that does not
// marshal fails its Send, and the test reads what the server would read.
// A response's bytes are overwritten when the client releases them, as
// gRPC reuses its buffer, so that a layer that keeps them without a copy
// reads garbage; Held and WaitReleased tell whether the client released
// what it read.
// As a gRPC channel, a channel makes a stream only once READY: Accept
// makes its server READY first. Every wait of a test's side ends, failing
// the test, after Timeout.
package transporttest

import (
	"context"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/status"

	"github.com/xdslens/xdslens/xdsclient/internal/transport"
)

// Timeout is how long a test's side waits for what it expects.
const Timeout = 10 * time.Second

// Network is the xDS servers a Dial reaches, by the URI of their bootstrap
// entry, made on first use. The zero Network is empty.
type Network struct {
	mu      sync.Mutex
	servers map[string]*Server
}

// Server returns the server at uri, making it (IDLE) if needed.
func (n *Network) Server(uri string) *Server {
	n.mu.Lock()
	defer n.mu.Unlock()
	s := n.servers[uri]
	if s == nil {
		s = &Server{uri: uri, state: connectivity.Idle, changed: make(chan struct{}), attempts: make(chan *attempt)}
		if n.servers == nil {
			n.servers = map[string]*Server{}
		}
		n.servers[uri] = s
	}
	return s
}

// Dial is a transport.Dialer: a new channel to the server at
// cfg.Server.URI, or the error its server refuses dials with (RefuseDials).
func (n *Network) Dial(cfg transport.Config) (transport.Channel, error) {
	s := n.Server(cfg.Server.URI)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.refuseDials != nil {
		return nil, s.refuseDials
	}
	ch := &channel{s: s}
	s.open++
	s.dials++
	s.changedLocked()
	return ch, nil
}

// Server is one xDS server as a test drives it: the connectivity that the
// channels to it report, its stream attempts and the channels open.
type Server struct {
	uri      string
	attempts chan *attempt // NewStream calls waiting for Accept or Refuse

	mu          sync.Mutex
	state       connectivity.State
	changed     chan struct{} // closed and replaced on every change below
	dials, open int
	refuseDials error
}

// changedLocked wakes whoever waits for a change of s.
func (s *Server) changedLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// SetState makes every channel to s, open and future, report state.
func (s *Server) SetState(state connectivity.State) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.setStateLocked(state)
}

func (s *Server) setStateLocked(state connectivity.State) {
	if s.state != state {
		s.state = state
		s.changedLocked()
	}
}

// RefuseDials makes the channels to s fail to be made, with err, from now
// on; nil accepts them again.
func (s *Server) RefuseDials(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.refuseDials = err
}

// Dials returns how many channels to s were made, and how many of them
// are open.
func (s *Server) Dials() (made, open int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.dials, s.open
}

// WaitFor waits until cond, called with nothing locked after each change
// of s (a state, a dial, a channel closed), holds, and fails t with what
// it waited for if it does not within Timeout.
func (s *Server) WaitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.NewTimer(Timeout)
	defer deadline.Stop()
	for {
		s.mu.Lock()
		changed := s.changed
		s.mu.Unlock()
		if cond() {
			return
		}
		select {
		case <-changed:
		case <-deadline.C:
			t.Fatalf("server %s: no %s within %v", s.uri, what, Timeout)
		}
	}
}

// attempt is a stream a Conn asked for, waiting for the test's answer.
type attempt struct {
	ctx    context.Context
	delta  bool
	answer chan error // nil to accept
	stream *Stream
}

// next returns the next stream attempt on s.
func (s *Server) next(t testing.TB) *attempt {
	t.Helper()
	select {
	case a := <-s.attempts:
		return a
	case <-time.After(Timeout):
		t.Fatalf("server %s: no stream attempt within %v", s.uri, Timeout)
		return nil
	}
}

// Accept waits for the next stream attempt on s and lets it open, after
// making s READY (gRPC makes a stream only on a READY channel).
func (s *Server) Accept(t testing.TB) *Stream {
	t.Helper()
	a := s.next(t)
	s.SetState(connectivity.Ready)
	a.stream = newStream(a.ctx, s, a.delta)
	a.answer <- nil
	return a.stream
}

// Refuse waits for the next stream attempt on s and fails it with err,
// as gRPC's NewStream fails on a channel that cannot connect (an
// UNAVAILABLE status, say).
func (s *Server) Refuse(t testing.TB, err error) {
	t.Helper()
	s.next(t).answer <- err
}

// NoAttempt fails t if a stream is attempted on s within d.
func (s *Server) NoAttempt(t testing.TB, d time.Duration) {
	t.Helper()
	select {
	case a := <-s.attempts:
		a.answer <- status.Error(codes.Unavailable, "transporttest: no stream expected")
		t.Fatalf("server %s: a stream attempt, where none was expected", s.uri)
	case <-time.After(d):
	}
}

// channel is one channel to a Server: a transport.Channel.
type channel struct {
	s      *Server
	closed bool // guarded by s.mu
}

func (c *channel) NewStream(ctx context.Context, delta bool) (transport.Stream, error) {
	if c.State() == connectivity.Shutdown {
		return nil, status.Error(codes.Canceled, "transporttest: channel closed")
	}
	a := &attempt{ctx: ctx, delta: delta, answer: make(chan error, 1)}
	select {
	case c.s.attempts <- a:
	case <-ctx.Done():
		return nil, status.FromContextError(ctx.Err()).Err()
	}
	if err := <-a.answer; err != nil {
		return nil, err
	}
	return clientSide{a.stream}, nil
}

func (c *channel) State() connectivity.State {
	c.s.mu.Lock()
	defer c.s.mu.Unlock()
	if c.closed {
		return connectivity.Shutdown
	}
	return c.s.state
}

func (c *channel) WaitForStateChange(ctx context.Context, state connectivity.State) bool {
	for {
		c.s.mu.Lock()
		now, changed := c.s.state, c.s.changed
		if c.closed {
			now = connectivity.Shutdown
		}
		c.s.mu.Unlock()
		if now != state {
			return true
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return false
		}
	}
}

func (c *channel) Close() {
	c.s.mu.Lock()
	defer c.s.mu.Unlock()
	if !c.closed {
		c.closed = true
		c.s.open--
		c.s.changedLocked()
	}
}
