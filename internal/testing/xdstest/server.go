package xdstest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/grpc"
)

// rebindTimeout bounds how long Restart retries to bind the old address.
const rebindTimeout = 5 * time.Second

// ADSServer is an ADS server whose every response is scripted by a test.
// Its methods are safe for concurrent use.
type ADSServer struct {
	addr string
	opts []grpc.ServerOption

	life sync.Mutex // serializes Stop, Restart and the final cleanup
	// The fields below are guarded by life.
	grpc   *grpc.Server
	served chan struct{} // closed when the current grpc.Server.Serve returns
	held   net.Listener  // bound but not accepting, after Pause
	closed bool          // the test has ended
	recv   sync.WaitGroup

	mu      sync.Mutex
	queue   []*Stream      // opened streams not yet taken by NextStream
	dqueue  []*DeltaStream // opened delta streams not yet taken by NextDeltaStream
	changed signal         // notified when a queue grows
}

// NewADSServer starts an ADS server on 127.0.0.1 with a port chosen by the
// system, with opts (grpc.MaxRecvMsgSize, for example) if any, also after a
// Restart. It stops when t and its cleanups finish.
func NewADSServer(t testing.TB, opts ...grpc.ServerOption) *ADSServer {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("xdstest: listen on 127.0.0.1:0: %v", err)
	}
	s := &ADSServer{addr: lis.Addr().String(), opts: opts}
	s.serve(lis)
	t.Cleanup(func() {
		s.Stop()
		s.life.Lock()
		s.closed = true
		if s.held != nil {
			s.held.Close()
			s.held = nil
		}
		s.life.Unlock()
	})
	return s
}

// Addr returns the address the server listens on, as "127.0.0.1:port". It
// stays the same across Stop and Restart.
func (s *ADSServer) Addr() string { return s.addr }

// serve starts a fresh grpc.Server on lis. The caller holds life, or owns
// s exclusively.
func (s *ADSServer) serve(lis net.Listener) {
	// WaitForHandlers makes grpc.Server.Stop return only after every
	// stream handler has, so Stop leaves nothing behind.
	srv := grpc.NewServer(append([]grpc.ServerOption{grpc.WaitForHandlers(true)}, s.opts...)...)
	discoveryv3.RegisterAggregatedDiscoveryServiceServer(srv, &adsHandler{s: s})
	served := make(chan struct{})
	go func() {
		defer close(served)
		// Serve returns nil after Stop; a failing listener shows up in
		// the client as connection errors, which is all a test sees.
		_ = srv.Serve(lis)
	}()
	s.grpc, s.served = srv, served
	Notify()
}

// Stop closes the listener and every connection at once, without ending
// streams gracefully: clients see their streams fail with UNAVAILABLE and
// new connections refused, and go to TRANSIENT_FAILURE. Every open Stream
// is over when Stop returns. Streams that opened before Stop and were never
// taken stay queued for NextStream until Restart. Stop on a stopped server
// does nothing.
func (s *ADSServer) Stop() {
	s.life.Lock()
	defer s.life.Unlock()
	if s.grpc == nil {
		return
	}
	s.grpc.Stop()
	<-s.served
	s.recv.Wait()
	s.grpc, s.served = nil, nil
	Notify()
}

// Pause is Stop, but the address stays bound without accepting: a client
// that connects meanwhile has its TCP connection queued by the system and
// waits for the server's HTTP/2 handshake (CONNECTING, gRPC's 20s connect
// deadline) instead of being refused and backing off, so that after
// Restart it is served at once. (A connection made in the moment between
// the stop and the new bind is refused.)
func (s *ADSServer) Pause() error {
	s.Stop()
	s.life.Lock()
	defer s.life.Unlock()
	if s.held != nil || s.closed {
		return nil
	}
	lis, err := listenAgain(s.addr)
	if err != nil {
		return err
	}
	s.held = lis
	return nil
}

