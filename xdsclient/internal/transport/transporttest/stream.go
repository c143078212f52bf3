package transporttest

import (
	"context"
	"fmt"
	"io"
	"slices"
	"sync"
	"testing"
	"time"

	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// Stream is one ADS stream a Conn opened, as the server's side sees it:
// the requests the client wrote, in order, and the responses and end the
// test scripts.
type Stream struct {
	// Delta reports an incremental stream.
	Delta bool

	s   *Server
	ctx context.Context // the client's: done when it ends the stream

	mu        sync.Mutex
	changed   chan struct{} // closed and replaced on every change below
	requests  [][]byte      // written by the client, not yet read by the test
	responses [][]byte      // scripted, not yet read by the client
	end       error         // the server's end, once scripted
	taken     int           // responses the client read
	held      int           // of them, those the client has not released
	reading   bool          // the client waits in Recv
}

func newStream(ctx context.Context, s *Server, delta bool) *Stream {
	return &Stream{Delta: delta, s: s, ctx: ctx, changed: make(chan struct{})}
}

// changedLocked wakes whoever waits for a change of st.
func (st *Stream) changedLocked() {
	close(st.changed)
	st.changed = make(chan struct{})
}

// wait waits until cond, called with st.mu held, holds, or until d passes
// (false); d 0 or less looks once.
func (st *Stream) wait(d time.Duration, cond func() bool) bool {
	deadline := time.NewTimer(d)
	defer deadline.Stop()
	for {
		st.mu.Lock()
		ok, changed := cond(), st.changed
		st.mu.Unlock()
		if ok {
			return true
		}
		select {
		case <-changed:
		case <-deadline.C:
			return false
		}
	}
}

// next returns the oldest request not yet read, as its bytes.
func (st *Stream) next(t testing.TB) []byte {
	t.Helper()
	var b []byte
	if !st.wait(Timeout, func() bool {
		if len(st.requests) == 0 {
			return false
		}
		b, st.requests = st.requests[0], st.requests[1:]
		return true
	}) {
		t.Fatalf("stream to %s: no request within %v", st.s.uri, Timeout)
	}
	return b
}

// Request returns the oldest State of the World request not yet read,
// waiting for one.
func (st *Stream) Request(t testing.TB) *discoveryv3.DiscoveryRequest {
	t.Helper()
	if st.Delta {
		t.Fatalf("stream to %s: a State of the World request read from a delta stream", st.s.uri)
	}
	req := &discoveryv3.DiscoveryRequest{}
	if err := proto.Unmarshal(st.next(t), req); err != nil {
		t.Fatalf("stream to %s: request: %v", st.s.uri, err)
	}
	return req
}

// DeltaRequest returns the oldest delta request not yet read, waiting for
// one.
func (st *Stream) DeltaRequest(t testing.TB) *discoveryv3.DeltaDiscoveryRequest {
	t.Helper()
	if !st.Delta {
		t.Fatalf("stream to %s: a delta request read from a State of the World stream", st.s.uri)
	}
	req := &discoveryv3.DeltaDiscoveryRequest{}
	if err := proto.Unmarshal(st.next(t), req); err != nil {
		t.Fatalf("stream to %s: request: %v", st.s.uri, err)
	}
	return req
}

// NoRequest fails t if the client writes a request within d (or has
// written one not yet read; d 0 looks only at that).
func (st *Stream) NoRequest(t testing.TB, d time.Duration) {
	t.Helper()
	var first []byte
	if st.wait(d, func() bool {
		if len(st.requests) == 0 {
			return false
		}
		first = st.requests[0]
		return true
	}) {
		t.Fatalf("stream to %s: unexpected request %x", st.s.uri, first)
	}
}

// Respond queues resp (a DiscoveryResponse or a DeltaDiscoveryResponse)
// for the client to read.
func (st *Stream) Respond(t testing.TB, resp proto.Message) {
	t.Helper()
	b, err := proto.Marshal(resp)
	if err != nil {
		t.Fatalf("stream to %s: response: %v", st.s.uri, err)
	}
	st.RespondBytes(b)
}

// RespondBytes queues b, as received, for the client to read.
func (st *Stream) RespondBytes(b []byte) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.responses = append(st.responses, b)
	st.changedLocked()
}

