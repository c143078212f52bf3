package xdsgrpc

import (
	"context"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/xdslens/xdslens/httpfilter"
	"github.com/xdslens/xdslens/internal/rpcstatus"
	"github.com/xdslens/xdslens/xdsclient"
	"github.com/xdslens/xdslens/xdsgrpc/internal/callctx"
)

// DialOptions returns the options that make a channel route by xdslens
// with the clients of pool: the resolver of "xdslens:" targets, and the
// interceptors that route each RPC once, when it starts, hold its cluster
// until it ends, and apply its route's deadline (gRFC A31), retries (gRFC
// A44) and client HTTP filters (gRFC A39). Add the channel's credentials:
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
// targets with the Builder, and route each RPC with its interceptors, with
// those WithDialOptions gave before them.
func (b *Builder) DialOptions() []grpc.DialOption {
	b.interceptors.Store(true)
	opts := make([]grpc.DialOption, 0, 3+len(b.opts.dialOptions))
	opts = append(opts, grpc.WithResolvers(b))
	opts = append(opts, b.opts.dialOptions...)
	return append(opts,
		grpc.WithChainUnaryInterceptor(b.unaryInterceptor),
		grpc.WithChainStreamInterceptor(b.streamInterceptor))
}

// begin starts the Call of an RPC on cc: it routes the RPC with the
// latest picker of cc's channel, waiting (as gRPC waits) for the
// channel's first config; when the channel cannot be told (see
// channelOf), the RPC's first pick routes it. A Call the caller gave
// (WithCallInfo) is used, reset.
func (b *Builder) begin(ctx context.Context, cc *grpc.ClientConn, method string) (context.Context, *callctx.Call) {
	c := callctx.From(ctx)
	if c == nil {
		c = new(callctx.Call)
		ctx = callctx.With(ctx, c)
	} else {
		c.Reset()
	}
	c.Owned, c.Conn = true, cc
	r := b.channelOf(cc)
	if r == nil {
		// An idle channel has no resolver until it connects.
		cc.Connect()
		r = b.channelOf(cc)
	}
	if r == nil {
		return ctx, c
	}
	select {
	case <-r.configured:
	case <-ctx.Done():
		return ctx, c
	}
	if rt := r.router.Load(); rt != nil {
		if p := rt.current.Load(); p != nil && p.state.err == nil {
			p.record(ctx, p.route(ctx, method), c)
			c.PlanApplied = true
		}
	}
	return ctx, c
}

// end ends the Call of an RPC, which ended with err: it settles the
// attempt held for its status, if any (callctx.Call.Ended), and gives
// back the cluster it holds.
func end(c *callctx.Call, err error) {
	c.Ended(err)
	releaseHeld(c)
}

// prepare applies c's plan before the RPC is sent: its deadline and its
// filters. It returns the RPC's context, a func to call when the RPC ends,
// and the error that fails the RPC unsent, if any.
func (b *Builder) prepare(ctx context.Context, cc *grpc.ClientConn, method string, c *callctx.Call) (context.Context, func(), *plan, error) {
	pl, _ := c.Plan.(*plan)
	if pl == nil {
		return ctx, func() {}, nil, nil
	}
	if pl.err != nil {
		return ctx, func() {}, nil, pl.err
	}
	var dones []func()
	if pl.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, pl.timeout)
		if len(pl.filters) == 0 {
			return ctx, cancel, pl, nil
		}
		dones = append(dones, cancel)
	}
	finish := func() {
		for i := len(dones) - 1; i >= 0; i-- {
			dones[i]()
		}
	}
	if len(pl.filters) == 0 {
		return ctx, finish, pl, nil
	}
	target := cc.CanonicalTarget()
	for _, f := range pl.filters {
		rpcCtx := ctx // the RPC's context as this filter gets it; the closure keeps its own copy
		call := &httpfilter.ClientCall{Method: method, Cluster: c.Cluster, Report: func(e httpfilter.ClientEvent) {
			if c.Fault == "" {
				c.Fault = e.Action
			} else if !strings.Contains(c.Fault, e.Action) {
				c.Fault += "+" + e.Action
			}
			if h := b.hooks.Load(); h != nil && h.FaultInjected != nil {
				h.FaultInjected(FaultInfo{Context: rpcCtx, Target: target, Cluster: c.Cluster, Method: method, Filter: f.name, Action: e.Action, Detail: e.Detail})
			}
		}}
		var done func()
		var err error
		ctx, done, err = f.ic.Intercept(ctx, call)
		if done != nil {
			dones = append(dones, done)
		}
		if err != nil {
			finish()
			return ctx, func() {}, pl, err
		}
	}
	return ctx, finish, pl, nil
}

