package clusterlb

import (
	"fmt"
	"sync"
	"sync/atomic"

	"google.golang.org/grpc/balancer"
	"google.golang.org/grpc/connectivity"
	estats "google.golang.org/grpc/experimental/stats"
	"google.golang.org/grpc/resolver"

	"github.com/xdslens/xdslens/xdsclient/lrs"
	"github.com/xdslens/xdslens/xdsgrpc/internal/subconns"
)

// impl is the policy of one priority of a leaf cluster: what C-core's
// xds_cluster_impl does (drops, circuit breaking, load reports and the pick
// hooks, with the locality of each endpoint learned from the connections
// the endpoint policy makes) over the endpoint policy the Cluster names.
//
// Its update and close are called on the Balancer's serializer; its
// endpoint policy reports from any goroutine, under mu.
type impl struct {
	parent balancer.ClientConn // the priority's ClientConn
	opts   balancer.BuildOptions
	// schedule runs a func on the Balancer's serializer: the endpoint
	// policy's SubConn listeners run there, as its other calls do, so that
	// a policy is called one call at a time, as gRPC promises policies.
	schedule func(func()) bool

	mu        sync.Mutex
	leaf      *leaf
	od        *outlier // the leaf's outlier detection, nil without one
	policyKey string
	child     balancer.Balancer // the endpoint policy
	childCC   *implCC           // the ClientConn of child; others are stale
	last      balancer.State    // what child last reported
	subConns  map[*implSubConn]struct{}
	closed    bool
}

func newImpl(parent balancer.ClientConn, opts balancer.BuildOptions, schedule func(func()) bool) *impl {
	return &impl{parent: parent, opts: opts, schedule: schedule, subConns: map[*implSubConn]struct{}{}}
}

// serialized returns l run on the serializer.
func (i *impl) serialized(l func(balancer.SubConnState)) func(balancer.SubConnState) {
	if l == nil {
		return nil
	}
	return func(s balancer.SubConnState) { i.schedule(func() { l(s) }) }
}

// update gives the priority its leaf, its endpoints and the leaf's
// outlier detection (nil for none); on the serializer. The endpoint
// policy is built again only when the Cluster names another policy or
// config.
func (i *impl) update(l *leaf, eps []resolver.Endpoint, od *outlier) error {
	i.mu.Lock()
	i.leaf, i.od = l, od
	scs := make([]*implSubConn, 0, len(i.subConns))
	for sc := range i.subConns {
		sc.refresh(l)
		scs = append(scs, sc)
	}
	var old balancer.Balancer
	if i.child == nil || i.policyKey != l.policy.key {
		old = i.child
		i.childCC = &implCC{ClientConn: i.parent, i: i}
		i.policyKey = l.policy.key
		i.last = balancer.State{ConnectivityState: connectivity.Connecting}
		i.childCC.rec = newRecorder(i.parent.MetricsRecorder(), l)
		i.child = l.policy.builder.Build(i.childCC, i.opts)
	} else if i.last.Picker != nil {
		i.publishLocked()
	}
	child := i.child
	i.mu.Unlock()
	for _, sc := range scs {
		sc.link(od)
	}
	if old != nil {
		old.Close()
	}
	err := child.UpdateClientConnState(balancer.ClientConnState{
		// The policies that pick among endpoints ask their pick_first
		// children for health themselves (and so see ejections); a
		// pick_first named by the Cluster does not, as in gRPC.
		ResolverState:  resolver.State{Endpoints: eps},
		BalancerConfig: l.policy.config,
	})
	if err != nil {
		return fmt.Errorf("%s: load-balancing policy %q: %w", l.label, l.policy.name, err)
	}
	return nil
}

func (i *impl) resolverError(err error) {
	i.mu.Lock()
	child := i.child
	i.mu.Unlock()
	if child != nil {
		child.ResolverError(err)
	}
}

func (i *impl) exitIdle() {
	i.mu.Lock()
	child := i.child
	i.mu.Unlock()
	if child != nil {
		child.ExitIdle()
	}
}