// End ends the stream from the server's side with err, a gRPC status
// error (nil is OK, which the client reads as io.EOF), once the client
// has read the responses queued before.
func (st *Stream) End(err error) {
	if err == nil {
		err = io.EOF
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.end == nil {
		st.end = err
		st.changedLocked()
	}
}

// Taken returns how many responses the client read, and whether it waits
// for the next.
func (st *Stream) Taken() (n int, reading bool) {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.taken, st.reading
}

// Held returns how many responses the client read and has not released
// (the release Recv returns).
func (st *Stream) Held() int {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.held
}

// WaitReleased waits until the client has released every response it
// read, failing t if it has not within Timeout.
func (st *Stream) WaitReleased(t testing.TB) {
	t.Helper()
	if !st.wait(Timeout, func() bool { return st.held == 0 }) {
		t.Fatalf("stream to %s: %d responses read and not released within %v", st.s.uri, st.Held(), Timeout)
	}
}

// Holds fails t unless the client has read n responses and neither reads
// nor waits to read another for d: flow control.
func (st *Stream) Holds(t testing.TB, n int, d time.Duration) {
	t.Helper()
	if st.wait(d, func() bool { return st.taken != n || st.reading }) {
		got, reading := st.Taken()
		t.Fatalf("stream to %s: the client read %d responses (waiting for more: %v), want %d and not reading", st.s.uri, got, reading, n)
	}
}

// WaitClosed waits until the client ended the stream.
func (st *Stream) WaitClosed(t testing.TB) {
	t.Helper()
	select {
	case <-st.ctx.Done():
	case <-time.After(Timeout):
		t.Fatalf("stream to %s: not ended by the client within %v", st.s.uri, Timeout)
	}
}

// clientSide is a Stream as its Conn uses it: a transport.Stream.
type clientSide struct{ st *Stream }

func (c clientSide) Send(req proto.Message) error {
	b, err := proto.Marshal(req)
	if err != nil {
		return status.Errorf(codes.Internal, "transporttest: marshal: %v", err)
	}
	st := c.st
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.end != nil || st.ctx.Err() != nil {
		return io.EOF // as gRPC's SendMsg on a stream that ended
	}
	st.requests = append(st.requests, b)
	st.changedLocked()
	return nil
}

// Recv hands over a copy of the next response, as gRPC hands over a
// buffer of its pool, and a release that overwrites it: a client that
// reads or keeps the bytes past their release sees them changed, as it
// would once gRPC reused its buffer. Releasing a response twice panics,
// as freeing a gRPC buffer twice does.
func (c clientSide) Recv() ([]byte, func(), error) {
	st := c.st
	st.mu.Lock()
	st.reading = true
	st.changedLocked()
	for {
		if len(st.responses) > 0 {
			b := slices.Clone(st.responses[0])
			st.responses = st.responses[1:]
			st.taken++
			st.held++
			st.reading = false
			st.changedLocked()
			st.mu.Unlock()
			return b, st.release(b), nil
		}
		if err := st.end; err != nil {
			st.reading = false
			st.mu.Unlock()
			return nil, nil, err
		}
		changed := st.changed
		st.mu.Unlock()
		select {
		case <-changed:
		case <-st.ctx.Done():
			st.mu.Lock()
			st.reading = false
			st.mu.Unlock()
			return nil, nil, status.FromContextError(st.ctx.Err()).Err()
		}
		st.mu.Lock()
	}
}

// Released is the byte a released response is overwritten with.
const Released = 0xdd

// release returns the release of b, a response the client read.
func (st *Stream) release(b []byte) func() {
	released := false
	return func() {
		st.mu.Lock()
		defer st.mu.Unlock()
		if released {
			panic(fmt.Sprintf("transporttest: stream to %s: a response released twice", st.s.uri))
		}
		released = true
		for i := range b {
			b[i] = Released
		}
		st.held--
		st.changedLocked()
	}
}
