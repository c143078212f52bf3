package rpctest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"testing"

	"google.golang.org/grpc"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	testpb "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/stats"
	"google.golang.org/protobuf/types/known/emptypb"
)

// BarrierMethod is the method of AnswerFirst's barrier RPCs: no backend
// serves it.
const BarrierMethod = "/barrier.S/M"

// AnswerFirst is a stats handler that makes certain what is otherwise a
// rare race: a server's Trailers-Only answer closes a stream before the
// client writes its first request message, and gRPC-Go (v1.85.0) ends
// the attempt without a status, as for success. It holds an attempt it
// is armed for, once the attempt's headers are sent and before any
// message, until the answer to it has been read: it waits for the
// answer's trailers, then makes one RPC of BarrierMethod on the same
// channel, whose answer the connection reads after the whole of the
// first. The barrier must reach the held attempt's backend: route
// BarrierMethod to a cluster of that backend alone, which shares its
// connection, unless the channel has one backend. It keeps the Error of
// each held attempt's stats.End, as gRPC-Go reported it.
type AnswerFirst struct {
	ctx  context.Context
	conn *grpc.ClientConn

	mu       sync.Mutex
	method   string // hold the first attempt of the next RPC of method
	addr     string // hold every attempt sent to addr
	attempts []*heldAttempt
}

// heldAttempt is one attempt AnswerFirst may hold.
type heldAttempt struct {
	trailers chan struct{}
	held     bool // its headers were held until its answer came
	ended    bool
	endErr   error
	failure  error // why the hold did not happen as it should
}

type heldAttemptKey struct{}

// NewAnswerFirst returns an AnswerFirst whose barrier RPCs are made with
// ctx (the test's, not the held RPC's). Give it the channel it observes
// with SetConn before arming it.
func NewAnswerFirst(ctx context.Context) *AnswerFirst { return &AnswerFirst{ctx: ctx} }

// SetConn sets the channel of the barrier RPCs: the one dialled with h.
func (h *AnswerFirst) SetConn(conn *grpc.ClientConn) { h.conn = conn }

// Arm has the first attempt of the next RPC of method held, and forgets
// the attempts held before.
func (h *AnswerFirst) Arm(method string) { h.arm(method, "") }

// ArmTo has every attempt sent to addr held, but those of BarrierMethod,
// and forgets the attempts held before.
func (h *AnswerFirst) ArmTo(addr string) { h.arm("", addr) }

func (h *AnswerFirst) arm(method, addr string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.method, h.addr, h.attempts = method, addr, nil
}

// Held returns how many attempts were held since h was armed.
func (h *AnswerFirst) Held() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, a := range h.attempts {
		if a.held {
			n++
		}
	}
	return n
}

// Check fails t unless an attempt was held since h was armed, and every
// one held ended as gRPC-Go ends them in that race: with no error in its
// stats.End. If gRPC-Go comes to report the status, this fails, and the
// workarounds of package internal/rpcstatus can be revisited.
func (h *AnswerFirst) Check(t testing.TB) {
	t.Helper()
	h.mu.Lock()
	defer h.mu.Unlock()
	held := 0
	for _, a := range h.attempts {
		switch {
		case a.failure != nil:
			t.Fatalf("holding an attempt: %v", a.failure)
		case !a.held:
		case !a.ended:
			t.Fatal("a held attempt did not end")
		case a.endErr != nil:
			t.Fatalf("gRPC-Go reported a held attempt's status (%v): the race did not happen, or gRPC-Go reports the status now", a.endErr)
		default:
			held++
		}
	}
	if held == 0 {
		t.Fatalf("no attempt was held (method %q, address %q)", h.method, h.addr)
	}
}

// TagRPC marks the attempts that h may hold.
func (h *AnswerFirst) TagRPC(ctx context.Context, info *stats.RPCTagInfo) context.Context {
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case h.addr != "" && info.FullMethodName != BarrierMethod:
	case h.method != "" && info.FullMethodName == h.method:
		h.method = "" // its first attempt only
	default:
		return ctx
	}
	a := &heldAttempt{trailers: make(chan struct{})}
	h.attempts = append(h.attempts, a)
	return context.WithValue(ctx, heldAttemptKey{}, a)
}

// HandleRPC holds a marked attempt after its headers until its answer
// has been read, and keeps what its End reports.
func (h *AnswerFirst) HandleRPC(ctx context.Context, s stats.RPCStats) {
	a, _ := ctx.Value(heldAttemptKey{}).(*heldAttempt)
	if a == nil {
		return
	}
	switch s := s.(type) {
	case *stats.OutHeader:
		h.mu.Lock()
		hold := h.addr == "" || s.RemoteAddr != nil && s.RemoteAddr.String() == h.addr
		a.held = hold
		h.mu.Unlock()
		if hold {
			h.hold(ctx, a)
		}
	case *stats.InTrailer:
		close(a.trailers)
	case *stats.End:
		h.mu.Lock()
		a.ended, a.endErr = true, s.Error
		h.mu.Unlock()
	}
}

// hold waits for a's answer, then for the barrier RPC.
func (h *AnswerFirst) hold(ctx context.Context, a *heldAttempt) {
	var err error
	select {
	case <-a.trailers:
		// The barrier: its answer is read after the trailers of this
		// attempt have closed its stream.
		if err = h.conn.Invoke(h.ctx, BarrierMethod, &emptypb.Empty{}, &emptypb.Empty{}); err == nil {
			err = errors.New("the barrier RPC succeeded; it should find no method")
		} else {
			err = nil
		}
	case <-ctx.Done():
		err = fmt.Errorf("no Trailers-Only answer came: %w", context.Cause(ctx))
	}
	if err != nil {
		h.mu.Lock()
		a.failure = err
		h.mu.Unlock()
	}
}

// TagConn returns ctx.
func (h *AnswerFirst) TagConn(ctx context.Context, _ *stats.ConnTagInfo) context.Context { return ctx }

// HandleConn does nothing.
func (h *AnswerFirst) HandleConn(context.Context, stats.ConnStats) {}

// ClientStreamCall makes one client-streaming RPC of TestService on conn:
// one request, then the response. A backend that fails it (Fail) answers
// before reading the request, with Trailers-Only, so AnswerFirst can hold
// its attempts.
func ClientStreamCall(ctx context.Context, conn *grpc.ClientConn) error {
	stream, err := testgrpc.NewTestServiceClient(conn).StreamingInputCall(ctx)
	if err != nil {
		return err
	}
	if err := stream.Send(&testpb.StreamingInputCallRequest{}); err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	_, err = stream.CloseAndRecv()
	return err
}

// EmptyServerStreamCall makes one server-streaming RPC of TestService on
// conn that asks for no response: it ends well, without a message.
func EmptyServerStreamCall(ctx context.Context, conn *grpc.ClientConn) error {
	stream, err := testgrpc.NewTestServiceClient(conn).StreamingOutputCall(ctx, &testpb.StreamingOutputCallRequest{})
	if err != nil {
		return err
	}
	if _, err := stream.Recv(); !errors.Is(err, io.EOF) {
		return fmt.Errorf("Recv: %v, want io.EOF", err)
	}
	return nil
}
