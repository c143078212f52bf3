package xdsgrpc

import (
	"context"
	"strconv"

	"github.com/xdslens/xdslens/xdsclient/xdsresource/routeconfig"

	"google.golang.org/grpc/balancer"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/xdslens/xdslens/xdsclient/lrs"
	"github.com/xdslens/xdslens/xdsgrpc/internal/callctx"
	"github.com/xdslens/xdslens/xdsgrpc/internal/routing"
)

// picker routes the picks of a channel. It is immutable: the router builds
// a new one on every change.
//
// Each RPC is routed once, by the channel's interceptors when it starts, or
// else by the first picker that sees it: its route, its cluster (a weighted
// choice drawn once) and its request hash are kept in the RPC's
// callctx.Call, and every later pick of the RPC, from this picker or a
// newer one, picks from that cluster's policy. An RPC without a Call (a
// channel dialled without the interceptors, and no CallInfo) that must
// wait for a connection gets one then, kept by its context until it ends;
// one that does not wait allocates nothing.
type picker struct {
	r     *router
	state *channelState
	table *routing.Table
	slots []slot // by index in table.Clusters
	plans map[planKey]*plan
}

// decision is the routing of one RPC by one picker.
type decision struct {
	route   int   // -1 when no route matched
	slot    *slot // nil when the RPC fails before a cluster
	plan    *plan // nil when the route's RPCs need nothing of the interceptors
	err     error // what the RPC fails with, if it does
	hash    uint64
	hasHash bool
}

// Pick routes the RPC, unless it was routed already, and picks from the
// chosen cluster. Its errors are UNAVAILABLE statuses (gRFC A54: never a
// code reserved for applications), which end the RPC even when it waits for
// ready, except that of a cluster whose endpoints all fail, which lets a
// wait-for-ready RPC wait.
func (p *picker) Pick(info balancer.PickInfo) (balancer.PickResult, error) {
	c := callctx.From(info.Ctx)
	if c == nil {
		if v, ok := p.r.waiting.Load(info.Ctx); ok {
			c = v.(*callctx.Call)
		}
	}
	if c != nil && c.Decided && c.Channel == p.r && (c.Owned && (c.Held || c.Err != nil) || !c.Owned && c.PickCtx == info.Ctx) {
		return p.pickCall(info, c)
	}
	if p.state.err != nil {
		return p.fail(info, "", PickConfigError, p.state.err)
	}
	d := p.route(info.Ctx, info.FullMethodName)
	if c == nil && d.err == nil && !d.hasHash && d.plan == nil {
		// The common case without interceptors and without a request
		// hash: nothing is allocated unless the RPC must wait.
		res, err := p.pickEntry(info, d.slot.entry)
		if mayWait(err) {
			c = new(callctx.Call)
			p.record(info.Ctx, d, c)
			p.r.keepWaiting(info.Ctx, c)
		}
		return res, err
	}
	if c == nil {
		c = new(callctx.Call)
	}
	if c.Owned && c.Conn != nil {
		p.state.resolver.bind(c.Conn)
	}
	p.record(info.Ctx, d, c)
	return p.pickCall(info, c)
}

// mayWait reports whether a pick that failed with err may be made again
// for the same RPC: one that waits for a connection, and a wait-for-ready
// one whose cluster's endpoints all fail (an error that is not a status).
func mayWait(err error) bool {
	if err == nil {
		return false
	}
	_, isStatus := status.FromError(err)
	return err == balancer.ErrNoSubConnAvailable || !isStatus
}

// route decides the route, the cluster and the request hash of an RPC.
func (p *picker) route(ctx context.Context, method string) decision {
	d := decision{route: -1}
	rd := p.table.Route(ctx, method)
	d.route = rd.Route
	switch rd.Outcome {
	case routing.NoRoute:
		d.err = p.noRoute(method)
		return d
	case routing.Unsupported:
		d.err = p.unsupported(rd.Route)
		return d
	}
	d.slot = &p.slots[rd.Cluster]
	if pl := p.plans[planKey{rd.Route, d.slot.name}]; pl.needsInterceptors() {
		d.plan = pl
	}
	if d.slot.err != nil {
		d.err = d.slot.err
		return d
	}
	if p.table.HasHashPolicies(rd.Route) {
		d.hash, d.hasHash = p.table.Hash(ctx, rd.Route, p.state.resolver.channelID)
	}
	return d
}