func (i *impl) close() {
	i.mu.Lock()
	i.closed = true
	child := i.child
	i.child = nil
	i.mu.Unlock()
	if child != nil {
		child.Close()
	}
}

// publishLocked gives the priority the endpoint policy's state, with a
// picker that applies the leaf's drops, circuit breaker and load reports
// around the endpoint policy's picker.
func (i *impl) publishLocked() {
	if i.closed {
		return
	}
	p := &picker{leaf: i.leaf, child: i.last.Picker, failing: i.last.ConnectivityState == connectivity.TransientFailure}
	i.parent.UpdateState(balancer.State{ConnectivityState: i.last.ConnectivityState, Picker: p})
}

// implCC is the ClientConn of the endpoint policy: SubConns it makes are
// wrapped to know their locality, and its states are wrapped in pickers.
type implCC struct {
	balancer.ClientConn
	i   *impl
	rec *recorder
}

// MetricsRecorder returns the recorder that labels the policy's metrics
// with its leaf, and reports them to the Metric hook.
func (cc *implCC) MetricsRecorder() estats.MetricsRecorder { return cc.rec }

func (cc *implCC) UpdateState(s balancer.State) {
	i := cc.i
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.childCC != cc || i.closed {
		return // a policy replaced or closed
	}
	i.last = s
	i.publishLocked()
}

func (cc *implCC) NewSubConn(addrs []resolver.Address, opts balancer.NewSubConnOptions) (balancer.SubConn, error) {
	w := &implSubConn{i: cc.i, state: connectivity.Idle}
	if len(addrs) > 0 {
		w.addr = addrs[0].Addr
	}
	listener := opts.StateListener
	opts.StateListener = cc.i.serialized(func(s balancer.SubConnState) {
		w.changed(s.ConnectivityState)
		if listener != nil {
			listener(s)
		}
	})
	sc, err := cc.ClientConn.NewSubConn(addrs, opts)
	if err != nil {
		return nil, err
	}
	w.SubConn, w.real = sc, sc
	if h, ok := sc.(*subconns.Handle); ok {
		w.real = h.Underlying()
	}
	if len(addrs) > 0 {
		if a := localityOfAddr(addrs[0]); a != nil {
			w.locality = a.id
		}
	}
	cc.i.mu.Lock()
	w.refresh(cc.i.leaf)
	cc.i.subConns[w] = struct{}{}
	od := cc.i.od
	cc.i.mu.Unlock()
	if od != nil {
		cc.i.schedule(func() { w.link(od) })
	}
	return w, nil
}

// RemoveSubConn is deprecated in gRPC; SubConns shut themselves down.
func (cc *implCC) RemoveSubConn(sc balancer.SubConn) { sc.Shutdown() }

// implSubConn is a connection of the endpoint policy, with what a pick
// that returns it records: its locality, and the Done func of its RPCs,
// built when the leaf changes rather than at every pick.
type implSubConn struct {
	balancer.SubConn
	// real is the SubConn gRPC made, which a pick returns to it.
	real  balancer.SubConn
	i     *impl
	addr  string
	state connectivity.State // the last state, on the serializer

	// ep is the connection's endpoint under outlier detection, nil when
	// none; on the serializer.
	ep *odEndpoint
	// The health listener of the endpoint policy, which an ejection tells
	// TRANSIENT_FAILURE (gRFC A50), and what it was last told.
	hmu        sync.Mutex
	health     func(balancer.SubConnState)
	lastHealth *balancer.SubConnState
	ejected    bool
	locality   lrs.Locality
	st         atomic.Pointer[scState]
}

// scState is what the RPCs of one SubConn record with one leaf. done is
// the Done of the RPCs that the interceptors do not follow, which report
// when they end.
type scState struct {
	leaf *leaf
	info CallInfo
	od   atomic.Pointer[odEndpoint] // counts the RPCs' results for outlier detection
	done func(balancer.DoneInfo)
}

