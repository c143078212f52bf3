// Package backends runs gRPC servers on loopback that stand for the
// endpoints of xDS clusters in tests and in the demo: each serves the
// health service (SERVING) and grpc.testing.TestService, whose EmptyCall
// and UnaryCall answer with nothing but a header saying which backend
// answered (UnaryCall also with the address as server_id and hostname).
//
// A Backend can be stopped and started again on the same address, and can
// hold its RPCs until released, so that tests can make endpoints fail and
// keep RPCs in flight.
package backends

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	testpb "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/orca"
	"google.golang.org/grpc/status"
)

// ServerHeader is the response header in which a backend names itself
// ("127.0.0.1:port").
const ServerHeader = "x-backend"

// Backend is one gRPC server on 127.0.0.1.
type Backend struct {
	addr string

	mu      sync.Mutex
	srv     *grpc.Server
	hold    chan struct{} // RPCs wait for it to be closed; nil when not held
	changed chan struct{} // closed and replaced at every call

	calls atomic.Int64
	// utilization and qps, when utilization is above 0, are reported with
	// every TestService RPC in an ORCA per-call load report (gRFC A51).
	utilization, qps atomic.Uint64 // math.Float64bits
	// failure says how TestService RPCs fail; nil when they do not.
	failure atomic.Pointer[Failure]
	answers atomic.Int64 // the RPCs that Failure has seen
}

// Failure makes a backend fail some of its TestService RPCs, or answer
// them late.
type Failure struct {
	// Every fails one RPC in Every (1: all of them, 2: every other one,
	// starting with the first); 0 fails none.
	Every int64
	// Code is the status the failed RPCs end with, UNAVAILABLE when 0;
	// they fail before any response header (a Trailers-Only response).
	Code codes.Code
	// Delay is how long every RPC waits before its answer (or failure).
	Delay time.Duration
}

// Fail has the backend's later TestService RPCs fail, or wait, as f says;
// Fail(Failure{}) ends it.
func (b *Backend) Fail(f Failure) {
	b.answers.Store(0)
	b.failure.Store(&f)
}

// ReportLoad has every later TestService RPC report, in its trailers, an
// ORCA load report of the given CPU utilization and rate of requests per
// second (gRFC A51), as weighted_round_robin reads them (gRFC A58). A
// utilization of 0 stops the reports.
func (b *Backend) ReportLoad(utilization, qps float64) {
	b.utilization.Store(math.Float64bits(utilization))
	b.qps.Store(math.Float64bits(qps))
}

// Start starts a backend on 127.0.0.1 with a port chosen by the system.
func Start() (*Backend, error) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("backends: %w", err)
	}
	b := &Backend{addr: lis.Addr().String(), changed: make(chan struct{})}
	b.serve(lis)
	return b, nil
}

func (b *Backend) serve(lis net.Listener) {
	srv := grpc.NewServer(orca.CallMetricsServerOption(nil))
	hs := health.NewServer()
	healthpb.RegisterHealthServer(srv, hs)
	testgrpc.RegisterTestServiceServer(srv, &service{b: b})
	b.mu.Lock()
	b.srv = srv
	b.mu.Unlock()
	go srv.Serve(lis)
}

// RegisterTestService registers on reg, a server that is not a Backend
// (such as an xDS-enabled one), the grpc.testing.TestService that
// backends serve, naming itself name in ServerHeader and in UnaryCall's
// answer.
func RegisterTestService(reg grpc.ServiceRegistrar, name string) {
	testgrpc.RegisterTestServiceServer(reg, &service{b: &Backend{addr: name, changed: make(chan struct{})}})
}

// Addr returns the backend's address, "127.0.0.1:port"; it stays the same
// across Stop and Restart.
func (b *Backend) Addr() string { return b.addr }

// Calls returns how many RPCs of TestService the backend has answered or
// is answering.
func (b *Backend) Calls() int64 { return b.calls.Load() }

// Stop closes the listener and every connection at once: clients see
// their RPCs fail and connections refused. Stop on a stopped backend does
// nothing.
func (b *Backend) Stop() {
	b.mu.Lock()
	srv := b.srv
	b.srv = nil
	hold := b.hold
	b.hold = nil
	b.mu.Unlock()
	if hold != nil {
		close(hold)
	}
	if srv != nil {
		srv.Stop()
	}
}

// Restart listens again on the same address after Stop, retrying the bind
// for a few seconds while the address is briefly unavailable.
func (b *Backend) Restart() error {
	deadline := time.Now().Add(5 * time.Second)
	for {
		lis, err := net.Listen("tcp", b.addr)
		if err == nil {
			b.serve(lis)
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("backends: listen again on %s: %w", b.addr, err)
		}
		time.Sleep(20 * time.Millisecond) // waiting for the kernel to free the port: no event to wait on
	}
}

