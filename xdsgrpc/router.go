package xdsgrpc

import (
	"fmt"
	"sync"
	"sync/atomic"

	"google.golang.org/grpc/balancer"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/resolver"
	"google.golang.org/grpc/status"

	"github.com/xdslens/xdslens/xdsclient/xdsconfig"
	"github.com/xdslens/xdslens/xdsclient/xdsresource"
	"github.com/xdslens/xdslens/xdsgrpc/internal/routing"
	"github.com/xdslens/xdslens/xdsgrpc/internal/subconns"
)

// routerName is the name under which the routing policy is registered with
// gRPC; the resolver's service config selects it.
const routerName = "xdslens_router"

func init() {
	balancer.Register(routerBuilder{})
}

type routerBuilder struct{}

func (routerBuilder) Name() string { return routerName }

func (routerBuilder) Build(cc balancer.ClientConn, opts balancer.BuildOptions) balancer.Balancer {
	return &router{cc: cc, conns: subconns.New(cc), bopts: opts, entries: map[string]*clusterEntry{}}
}

// router is the top load-balancing policy of an xdslens channel: it routes
// each RPC by the config's virtual host (package routing) to the policy of
// the cluster chosen, one per cluster the routes name, each the policy of
// package clusterlb over the cluster's leaves.
//
// An RPC is routed once (see call.go): it keeps the cluster it was given
// whatever pickers it meets later, and holds a reference to that cluster's
// policy while it runs, so that a cluster removed from the config keeps
// serving the RPCs already routed to it until they end (gRFC A74); its
// policy is closed when the last of them ends.
//
// gRPC calls UpdateClientConnState, ResolverError, ExitIdle and Close one
// at a time; children may call UpdateState from other goroutines (timers),
// and RPCs release their references from theirs, so the state the picker
// is built from is guarded by mu, which is never held while calling a
// child.
type router struct {
	cc balancer.ClientConn
	// conns is the ClientConn the cluster policies get: the channel's,
	// whose connections they share by address (package subconns).
	conns *subconns.Pool
	bopts balancer.BuildOptions

	// current is the latest picker, for the interceptors that route an
	// RPC when it starts.
	current atomic.Pointer[picker]
	// waiting holds, by the context of their attempt, the decisions of the
	// RPCs without a Call that wait for a connection.
	waiting sync.Map

	mu      sync.Mutex
	state   *channelState // the resolver's last state
	table   *routing.Table
	slots   []slot                   // by index in table.Clusters
	plans   map[planKey]*plan        // of the routes and clusters of the config
	entries map[string]*clusterEntry // every cluster policy alive: in the config, or held by RPCs
	closed  bool
}

// slot is what a route-level cluster of the current config is: a cluster
// policy, or an error its RPCs fail with.
type slot struct {
	name  string
	entry *clusterEntry // nil when err is set
	err   error
}

// clusterEntry is the policy of one route-level cluster.
type clusterEntry struct {
	r    *router
	name string
	bal  balancer.Balancer
	// state is the policy's latest state; nil until it reports one.
	state atomic.Pointer[balancer.State]
	// refs counts the RPCs that hold the entry; -1 once it is closed,
	// when it can no longer be acquired.
	refs atomic.Int32
	// inConfig says whether the current config names the cluster;
	// guarded by r.mu.
	inConfig bool
}

