// Package callctx carries one RPC's data-plane state through its context:
// what the routing policy decided for it (once per RPC, whatever number of
// pickers the RPC meets), the request hash the cluster's policy reads, and
// where the RPC went, for the caller to read when it returns.
//
// A Call is made by the channel's interceptors when an RPC starts, or by
// the caller (xdsgrpc.WithCallInfo), or, for an RPC that has neither and
// must wait for a connection, by the routing policy's picker. One RPC's
// picks run one after the other, so a Call needs no lock; it must not be
// shared by RPCs.
//
// A Call put in a context (With) also holds, for the interceptors, the
// accounting of an attempt that gRPC-Go ended without its status (see
// package internal/rpcstatus): the cluster's policy holds it there
// (Hold), and the interceptors, who see the RPC's retries and its end,
// settle it (Retried, Ended). That part is safe for concurrent use: an
// attempt may end on another goroutine than the RPC's.
package callctx

import (
	"context"

	"github.com/xdslens/xdslens/internal/rpcstatus"
	"github.com/xdslens/xdslens/xdsclient/lrs"
	"github.com/xdslens/xdslens/xdsclient/xdsconfig"
)

// Call is the state of one RPC. The routing fields are written by the pick
// that decides the RPC's route and read by the later ones; Leaf and
// Locality by every pick that reaches a cluster.
type Call struct {
	// Decided is set once the RPC's route and cluster were chosen, or its
	// failure was: later picks reuse the decision, those of the attempt
	// whose context is PickCtx when the Call is not Owned.
	Decided bool
	// PickCtx is the context of the pick that decided, for a Call that is
	// not Owned: a Call that a caller reuses for another RPC is decided
	// again.
	PickCtx context.Context
	// Channel is the routing policy's state of the channel that decided,
	// opaque here: a decision is only reused by the channel that made it.
	Channel any
	// Route is the index of the route in the virtual host, -1 when none
	// matched; Config is the config of the picker that decided, and
	// Target its channel's target.
	Route  int
	Config *xdsconfig.Config
	Target string
	// Cluster is the route-level cluster chosen ("" when none was); Entry
	// is the routing policy's handle on it, opaque here, which keeps the
	// cluster's policy alive while the RPC holds it.
	Cluster string
	Entry   any
	// Err is the error the RPC fails with, when the decision is a failure.
	Err error
	// Hash is the request hash of the route's hash policies (gRFC A42),
	// meaningful when HasHash is set.
	Hash    uint64
	HasHash bool
	// Plan is what the interceptors do for the RPC's route and cluster
	// (its deadline, retries and filters), opaque here; nil when nothing.
	// PlanApplied says that the interceptors applied it: an RPC routed
	// after it started (by a pick) cannot have its deadline or filters.
	Plan        any
	PlanApplied bool

	// Conn is the *grpc.ClientConn of an Owned Call, opaque here: the
	// channel that decides it learns which ClientConn is its own.
	Conn any
	// Owned is set for a Call that the channel's interceptors made: they
	// give back, when the RPC ends, the cluster the decision holds.
	Owned bool
	// Held says whether the decision holds a reference on Entry, which
	// whoever ends the Call gives back.
	Held bool
	// ClusterOut, when set, receives Cluster when the route is decided
	// (the caller's xdsgrpc.CallInfo).
	ClusterOut *string

	// Leaf is the leaf cluster the RPC was given to and Policy its
	// endpoint policy's name; Locality and Address the locality and
	// address of the endpoint that took it (zero when none did). Each
	// pick sets them anew.
	Leaf, Policy string
	Locality     lrs.Locality
	Address      string
	// Attempts counts the RPC's attempts (retries plus one), 0 before it
	// is sent; Fault is the fault an HTTP filter injected into it ("delay",
	// "abort" or "delay+abort"), "" when none.
	Attempts int
	Fault    string

	// Attempt holds the accounting of an attempt of the RPC whose status
	// is not known yet; With sets it. Only the attempts of an Owned Call
	// are held: its interceptors settle them.
	Attempt *rpcstatus.Unsettled[HeldAttempt]
}

// HeldAttempt is the accounting of an attempt that gRPC-Go ended without
// a status, held until the status is known.
type HeldAttempt interface {
	// Settle accounts for the attempt, which ended with err (nil: OK).
	Settle(err error)
	// Unanswered reports whether the server sent nothing on the attempt's
	// stream: a transparent retry may follow it.
	Unanswered() bool
}

// Holds reports whether the attempts of c are held until their status is
// known: c is Owned and carried by a context made by With.
func (c *Call) Holds() bool { return c.Owned && c.Attempt != nil }

// Hold holds a, which ended without an error, until Retried or Ended
// tells its status; when the RPC has ended already, it returns the RPC's
// error and true instead: the status of a.
func (c *Call) Hold(a HeldAttempt) (error, bool) { return c.Attempt.Hold(a) }

// Superseded settles the attempt held, if any, when another attempt of
// the RPC is picked: UNAVAILABLE if its server sent nothing (a
// transparent retry follows such a stream), else UNKNOWN (package
// internal/rpcstatus).
func (c *Call) Superseded() {
	if c.Attempt == nil {
		return
	}
	if a, ok := c.Attempt.Take(); ok {
		a.Settle(rpcstatus.Superseded(a.Unanswered()))
	}
}

// Retried settles the attempt held, if any, when the interceptors retry
// the RPC after it: it failed with err.
func (c *Call) Retried(err error) {
	if c.Attempt == nil {
		return
	}
	if a, ok := c.Attempt.Take(); ok {
		a.Settle(err)
	}
}

// Ended records that the RPC ended with err (nil: OK), and settles the
// attempt held, if any, with it.
func (c *Call) Ended(err error) {
	if c.Attempt == nil {
		return
	}
	if a, ok := c.Attempt.End(err); ok {
		a.Settle(err)
	}
}

// Reset makes c a Call for another RPC: it keeps ClusterOut and the place
// where its attempts are held, emptied.
func (c *Call) Reset() {
	*c = Call{ClusterOut: c.ClusterOut, Attempt: c.Attempt}
	if c.Attempt != nil {
		*c.Attempt = rpcstatus.Unsettled[HeldAttempt]{}
	}
}

type key struct{}

// callContext is a context that carries a Call and the place where its
// attempts are held, made in one allocation, as context.WithValue makes
// its own.
type callContext struct {
	context.Context
	call    *Call
	attempt rpcstatus.Unsettled[HeldAttempt]
}

// Value returns the Call for this package's key, and asks the parent
// context for any other.
func (c *callContext) Value(k any) any {
	if k == (key{}) {
		return c.call
	}
	return c.Context.Value(k)
}

// With returns a context that carries c, and holds c's attempts if c has
// no other place for them.
func With(ctx context.Context, c *Call) context.Context {
	cc := &callContext{Context: ctx, call: c}
	if c.Attempt == nil {
		c.Attempt = &cc.attempt
	}
	return cc
}

// From returns the Call that ctx carries, nil when it carries none.
func From(ctx context.Context) *Call {
	if ctx == nil {
		return nil
	}
	c, _ := ctx.Value(key{}).(*Call)
	return c
}

// RequestHash returns the request hash of the RPC of ctx, and whether it
// has one.
func RequestHash(ctx context.Context) (uint64, bool) {
	if c := From(ctx); c != nil && c.Decided {
		return c.Hash, c.HasHash
	}
	return 0, false
}