func (b *Builder) unaryInterceptor(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) (err error) {
	ctx, c := b.begin(ctx, cc, method)
	defer func() { end(c, err) }()
	ctx, finish, pl, err := b.prepare(ctx, cc, method, c)
	defer finish()
	if err != nil {
		return err
	}
	if pl == nil || pl.retry == nil {
		c.Attempts = 1
		return invoker(ctx, method, req, reply, cc, opts...)
	}
	rp := pl.retry
	a := newAttempts(opts)
	for attempt := 1; ; attempt++ {
		c.Attempts = attempt
		a.hdr = nil
		err = invoker(attemptContext(ctx, attempt), method, req, reply, cc, a.opts...)
		// An attempt whose response headers came has committed the RPC
		// (gRFC A6): only a Trailers-Only failure is retried.
		if err == nil || attempt >= rp.maxAttempts || len(a.hdr) > 0 || !rp.codes[status.Code(err)] || ctx.Err() != nil {
			return err
		}
		c.Retried(err)
		b.retried(ctx, cc, c, method, attempt+1, err)
		if !sleep(ctx, rp.backoff(attempt)) {
			// The deadline passed, or the caller cancelled, during the
			// backoff: that ends the RPC, as in gRPC.
			return status.FromContextError(ctx.Err()).Err()
		}
	}
}

// attempts holds what the attempts of a retried unary RPC share: the
// caller's call options with one that captures each attempt's response
// headers, in one allocation for the RPC when the caller gave a few.
type attempts struct {
	hdr  metadata.MD
	opts []grpc.CallOption
	buf  [4]grpc.CallOption
}

func newAttempts(opts []grpc.CallOption) *attempts {
	a := new(attempts)
	a.opts = append(append(a.buf[:0], opts...), grpc.Header(&a.hdr))
	return a
}

// attemptContext is the context of an attempt: from the second on, it
// carries grpc-previous-rpc-attempts (gRFC A6).
func attemptContext(ctx context.Context, attempt int) context.Context {
	if attempt == 1 {
		return ctx
	}
	return metadata.AppendToOutgoingContext(ctx, "grpc-previous-rpc-attempts", strconv.Itoa(attempt-1))
}

// backoff is the wait before the retry after attempt n (gRFC A44, with
// gRFC A6's schedule): a random duration up to backoffLimit(n).
func (rp *retryPolicy) backoff(n int) time.Duration {
	d := rp.backoffLimit(n)
	if d <= 0 {
		return 0
	}
	return time.Duration(rand.Int64N(int64(d)))
}

// backoffLimit is base * 2^(n-1), at most max: doubled step by step, so
// that a base of centuries reaches max instead of wrapping past the
// largest time.Duration to a shorter wait, or a negative one.
func (rp *retryPolicy) backoffLimit(n int) time.Duration {
	d := rp.base
	for range n - 1 {
		if d >= rp.max/2 {
			return rp.max
		}
		d *= 2
	}
	return min(d, rp.max)
}

// sleep waits for d, or until ctx ends; it reports whether d passed.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// retried reports a retry to the hooks.
func (b *Builder) retried(ctx context.Context, cc *grpc.ClientConn, c *callctx.Call, method string, attempt int, err error) {
	if h := b.hooks.Load(); h != nil && h.Retried != nil {
		h.Retried(RetryInfo{Context: ctx, Target: cc.CanonicalTarget(), Cluster: c.Cluster, Method: method, Attempt: attempt, Code: status.Code(err)})
	}
}

func (b *Builder) streamInterceptor(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	ctx, c := b.begin(ctx, cc, method)
	ctx, finish, pl, err := b.prepare(ctx, cc, method, c)
	if err != nil {
		finish()
		end(c, err)
		return nil, err
	}
	c.Attempts = 1
	var s grpc.ClientStream
	if pl != nil && pl.retry != nil {
		s, err = b.newRetryStream(ctx, desc, cc, method, streamer, opts, c, pl.retry)
	} else {
		s, err = streamer(ctx, desc, cc, method, opts...)
	}
	if err != nil {
		finish()
		end(c, err)
		return nil, err
	}
	return rpcstatus.WatchEnd(ctx, desc, s, func(err error) { finish(); end(c, err) }), nil
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