// acquire takes a reference on e for an RPC, unless e is closed.
func (e *clusterEntry) acquire() bool {
	for {
		n := e.refs.Load()
		if n < 0 {
			return false
		}
		if e.refs.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// release gives back a reference; the last reference to a cluster no
// longer in the config closes its policy.
func (e *clusterEntry) release() {
	if e.refs.Add(-1) == 0 {
		e.r.closeIfUnused(e)
	}
}

// closeIfUnused closes e if no config names it and no RPC holds it.
func (r *router) closeIfUnused(e *clusterEntry) {
	r.mu.Lock()
	if e.inConfig || r.entries[e.name] != e || !e.refs.CompareAndSwap(0, -1) {
		r.mu.Unlock()
		return
	}
	delete(r.entries, e.name)
	r.mu.Unlock()
	e.bal.Close()
}

// childConn is the ClientConn a cluster policy gets: the router's, whose
// UpdateState goes to the router.
type childConn struct {
	balancer.ClientConn
	e *clusterEntry
}

func (cc *childConn) UpdateState(s balancer.State) { cc.e.r.childUpdated(cc.e, s) }

// UpdateClientConnState takes a new config (or a failed one) from the
// resolver.
func (r *router) UpdateClientConnState(ccs balancer.ClientConnState) error {
	cs, _ := ccs.ResolverState.Attributes.Value(channelStateKey{}).(*channelState)
	if cs == nil {
		return fmt.Errorf("xdslens: %s policy used without the xdslens resolver", routerName)
	}
	cs.resolver.router.Store(r)
	var table *routing.Table
	var slots []slot
	var plans map[planKey]*plan
	updates := map[*clusterEntry][]*xdsconfig.ClusterConfig{}
	var toClose []*clusterEntry
	if cs.err == nil {
		var err error
		table, err = routing.Compile(cs.config.VirtualHost, cs.builder.opts.routingOptions...)
		if err != nil {
			return fmt.Errorf("xdslens: %w", err)
		}
		slots = make([]slot, len(table.Clusters))
		plans = buildPlans(cs.config)
	}
	r.mu.Lock()
	for _, e := range r.entries {
		e.inConfig = false
	}
	for i := range slots {
		name := table.Clusters[i]
		leaves, err := leavesOf(cs.config, name)
		if err != nil {
			slots[i] = slot{name: name, err: err}
			continue
		}
		e := r.entries[name]
		if e == nil {
			e = &clusterEntry{r: r, name: name}
			e.bal = newClusterBalancer(&childConn{ClientConn: r.conns, e: e}, r.bopts)
			r.entries[name] = e
		}
		e.inConfig = true
		slots[i] = slot{name: name, entry: e}
		updates[e] = leaves
	}
	for name, e := range r.entries {
		if !e.inConfig && e.refs.CompareAndSwap(0, -1) {
			delete(r.entries, name)
			toClose = append(toClose, e)
		}
	}
	r.state, r.table, r.slots, r.plans = cs, table, slots, plans
	r.mu.Unlock()

	for e, leaves := range updates {
		e.bal.UpdateClientConnState(balancer.ClientConnState{
			ResolverState:  resolver.State{Attributes: ccs.ResolverState.Attributes},
			BalancerConfig: clusterConfig(e.name, leaves, cs),
		})
	}
	for _, e := range toClose {
		e.bal.Close()
	}
	r.mu.Lock()
	r.updatePickerLocked()
	r.mu.Unlock()
	return nil
}

// leavesOf returns the usable leaf cluster slots of the route-level
// cluster name, in priority order, or the error its picks fail with.
func leavesOf(cfg *xdsconfig.Config, name string) ([]*xdsconfig.ClusterConfig, error) {
	slot := cfg.Clusters[name]
	switch {
	case slot == nil:
		return nil, status.Errorf(codes.Unavailable, "cluster %q is not in the xDS config of listener %q (xDS node ID: %s)", name, cfg.ListenerName, cfg.NodeID)
	case slot.Err != nil:
		return nil, slot.Err
	case slot.Cluster.Kind != xdsresource.ClusterAggregate:
		return []*xdsconfig.ClusterConfig{slot}, nil
	}
	var leaves []*xdsconfig.ClusterConfig
	for _, l := range slot.Leaves {
		if ls := cfg.Clusters[l]; ls != nil && ls.IsLeaf() {
			leaves = append(leaves, ls)
		}
	}
	if len(leaves) == 0 {
		return nil, status.Errorf(codes.Unavailable, "aggregate cluster %q has no usable leaf cluster (xDS node ID: %s)", name, cfg.NodeID)
	}
	return leaves, nil
}

// childUpdated takes a cluster policy's new state and picker.
func (r *router) childUpdated(e *clusterEntry, s balancer.State) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed || r.entries[e.name] != e {
		return // a policy being closed, or replaced
	}
	e.state.Store(&s)
	r.updatePickerLocked()
}

// updatePickerLocked gives the channel a picker built from the current
// config and the children's pickers, and the channel's state: READY when a
// child is, else CONNECTING when one is connecting or idle, else
// TRANSIENT_FAILURE (gRFC A28: the aggregate of the children's states).
func (r *router) updatePickerLocked() {
	if r.closed || r.state == nil {
		return
	}
	p := &picker{r: r, state: r.state}
	defer r.state.resolver.configuredOnce.Do(func() { close(r.state.resolver.configured) })
	if r.state.err != nil {
		r.current.Store(p)
		r.cc.UpdateState(balancer.State{ConnectivityState: connectivity.TransientFailure, Picker: p})
		return
	}
	p.table, p.slots, p.plans = r.table, r.slots, r.plans
	agg := connectivity.TransientFailure
	for _, s := range r.slots {
		if s.entry == nil {
			continue
		}
		switch st := s.entry.state.Load(); {
		case st != nil && st.ConnectivityState == connectivity.Ready:
			agg = connectivity.Ready
		case (st == nil || st.ConnectivityState == connectivity.Connecting || st.ConnectivityState == connectivity.Idle) && agg != connectivity.Ready:
			agg = connectivity.Connecting
		}
	}
	r.current.Store(p)
	r.cc.UpdateState(balancer.State{ConnectivityState: agg, Picker: p})
}

// ResolverError keeps the current config: the resolver reports the
// failures that change it through UpdateClientConnState.
func (r *router) ResolverError(err error) {}

// UpdateSubConnState is not used: children create SubConns with state
// listeners.
func (r *router) UpdateSubConnState(balancer.SubConn, balancer.SubConnState) {}

// ExitIdle asks every cluster policy to connect.
func (r *router) ExitIdle() {
	r.mu.Lock()
	es := make([]*clusterEntry, 0, len(r.entries))
	for _, e := range r.entries {
		es = append(es, e)
	}
	r.mu.Unlock()
	for _, e := range es {
		e.bal.ExitIdle()
	}
}

// Close closes every cluster policy, those held by RPCs included: the
// channel is closing, and its RPCs fail.
func (r *router) Close() {
	r.mu.Lock()
	r.closed = true
	old := r.entries
	r.entries = nil
	r.mu.Unlock()
	for _, e := range old {
		e.refs.Store(-1)
		e.bal.Close()
	}
}
