package xdsgrpc

import (
	"context"
	"errors"
	"io"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/xdslens/xdslens/xdsgrpc/internal/callctx"
)

// retryBufferSize bounds the messages a streaming RPC keeps to send again
// on a retry, as gRPC-Go bounds them (its default retry buffer): past it,
// the RPC is committed and not retried.
const retryBufferSize = 256 << 10

// retryStream is a streaming RPC under a retry_policy (gRFC A44): while no
// response has come (no response header, no message) and the messages it
// sent fit in retryBufferSize, an attempt that fails with a code of the
// policy is followed by another, after the policy's backoff, to which the
// messages are sent again, as gRPC's own retries do.
type retryStream struct {
	ctx      context.Context
	desc     *grpc.StreamDesc
	cc       *grpc.ClientConn
	method   string
	streamer grpc.Streamer
	opts     []grpc.CallOption
	c        *callctx.Call
	b        *Builder
	rp       *retryPolicy

	mu         sync.Mutex // held while an attempt is made, so that sends go to it
	cur        grpc.ClientStream
	sent       []any
	size       int
	closedSend bool
	committed  bool
}

func (b *Builder) newRetryStream(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts []grpc.CallOption, c *callctx.Call, rp *retryPolicy) (grpc.ClientStream, error) {
	r := &retryStream{ctx: ctx, desc: desc, cc: cc, method: method, streamer: streamer, opts: opts, c: c, b: b, rp: rp}
	r.mu.Lock()
	defer r.mu.Unlock()
	s, err := streamer(ctx, desc, cc, method, opts...)
	if err != nil {
		if err = r.retryLocked(err); err != nil {
			return nil, err
		}
		return r, nil
	}
	r.cur = s
	return r, nil
}

// retryLocked makes attempts after one that failed with err, until one
// starts and takes the messages sent, or the RPC cannot be retried: it
// returns nil, or the error the RPC ends with.
func (r *retryStream) retryLocked(err error) error {
	for {
		if r.committed || r.c.Attempts >= r.rp.maxAttempts || !r.rp.codes[status.Code(err)] || r.ctx.Err() != nil {
			return err
		}
		r.c.Retried(err)
		r.b.retried(r.ctx, r.cc, r.c, r.method, r.c.Attempts+1, err)
		if !sleep(r.ctx, r.rp.backoff(r.c.Attempts)) {
			return status.FromContextError(r.ctx.Err()).Err()
		}
		r.c.Attempts++
		s, e := r.streamer(attemptContext(r.ctx, r.c.Attempts), r.desc, r.cc, r.method, r.opts...)
		if e != nil {
			err = e
			continue
		}
		for _, m := range r.sent {
			if e := s.SendMsg(m); e != nil {
				break // the stream failed: RecvMsg tells how
			}
		}
		if r.closedSend {
			s.CloseSend()
		}
		r.cur = s
		return nil
	}
}

// commitLocked ends the retries: a response came, or the messages no
// longer fit.
func (r *retryStream) commitLocked() {
	r.committed, r.sent = true, nil
}

func (r *retryStream) SendMsg(m any) error {
	r.mu.Lock()
	if !r.committed {
		kept := m
		if pm, ok := m.(proto.Message); ok {
			kept = proto.Clone(pm) // the caller may change m once SendMsg returns
			r.size += proto.Size(pm)
		}
		if r.size > retryBufferSize {
			r.commitLocked()
		} else {
			r.sent = append(r.sent, kept)
		}
	}
	s := r.cur
	r.mu.Unlock()
	return s.SendMsg(m)
}

func (r *retryStream) CloseSend() error {
	r.mu.Lock()
	r.closedSend = true
	s := r.cur
	r.mu.Unlock()
	return s.CloseSend()
}

func (r *retryStream) Header() (metadata.MD, error) {
	for {
		r.mu.Lock()
		s := r.cur
		r.mu.Unlock()
		md, err := s.Header()
		if err == nil {
			if len(md) > 0 {
				r.mu.Lock()
				r.commitLocked()
				r.mu.Unlock()
			}
			return md, nil
		}
		if err = r.again(s, err); err != nil {
			return md, err
		}
	}
}

func (r *retryStream) RecvMsg(m any) error {
	for {
		r.mu.Lock()
		s := r.cur
		r.mu.Unlock()
		err := s.RecvMsg(m)
		if err == nil {
			r.mu.Lock()
			r.commitLocked()
			r.mu.Unlock()
			return nil
		}
		if errors.Is(err, io.EOF) {
			return err
		}
		if err = r.again(s, err); err != nil {
			return err
		}
	}
}

// again retries the RPC after its attempt s failed with err, unless
// another call already did: nil when a new attempt runs, else the error
// the RPC ends with.
func (r *retryStream) again(s grpc.ClientStream, err error) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cur != s {
		return nil // retried by the other of Header and RecvMsg
	}
	if r.committedBy(s) {
		return err
	}
	return r.retryLocked(err)
}

// committedBy reports whether attempt s committed the RPC: it received
// response headers before failing.
func (r *retryStream) committedBy(s grpc.ClientStream) bool {
	if r.committed {
		return true
	}
	if md, err := s.Header(); err == nil && len(md) > 0 {
		r.commitLocked()
	}
	return r.committed
}

func (r *retryStream) Trailer() metadata.MD {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.cur.Trailer()
}

func (r *retryStream) Context() context.Context {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.cur.Context()
}