// record keeps d, decided for the pick of ctx, in c, the RPC's Call. A Call
// that the interceptors own gives back the cluster of an earlier decision
// and takes a reference on its new one, which they give back when the RPC
// ends; another is held only while its RPC waits (holdWhileWaiting).
func (p *picker) record(ctx context.Context, d decision, c *callctx.Call) {
	if c.Owned {
		releaseHeld(c)
	}
	c.Held, c.PickCtx = false, ctx
	c.Decided, c.Channel, c.Route, c.Err, c.Hash, c.HasHash = true, p.r, d.route, d.err, d.hash, d.hasHash
	c.Config, c.Target = p.state.config, p.state.target
	c.Plan, c.PlanApplied = nil, false
	if d.plan != nil {
		c.Plan = d.plan
	}
	c.Cluster, c.Entry = "", nil
	if d.slot != nil {
		c.Cluster = d.slot.name
		if c.ClusterOut != nil {
			*c.ClusterOut = d.slot.name
		}
	}
	if d.err == nil {
		c.Entry = d.slot.entry
		if c.Owned {
			c.Held = d.slot.entry.acquire()
		}
	}
}

// releaseHeld gives back the cluster c holds, if any.
func releaseHeld(c *callctx.Call) {
	if c.Held {
		c.Held = false
		c.Entry.(*clusterEntry).release()
	}
}

// pickCall picks for an RPC whose route c holds.
func (p *picker) pickCall(info balancer.PickInfo, c *callctx.Call) (balancer.PickResult, error) {
	c.Leaf, c.Policy, c.Locality, c.Address = "", "", lrs.Locality{}, ""
	if c.Plan != nil && !c.PlanApplied {
		return p.fail(info, c.Cluster, PickUnsupportedAction, p.needsDialOptions(c))
	}
	if c.Err != nil {
		o := PickClusterError
		switch {
		case c.Cluster != "":
		case c.Route < 0:
			o = PickNoRoute
		default:
			o = PickUnsupportedAction
		}
		return p.fail(info, c.Cluster, o, c.Err)
	}
	if c.HasHash && callctx.From(info.Ctx) != c {
		// The cluster's policy reads the request hash from the context.
		info.Ctx = callctx.With(info.Ctx, c)
	}
	res, err := p.pickEntry(info, c.Entry.(*clusterEntry))
	if mayWait(err) && !c.Held {
		p.r.holdWhileWaiting(info.Ctx, c)
	}
	return res, err
}

// pickEntry picks from the policy of a cluster.
func (p *picker) pickEntry(info balancer.PickInfo, e *clusterEntry) (balancer.PickResult, error) {
	st := e.state.Load()
	if st == nil || st.Picker == nil {
		return balancer.PickResult{}, balancer.ErrNoSubConnAvailable
	}
	return st.Picker.Pick(info)
}

// fail reports a pick that failed before reaching a cluster's policy.
func (p *picker) fail(info balancer.PickInfo, cluster string, o PickOutcome, err error) (balancer.PickResult, error) {
	if h := p.state.hooks(); h != nil && h.Picked != nil {
		h.Picked(PickInfo{Target: p.state.target, Cluster: cluster, Outcome: o, Err: err})
	}
	return balancer.PickResult{}, err
}

// routeConfigName describes where the virtual host comes from, for errors.
func (p *picker) routeConfigName() string {
	cfg := p.state.config
	if cfg.RouteConfigName == "" {
		return "the route configuration inline in LDS resource " + quote(cfg.ListenerName)
	}
	return "RDS resource " + quote(cfg.RouteConfigName)
}

func (p *picker) noRoute(method string) error {
	cfg := p.state.config
	return status.Errorf(codes.Unavailable, "no route of virtual host %q in %s matches the RPC %q (xDS node ID: %s)",
		cfg.VirtualHost.Name, p.routeConfigName(), method, cfg.NodeID)
}

func (p *picker) unsupported(route int) error {
	cfg := p.state.config
	r := &cfg.VirtualHost.Routes[route]
	what := r.Action.Kind.String()
	if r.Action.Kind == routeconfig.ActionClusterSpecifierPlugin {
		what = "cluster specifier plugin " + quote(r.Action.ClusterSpecifierPlugin) + " (route lookup is not supported by xdslens)"
	}
	return status.Errorf(codes.Unavailable, "route %d of virtual host %q in %s matches the RPC, but its action (%s) cannot forward it (xDS node ID: %s)",
		route, cfg.VirtualHost.Name, p.routeConfigName(), what, cfg.NodeID)
}

// needsDialOptions is the error of an RPC whose route asks for what only
// the channel's interceptors do, on a channel dialled without them: it is
// not sent rather than sent without its deadline, retries or filters.
func (p *picker) needsDialOptions(c *callctx.Call) error {
	cfg := p.state.config
	return status.Errorf(codes.Unavailable, "route %d of virtual host %q in %s has a max_stream_duration, a retry_policy or HTTP filters, which this channel applies only when dialled with xdsgrpc.DialOptions (xDS node ID: %s)",
		c.Route, cfg.VirtualHost.Name, p.routeConfigName(), cfg.NodeID)
}

func quote(s string) string { return strconv.Quote(s) }