// Restart listens again on the same address with a fresh grpc.Server,
// after a [ADSServer.Stop] or [ADSServer.Pause]; after a Pause it serves
// the connections the system held meanwhile. It drops the streams that
// were queued before the stop and never taken, all of which are over, so
// that NextStream returns only streams opened after the restart. If the
// address is briefly unavailable it retries the bind for a few seconds.
func (s *ADSServer) Restart() error {
	s.life.Lock()
	defer s.life.Unlock()
	if s.closed {
		return errors.New("xdstest: Restart after the test ended")
	}
	if s.grpc != nil {
		return fmt.Errorf("xdstest: Restart of %s while it is running", s.addr)
	}
	lis := s.held
	s.held = nil
	if lis == nil {
		var err error
		if lis, err = listenAgain(s.addr); err != nil {
			return err
		}
	}
	s.mu.Lock()
	s.queue, s.dqueue = nil, nil
	s.mu.Unlock()
	s.serve(lis)
	return nil
}

// listenAgain binds addr, retrying while the system still holds it.
func listenAgain(addr string) (net.Listener, error) {
	deadline := time.Now().Add(rebindTimeout)
	retry := 5 * time.Millisecond
	for {
		lis, err := net.Listen("tcp", addr)
		if err == nil {
			return lis, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("xdstest: listen again on %s: %w", addr, err)
		}
		// Binding is not an event anyone notifies, so this is the one
		// place that waits on a timer.
		<-time.After(retry)
		retry = min(2*retry, 100*time.Millisecond)
	}
}

// NextStream returns the next ADS stream the client opened, in the order
// they opened, waiting for one until ctx ends. A stream may already be
// over when it is returned; its requests are still there to read.
func (s *ADSServer) NextStream(ctx context.Context) (*Stream, error) {
	return next(s, ctx, &s.queue, "an ADS stream")
}

// NextDeltaStream returns the next incremental ADS stream the client
// opened, as NextStream does for State of the World streams.
func (s *ADSServer) NextDeltaStream(ctx context.Context) (*DeltaStream, error) {
	return next(s, ctx, &s.dqueue, "a delta ADS stream")
}

// next takes the oldest stream of queue, waiting for one until ctx ends.
func next[T any](s *ADSServer, ctx context.Context, queue *[]*T, what string) (*T, error) {
	for {
		woken := s.changed.wait()
		s.mu.Lock()
		if q := *queue; len(q) > 0 {
			st := q[0]
			q[0] = nil
			*queue = q[1:]
			s.mu.Unlock()
			return st, nil
		}
		s.mu.Unlock()
		select {
		case <-woken:
		case <-ctx.Done():
			return nil, fmt.Errorf("xdstest: waiting for %s on %s: %w", what, s.addr, context.Cause(ctx))
		}
	}
}

// enqueue adds st to queue for a test to take.
func enqueue[T any](s *ADSServer, queue *[]*T, st *T) {
	s.mu.Lock()
	*queue = append(*queue, st)
	s.mu.Unlock()
	s.changed.notify()
	Notify()
}

// adsHandler is the gRPC service; each stream is handed to the test and
// runs until the test ends it or the client or server goes away.
type adsHandler struct {
	discoveryv3.UnimplementedAggregatedDiscoveryServiceServer
	s *ADSServer
}

func (h *adsHandler) StreamAggregatedResources(gs discoveryv3.AggregatedDiscoveryService_StreamAggregatedResourcesServer) error {
	st := newStream(gs)
	return run(h.s, gs.Context(), st.flow, func() { enqueue(h.s, &h.s.queue, st) })
}

func (h *adsHandler) DeltaAggregatedResources(gs discoveryv3.AggregatedDiscoveryService_DeltaAggregatedResourcesServer) error {
	st := newDeltaStream(gs)
	return run(h.s, gs.Context(), st.flow, func() { enqueue(h.s, &h.s.dqueue, st) })
}

// run hands st to the test (queue) and serves it until the test ends it
// or the client or the server goes away.
func run[Req, Resp message](s *ADSServer, ctx context.Context, st *flow[Req, Resp], queue func()) error {
	// Handlers run only while the server runs, and Stop waits for them
	// before it waits on recv, so this Add never races with that Wait.
	s.recv.Add(1)
	go func() {
		defer s.recv.Done()
		st.receive()
	}()
	queue()

	var err error
	select {
	case err = <-st.end:
	case <-ctx.Done():
		err = context.Cause(ctx)
	}
	st.finish()
	return err
}