// Hold makes TestService RPCs wait until release is called (or the backend
// stops, or the RPC's context ends): RPCs stay in flight.
func (b *Backend) Hold() (release func()) {
	ch := make(chan struct{})
	b.mu.Lock()
	b.hold = ch
	b.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			b.mu.Lock()
			if b.hold == ch {
				b.hold = nil
			}
			b.mu.Unlock()
			close(ch)
		})
	}
}

type service struct {
	testgrpc.UnimplementedTestServiceServer
	b *Backend
}

// Changed returns a channel that is closed when the backend next gets an
// RPC of TestService: take it, then read Calls, then wait on it.
func (b *Backend) Changed() <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.changed
}

// WaitCalls waits until the backend has answered or is answering n RPCs of
// TestService, or ctx ends.
func (b *Backend) WaitCalls(ctx context.Context, n int64) error {
	for {
		b.mu.Lock()
		changed := b.changed
		b.mu.Unlock()
		if b.calls.Load() >= n {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return fmt.Errorf("backends: %s answered %d calls, waiting for %d: %w", b.addr, b.calls.Load(), n, ctx.Err())
		}
	}
}

func (s *service) answer(ctx context.Context) error {
	if f := s.b.failure.Load(); f != nil {
		n := s.b.answers.Add(1)
		if f.Delay > 0 {
			t := time.NewTimer(f.Delay)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return ctx.Err()
			}
		}
		if f.Every > 0 && (n-1)%f.Every == 0 {
			s.b.calls.Add(1)
			code := f.Code
			if code == codes.OK {
				code = codes.Unavailable
			}
			return status.Errorf(code, "backend %s fails RPC %d", s.b.addr, n)
		}
	}
	if u := math.Float64frombits(s.b.utilization.Load()); u > 0 {
		rec := orca.CallMetricsRecorderFromContext(ctx)
		rec.SetCPUUtilization(u)
		rec.SetQPS(math.Float64frombits(s.b.qps.Load()))
	}
	s.b.mu.Lock()
	s.b.calls.Add(1)
	close(s.b.changed)
	s.b.changed = make(chan struct{})
	hold := s.b.hold
	s.b.mu.Unlock()
	if hold != nil {
		select {
		case <-hold:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return grpc.SetHeader(ctx, metadata.Pairs(ServerHeader, s.b.addr))
}

func (s *service) EmptyCall(ctx context.Context, _ *testpb.Empty) (*testpb.Empty, error) {
	if err := s.answer(ctx); err != nil {
		return nil, err
	}
	return &testpb.Empty{}, nil
}

// StreamingOutputCall answers with one message per response parameter,
// failing or waiting first as Fail says.
func (s *service) StreamingOutputCall(req *testpb.StreamingOutputCallRequest, stream testgrpc.TestService_StreamingOutputCallServer) error {
	if err := s.answer(stream.Context()); err != nil {
		return err
	}
	for range req.GetResponseParameters() {
		if err := stream.Send(&testpb.StreamingOutputCallResponse{}); err != nil {
			return err
		}
	}
	return nil
}

// StreamingInputCall reads the client's messages to their end and answers
// with their count, failing or waiting first as Fail says.
func (s *service) StreamingInputCall(stream testgrpc.TestService_StreamingInputCallServer) error {
	if err := s.answer(stream.Context()); err != nil {
		return err
	}
	var n int32
	for {
		if _, err := stream.Recv(); err != nil {
			if err == io.EOF {
				return stream.SendAndClose(&testpb.StreamingInputCallResponse{AggregatedPayloadSize: n})
			}
			return err
		}
		n++
	}
}

func (s *service) UnaryCall(ctx context.Context, _ *testpb.SimpleRequest) (*testpb.SimpleResponse, error) {
	if err := s.answer(ctx); err != nil {
		return nil, err
	}
	return &testpb.SimpleResponse{ServerId: s.b.addr, Hostname: s.b.addr}, nil
}

// Blackhole is a TCP listener on 127.0.0.1 that accepts connections and
// never answers on them: a gRPC client's connection attempts to it neither
// succeed nor fail until they time out.
type Blackhole struct {
	lis   net.Listener
	mu    sync.Mutex
	conns []net.Conn
	done  chan struct{}
}

// StartBlackhole starts a Blackhole.
func StartBlackhole() (*Blackhole, error) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("backends: %w", err)
	}
	h := &Blackhole{lis: lis, done: make(chan struct{})}
	go func() {
		defer close(h.done)
		for {
			c, err := lis.Accept()
			if err != nil {
				return
			}
			h.mu.Lock()
			h.conns = append(h.conns, c)
			h.mu.Unlock()
		}
	}()
	return h, nil
}

// Addr returns the listener's address.
func (h *Blackhole) Addr() string { return h.lis.Addr().String() }

// Close closes the listener and every connection it accepted.
func (h *Blackhole) Close() error {
	err := h.lis.Close()
	<-h.done
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, c := range h.conns {
		c.Close()
	}
	if errors.Is(err, net.ErrClosed) {
		return nil
	}
	return err
}