// refresh builds the SubConn's state for leaf l; with i.mu held.
func (w *implSubConn) refresh(l *leaf) {
	if l == nil {
		return
	}
	st := &scState{leaf: l, info: CallInfo{Cluster: l.cluster, Leaf: l.name, Locality: w.locality, Policy: l.policyName()}}
	if old := w.st.Load(); old != nil {
		st.od.Store(old.od.Load())
	}
	st.done = func(di balancer.DoneInfo) {
		if neverStarted(di) {
			l.unpick(st.info.Locality)
			return
		}
		l.counter.end()
		st.report(di)
	}
	w.st.Store(st)
}

// report records the end of an RPC that the connection took for its leaf:
// its load, its hook, and its result for outlier detection.
func (st *scState) report(di balancer.DoneInfo) {
	st.leaf.report(st.info, di)
	if ep := st.od.Load(); ep != nil {
		ep.record(di.Err)
	}
}

// changed reports the connection's new state to the ConnectionChanged
// hook; on the serializer.
func (w *implSubConn) changed(to connectivity.State) {
	from := w.state
	w.state = to
	w.i.mu.Lock()
	l := w.i.leaf
	w.i.mu.Unlock()
	if l == nil || from == to {
		return
	}
	if h := l.hooks.ConnectionChanged; h != nil {
		h(ConnectionInfo{Cluster: l.cluster, Leaf: l.name, Locality: w.locality, Policy: l.policyName(), Address: w.addr, From: from, To: to})
	}
}

// link puts the connection under the outlier detection od (nil: none):
// its RPCs count for its endpoint, and it follows the endpoint's
// ejections; on the serializer.
func (w *implSubConn) link(od *outlier) {
	ep := od.endpoint(w.addr)
	if w.ep == ep {
		return
	}
	if w.ep != nil {
		delete(w.ep.subConns, w)
	}
	w.ep = ep
	if st := w.st.Load(); st != nil {
		st.od.Store(ep)
	}
	if ep != nil {
		ep.subConns[w] = struct{}{}
	}
	w.setEjected(ep != nil && ep.ejected())
}

// setEjected ejects the connection, telling its health listener
// TRANSIENT_FAILURE while it is (gRFC A50: the endpoint policy sees it
// failing, and keeps the connection), or returns it, telling the listener
// the health it would have had; on the serializer.
func (w *implSubConn) setEjected(ejected bool) {
	w.hmu.Lock()
	if w.ejected == ejected {
		w.hmu.Unlock()
		return
	}
	w.ejected = ejected
	l := w.health
	s := ejectionState
	if !ejected {
		s = balancer.SubConnState{ConnectivityState: connectivity.Connecting}
		if w.lastHealth != nil {
			s = *w.lastHealth
		}
	}
	w.hmu.Unlock()
	if l != nil {
		l(s)
	}
}

// RegisterHealthListener registers l, to run on the serializer, and to be
// told TRANSIENT_FAILURE while the connection is ejected.
func (w *implSubConn) RegisterHealthListener(l func(balancer.SubConnState)) {
	w.hmu.Lock()
	w.health, w.lastHealth = l, nil
	ejected := w.ejected
	w.hmu.Unlock()
	if l == nil {
		w.SubConn.RegisterHealthListener(nil)
		return
	}
	if ejected {
		// A listener registered while the connection is ejected hears so
		// first, after its registration has returned.
		w.i.schedule(func() {
			w.hmu.Lock()
			tell := w.ejected && w.lastHealth == nil
			w.hmu.Unlock()
			if tell {
				l(ejectionState)
			}
		})
	}
	w.SubConn.RegisterHealthListener(w.i.serialized(func(s balancer.SubConnState) {
		w.hmu.Lock()
		if w.health == nil {
			w.hmu.Unlock()
			return
		}
		w.lastHealth = &s
		l, ejected := w.health, w.ejected
		w.hmu.Unlock()
		if !ejected {
			l(s)
		}
	}))
}

func (w *implSubConn) Shutdown() {
	w.i.mu.Lock()
	delete(w.i.subConns, w)
	w.i.mu.Unlock()
	w.i.schedule(func() {
		if w.ep != nil {
			delete(w.ep.subConns, w)
			w.ep = nil
		}
	})
	w.SubConn.Shutdown()
}
