package xdsgrpc

import (
	"context"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"github.com/xdslens/xdslens/xdsclient"

	"github.com/xdslens/xdslens/xdsgrpc/internal/callctx"
)

// DialOptions returns the options that make a channel route by xdslens
// with the clients of pool: the resolver of "xdslens:" targets, and the
// interceptors that route each RPC once, when it starts, and hold its
// cluster until it ends. Add the channel's credentials:
//
//	conn, err := grpc.NewClient("xdslens:///payments", append(xdsgrpc.DialOptions(pool),
//		grpc.WithTransportCredentials(insecure.NewCredentials()))...)
//
// The options may serve several channels; each is routed by its own
// resolver.
func DialOptions(pool *xdsclient.Pool, opts ...Option) []grpc.DialOption {
	return NewBuilder(pool, opts...).DialOptions()
}

// DialOptions returns the options that make a channel resolve "xdslens:"
// targets with the Builder, and route each RPC with its interceptors.
func (b *Builder) DialOptions() []grpc.DialOption {
	return []grpc.DialOption{
		grpc.WithResolvers(b),
		grpc.WithChainUnaryInterceptor(b.unaryInterceptor),
		grpc.WithChainStreamInterceptor(b.streamInterceptor),
	}
}

// begin starts the Call of an RPC on cc: it routes the RPC with the
// latest picker of cc's channel, when the channel has one and is known,
// else the RPC's first pick will. A Call the caller gave (WithCallInfo) is
// used, reset.
func (b *Builder) begin(ctx context.Context, cc *grpc.ClientConn, method string) (context.Context, *callctx.Call) {
	c := callctx.From(ctx)
	if c == nil {
		c = new(callctx.Call)
		ctx = callctx.With(ctx, c)
	} else {
		*c = callctx.Call{ClusterOut: c.ClusterOut}
	}
	c.Owned, c.Conn = true, cc
	if r := b.channelOf(cc); r != nil {
		if rt := r.router.Load(); rt != nil {
			if p := rt.current.Load(); p != nil && p.state.err == nil {
				p.record(ctx, p.route(ctx, method), c)
			}
		}
	}
	return ctx, c
}

// end ends the Call of an RPC: it gives back the cluster it holds.
func end(c *callctx.Call) { releaseHeld(c) }

func (b *Builder) unaryInterceptor(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	ctx, c := b.begin(ctx, cc, method)
	defer end(c)
	return invoker(ctx, method, req, reply, cc, opts...)
}

func (b *Builder) streamInterceptor(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	ctx, c := b.begin(ctx, cc, method)
	s, err := streamer(ctx, desc, cc, method, opts...)
	if err != nil {
		end(c)
		return nil, err
	}
	es := &endingStream{ClientStream: s}
	es.stop = context.AfterFunc(ctx, es.finish)
	es.end = func() { end(c) }
	return es, nil
}

// endingStream ends the Call of a streaming RPC when the stream ends: when
// RecvMsg (or Header) fails, io.EOF included, or when its context is done.
type endingStream struct {
	grpc.ClientStream
	once sync.Once
	stop func() bool
	end  func()
}

func (s *endingStream) finish() { s.once.Do(s.end) }

func (s *endingStream) RecvMsg(m any) error {
	err := s.ClientStream.RecvMsg(m)
	if err != nil {
		s.stop()
		s.finish()
	}
	return err
}

func (s *endingStream) Header() (metadata.MD, error) {
	md, err := s.ClientStream.Header()
	if err != nil {
		s.stop()
		s.finish()
	}
	return md, err
}

// keepWaiting keeps c, the decision of an RPC that has no Call and must
// wait, for the next picks of its attempt, whose context is ctx, until
// the attempt ends.
func (r *router) keepWaiting(ctx context.Context, c *callctx.Call) {
	r.waiting.Store(ctx, c)
	e := c.Entry.(*clusterEntry)
	held := e.acquire()
	c.Held = held
	context.AfterFunc(ctx, func() {
		r.waiting.Delete(ctx)
		if held {
			e.release()
		}
	})
}

// holdWhileWaiting has c, the decision of an RPC that its interceptors do
// not own, hold its cluster until the attempt whose context is ctx ends.
func (r *router) holdWhileWaiting(ctx context.Context, c *callctx.Call) {
	if c.Owned {
		return
	}
	e := c.Entry.(*clusterEntry)
	if !e.acquire() {
		return
	}
	c.Held = true
	context.AfterFunc(ctx, e.release)
}
