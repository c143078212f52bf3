package xdsgrpc

import (
	"fmt"
	"sync"

	"google.golang.org/grpc/balancer"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/resolver"
	"google.golang.org/grpc/status"

	"github.com/xdslens/xdslens/xdsclient/xdsconfig"
	"github.com/xdslens/xdslens/xdsclient/xdsresource"
	"github.com/xdslens/xdslens/xdsgrpc/internal/routing"
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
	r := &router{cc: cc, bopts: opts, children: map[string]*child{}}
	return r
}

// router is the top load-balancing policy of an xdslens channel: it routes
// each pick by the config's virtual host (package routing) to the child
// policy of the chosen cluster, one per cluster the routes name, each the
// policy of package clusterlb over the cluster's leaves.
//
// gRPC calls UpdateClientConnState, ResolverError, ExitIdle and Close one
// at a time; children may call UpdateState from other goroutines (timers),
// so the state the picker is built from is guarded by mu, which is never
// held while calling a child.
type router struct {
	cc    balancer.ClientConn
	bopts balancer.BuildOptions

	mu       sync.Mutex
	state    *channelState // the resolver's last state
	table    *routing.Table
	entries  []*entry // by index in table.Clusters
	children map[string]*child
	closed   bool
}

// entry is what a route-level cluster of the current config is: a child
// policy, or an error its picks fail with.
type entry struct {
	name  string
	child *child // nil when err is set
	err   error
}

// child is the policy of one route-level cluster.
type child struct {
	name  string
	bal   balancer.Balancer
	state balancer.State // guarded by router.mu; Picker nil until it reports
}

// childConn is the ClientConn a child policy gets: the router's, whose
// UpdateState goes to the router.
type childConn struct {
	balancer.ClientConn
	r *router
	c *child
}

func (cc *childConn) UpdateState(s balancer.State) { cc.r.childUpdated(cc.c, s) }

// UpdateClientConnState takes a new config (or a failed one) from the
// resolver.
func (r *router) UpdateClientConnState(ccs balancer.ClientConnState) error {
	cs, _ := ccs.ResolverState.Attributes.Value(channelStateKey{}).(*channelState)
	if cs == nil {
		return fmt.Errorf("xdslens: %s policy used without the xdslens resolver", routerName)
	}
	if cs.err != nil {
		r.mu.Lock()
		old := r.children
		r.state, r.table, r.entries, r.children = cs, nil, nil, map[string]*child{}
		r.mu.Unlock()
		for _, c := range old {
			c.bal.Close()
		}
		r.mu.Lock()
		r.updatePickerLocked()
		r.mu.Unlock()
		return nil
	}
	cfg := cs.config
	table, err := routing.Compile(cfg.VirtualHost, cs.builder.opts.routingOptions...)
	if err != nil {
		return fmt.Errorf("xdslens: %w", err)
	}
	// Work out the entries and make the children that are new. Only the
	// methods gRPC calls one at a time write r.children, so it is read
	// here without the lock.
	old := r.children
	children := make(map[string]*child, len(table.Clusters))
	entries := make([]*entry, len(table.Clusters))
	updates := map[*child][]*xdsconfig.ClusterConfig{}
	for i, name := range table.Clusters {
		leaves, err := leavesOf(cfg, name)
		if err != nil {
			entries[i] = &entry{name: name, err: err}
			continue
		}
		c := old[name]
		if c == nil {
			c = &child{name: name}
			c.bal = newClusterBalancer(&childConn{ClientConn: r.cc, r: r, c: c}, r.bopts)
		}
		children[name] = c
		entries[i] = &entry{name: name, child: c}
		updates[c] = leaves
	}
	r.mu.Lock()
	r.state, r.table, r.entries, r.children = cs, table, entries, children
	r.mu.Unlock()

	for c, leaves := range updates {
		c.bal.UpdateClientConnState(balancer.ClientConnState{
			ResolverState:  resolver.State{Attributes: ccs.ResolverState.Attributes},
			BalancerConfig: clusterConfig(c.name, leaves, cs),
		})
	}
	for name, c := range old {
		if children[name] != c {
			c.bal.Close()
		}
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

// childUpdated takes a child's new state and picker.
func (r *router) childUpdated(c *child, s balancer.State) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed || r.children[c.name] != c {
		return // a child being closed, or replaced
	}
	c.state = s
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
	p := &picker{state: r.state}
	if r.state.err != nil {
		r.cc.UpdateState(balancer.State{ConnectivityState: connectivity.TransientFailure, Picker: p})
		return
	}
	p.table = r.table
	p.clusters = make([]pickCluster, len(r.entries))
	agg := connectivity.TransientFailure
	for i, e := range r.entries {
		pc := pickCluster{name: e.name, err: e.err}
		if e.child != nil {
			pc.picker = e.child.state.Picker
			switch s := e.child.state.ConnectivityState; {
			case s == connectivity.Ready:
				agg = connectivity.Ready
			case (s == connectivity.Connecting || s == connectivity.Idle || pc.picker == nil) && agg != connectivity.Ready:
				agg = connectivity.Connecting
			}
		}
		p.clusters[i] = pc
	}
	r.cc.UpdateState(balancer.State{ConnectivityState: agg, Picker: p})
}

// ResolverError keeps the current config: the resolver reports the
// failures that change it through UpdateClientConnState.
func (r *router) ResolverError(err error) {}

// UpdateSubConnState is not used: children create SubConns with state
// listeners.
func (r *router) UpdateSubConnState(balancer.SubConn, balancer.SubConnState) {}

// ExitIdle asks every child to connect.
func (r *router) ExitIdle() {
	r.mu.Lock()
	var cs []*child
	for _, c := range r.children {
		cs = append(cs, c)
	}
	r.mu.Unlock()
	for _, c := range cs {
		c.bal.ExitIdle()
	}
}

// Close closes every child.
func (r *router) Close() {
	r.mu.Lock()
	r.closed = true
	old := r.children
	r.children = nil
	r.mu.Unlock()
	for _, c := range old {
		c.bal.Close()
	}
}
