package clusterlb

import (
	"sync/atomic"
	"time"

	"google.golang.org/grpc/balancer"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/resolver"
	"google.golang.org/grpc/status"
)

// child is one priority: while started, the leaf's policy over the
// priority's endpoints (impl) and its picker. Its fields are used on the
// serializer only.
type child struct {
	key  string
	spec prioritySpec

	started bool
	ccw     *childCC // the ClientConn given to im; nil when not started
	im      *impl    // nil when not started or without endpoints
	state   connectivity.State
	picker  balancer.Picker

	// The failover timer runs while the priority may still become READY
	// before the next one is tried; seenReady says whether the priority
	// has been READY or IDLE since it last failed (C-core's rule for
	// starting the timer again on CONNECTING).
	failover  *time.Timer
	seenReady bool
	// The retention timer runs while a started priority is not needed.
	retention *time.Timer
}

func (c *child) setSpec(spec prioritySpec) { c.spec = spec }

// childCC is the ClientConn of a child's endpointsharding balancer: it
// passes everything to the Balancer's ClientConn but the state, which it
// queues for the Balancer, and re-resolution requests, which only a
// LOGICAL_DNS cluster's children make (EDS priorities ignore them, as in
// C-core).
type childCC struct {
	balancer.ClientConn
	b   *Balancer
	c   *child
	dns atomic.Bool
}

func (w *childCC) UpdateState(s balancer.State) {
	w.b.s.schedule(func() { w.b.childUpdated(w, s) })
}

func (w *childCC) ResolveNow(o resolver.ResolveNowOptions) {
	if w.dns.Load() {
		w.ClientConn.ResolveNow(o)
	}
}

// start starts c: connects to its endpoints and arms its failover timer.
// A priority without endpoints fails at once.
func (b *Balancer) start(c *child) {
	c.started, c.seenReady = true, true
	if len(c.spec.endpoints) == 0 {
		c.state, c.picker = connectivity.TransientFailure, &picker{leaf: c.spec.leaf, err: c.spec.err}
		c.seenReady = false
		return
	}
	c.state, c.picker = connectivity.Connecting, &picker{leaf: c.spec.leaf}
	b.armFailover(c)
	c.ccw = &childCC{ClientConn: b.cc, b: b, c: c}
	c.ccw.dns.Store(c.spec.leaf.dns)
	c.im = newImpl(c.ccw, b.bopts, b.s.schedule)
	b.updateImpl(c)
}

// updateImpl gives c's policy its spec; a policy that refuses it fails the
// priority with its error.
func (b *Balancer) updateImpl(c *child) {
	if err := c.im.update(c.spec.leaf, c.spec.endpoints, b.outliers[c.spec.leaf.name]); err != nil {
		c.im.close()
		c.im = nil
		c.state, c.picker = connectivity.TransientFailure, &picker{leaf: c.spec.leaf, err: status.Error(codes.Unavailable, err.Error()+c.spec.leaf.note)}
		c.seenReady = false
		stopTimer(&c.failover)
	}
}

// refresh gives a started child its new spec: its policy keeps the
// connections to the endpoints that remain. A child that gains or loses
// all its endpoints is stopped, to start afresh.
func (b *Balancer) refresh(c *child) {
	if (c.im == nil) != (len(c.spec.endpoints) == 0) {
		b.stop(c)
		return
	}
	if c.im == nil {
		c.picker = &picker{leaf: c.spec.leaf, err: c.spec.err}
		return
	}
	c.ccw.dns.Store(c.spec.leaf.dns)
	b.updateImpl(c)
}

// stop closes c's connections and timers; it may be started again.
func (b *Balancer) stop(c *child) {
	stopTimer(&c.failover)
	stopTimer(&c.retention)
	if c.im != nil {
		c.im.close()
	}
	if b.cur == c {
		b.cur = nil
	}
	*c = child{key: c.key, spec: c.spec}
}

func stopTimer(t **time.Timer) {
	if *t != nil {
		(*t).Stop()
		*t = nil
	}
}

// childUpdated handles a state that a child's balancer reported, following
// C-core's priority policy: CONNECTING arms the failover timer unless the
// priority has failed since it was last READY or IDLE; any other state
// disarms it.
func (b *Balancer) childUpdated(w *childCC, s balancer.State) {
	c := w.c
	if b.closed || c.ccw != w {
		return // from a child since stopped
	}
	c.picker = s.Picker
	c.state = s.ConnectivityState
	switch c.state {
	case connectivity.Connecting:
		if c.seenReady && c.failover == nil {
			b.armFailover(c)
		}
	case connectivity.Ready, connectivity.Idle:
		c.seenReady = true
		stopTimer(&c.failover)
	case connectivity.TransientFailure:
		c.seenReady = false
		stopTimer(&c.failover)
	}
	b.choose()
}

func (b *Balancer) armFailover(c *child) {
	var t *time.Timer
	t = time.AfterFunc(b.failoverTimeout(), func() {
		b.s.schedule(func() {
			if b.closed || c.failover != t {
				return
			}
			// The priority counts as failing; its picker stays, in case
			// it is used as the last resort.
			c.failover, c.state, c.seenReady = nil, connectivity.TransientFailure, false
			b.choose()
		})
	})
	c.failover = t
}

// choose selects the priority to use, as C-core's priority policy does:
// the first that is READY or IDLE, or still within its failover timer,
// starting priorities on the way as needed; else the first CONNECTING
// one; else the last. Priorities below one that is READY or IDLE are
// retained for a while, then stopped.
func (b *Balancer) choose() {
	for i, c := range b.order {
		if !c.started {
			b.start(c)
		} else {
			stopTimer(&c.retention)
		}
		if c.state == connectivity.Ready || c.state == connectivity.Idle {
			b.retainBelow(i)
			b.use(c)
			return
		}
		if c.failover != nil {
			b.use(c)
			return
		}
	}
	for _, c := range b.order {
		if c.state == connectivity.Connecting {
			b.use(c)
			return
		}
	}
	b.use(b.order[len(b.order)-1])
}

// use makes c the priority in use and publishes its state and picker.
func (b *Balancer) use(c *child) {
	b.cur = c
	b.cc.UpdateState(balancer.State{ConnectivityState: c.state, Picker: c.picker})
}

// retainBelow arms the retention timer of the started priorities below
// the i-th.
func (b *Balancer) retainBelow(i int) {
	for _, c := range b.order[i+1:] {
		if !c.started || c.retention != nil {
			continue
		}
		var t *time.Timer
		t = time.AfterFunc(b.retention(), func() {
			b.s.schedule(func() {
				if !b.closed && c.retention == t {
					b.stop(c)
				}
			})
		})
		c.retention = t
	}
}
