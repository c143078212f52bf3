package xdsgrpc

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/xdslens/xdslens/xdsclient/xdsresource/routeconfig"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"

	"github.com/xdslens/xdslens/xdsclient/xdsconfig"
	"github.com/xdslens/xdslens/xdsclient/xdsresource"
	"github.com/xdslens/xdslens/xdsgrpc/internal/routing"
)

// Explanation says what an xdslens channel does with one RPC, decided by
// the code that routes the channel's RPCs, without sending it: the virtual
// host, the route (and why each route before it did not match), the
// cluster or the weighted choice among clusters, the request hash, and the
// plan (deadline, retries, HTTP filters).
type Explanation struct {
	// Method is the RPC's full method name, "/pkg.Service/Method".
	Method string
	// Listener and RouteConfig name the resources of the config
	// (RouteConfig is "" when the route configuration is inline);
	// VirtualHost is the virtual host chosen for the channel's authority.
	Listener, RouteConfig, VirtualHost string
	// Outcome is PickSent when the RPC would be given to a cluster's
	// policy (which may still drop it, find max_requests reached, or find
	// no endpoint: those depend on the moment), PickNoRoute,
	// PickUnsupportedAction, PickClusterError (every cluster the route
	// can choose fails) or PickConfigError (the channel's whole config
	// failed). Err is the error such an RPC fails with, nil with PickSent.
	Outcome PickOutcome
	Err     error
	// Trials are the routes evaluated, in order: every route up to and
	// including the first that takes every RPC such as this one, or all
	// of them.
	Trials []RouteTrial
	// Route is the first of Trials that can take the RPC (its Chance is
	// above 0), nil when none can.
	Route *RouteTrial
	// Choices are the clusters Route draws from, in the order of its
	// draw: one for a route to one cluster, none for a route that cannot
	// forward.
	Choices []ClusterChoice
	// Hash is the request hash of Route's hash policies (gRFC A42), which
	// a ring_hash cluster picks its endpoint by, when HasHash is set.
	// HashPolicies describe the policies, in order. When
	// HashDependsOnChannel is set, a policy hashes the channel's random ID
	// (io.grpc.channel_id), which only Builder.Explain knows: Hash is then
	// unset. With hash policies and no hash, ring_hash picks at random.
	Hash                 uint64
	HasHash              bool
	HashDependsOnChannel bool
	HashPolicies         []string
	// Timeout bounds the RPC's deadline (the route's max_stream_duration,
	// or the listener's; gRFC A31), 0 for none; Retry is the retry policy
	// the RPC is attempted under (gRFC A44), nil for none. Filters are
	// applied per chosen cluster (ClusterChoice.Filters). A channel
	// dialled without DialOptions fails the RPCs that have any of them.
	Timeout time.Duration
	Retry   *RetryPlan
	// Reason says it all in words: which route matched and why those
	// before it did not, the clusters and their odds, the hash.
	Reason string
}

// RouteTrial says how one route fared against the RPC.
type RouteTrial struct {
	// Index is the route's position in the virtual host's routes as
	// received, routes gRPC ignores (such as those matching query
	// parameters) counted, as in the span attribute xds.route.index and
	// the config history; Name is its name, "" when it has none.
	Index int
	Name  string
	// pos is its position among the routes gRPC uses.
	pos int
	// Match and Action describe the route's matchers and what it does.
	Match, Action string
	// Matched says whether its path and header matchers all match.
	Matched bool
	// Chance is the share of RPCs such as this one that the route takes,
	// from 0 to 1: 1 when it matches without a runtime_fraction, the
	// fraction when it has one, 0 when it does not match.
	Chance float64
	// Why says which matcher decided.
	Why string
}

// Label returns the route's name, or "#INDEX" when it has none.
func (t *RouteTrial) Label() string {
	if t.Name != "" {
		return t.Name
	}
	return fmt.Sprintf("#%d", t.Index)
}

// ClusterChoice is one cluster a route can send the RPC to.
type ClusterChoice struct {
	// Name is the route-level cluster.
	Name string
	// Weight out of Total is the share of the route's RPCs drawn for it
	// (1 of 1 for a route to one cluster).
	Weight, Total uint32
	// Type is "eds", "logical_dns" or "aggregate"; Policy the leaf's
	// endpoint policy as gRPC registers it ("" for an aggregate); Leaves,
	// for an aggregate, its usable leaf clusters in priority order.
	Type, Policy string
	Leaves       []string
	// Filters are the names of the HTTP filters the RPC would run through
	// with this cluster (gRFC A39), in order.
	Filters []string
	// Err is what the RPC fails with when drawn for this cluster: the
	// cluster cannot be used, or its filters could not be built.
	Err error
}

// RetryPlan is the retry policy an RPC is attempted under (gRFC A44).
type RetryPlan struct {
	// On are the status codes retried; MaxAttempts counts the first
	// attempt (at most 5); the backoff before retry n is random up to
	// BaseInterval * 2^(n-1), at most MaxInterval.
	On                        []codes.Code
	MaxAttempts               int
	BaseInterval, MaxInterval time.Duration
}

// Explain explains what a channel using cfg does with an RPC of method
// (the full method name, "/pkg.Service/Method") that sends md as its
// metadata, with the routing code of the channel's picker: its decision
// is the one an RPC of the channel gets, but for the draws a real RPC
// makes (a weighted cluster, a runtime_fraction), whose odds it gives
// instead. Routes are compiled for the explanation; Builder.Explain uses
// those of a live channel and its channel ID.
func Explain(cfg *xdsconfig.Config, method string, md metadata.MD) (*Explanation, error) {
	if cfg == nil || cfg.VirtualHost == nil {
		return nil, errors.New("xdslens: explain: no config")
	}
	table, err := routing.Compile(cfg.VirtualHost)
	if err != nil {
		return nil, fmt.Errorf("xdslens: explain: %w", err)
	}
	return explain(cfg, table, buildPlans(cfg), method, md, nil), nil
}

// Explain explains what the channel conn, dialled with the Builder, does
// with an RPC of method that sends md as its metadata, with the routes,
// plans and channel ID its picker uses now. It fails when conn is not one
// of the Builder's live channels, or has no config yet.
func (b *Builder) Explain(conn *grpc.ClientConn, method string, md metadata.MD) (*Explanation, error) {
	r := b.channelOf(conn)
	if r == nil {
		return nil, fmt.Errorf("xdslens: explain: %s is not a live channel of this Builder", conn.CanonicalTarget())
	}
	rt := r.router.Load()
	var p *picker
	if rt != nil {
		p = rt.current.Load()
	}
	if p == nil {
		return nil, fmt.Errorf("xdslens: explain: channel %s has no config yet", r.target)
	}
	if p.state.err != nil {
		e := &Explanation{Method: method, Listener: r.listener, Outcome: PickConfigError, Err: p.state.err}
		e.Reason = "the channel's config failed: " + p.state.err.Error()
		return e, nil
	}
	id := p.state.resolver.channelID
	return explain(p.state.config, p.table, p.plans, method, md, &id), nil
}

// explain explains an RPC of method with metadata md routed by table and
// plans, compiled from cfg; channelID is nil when unknown.
func explain(cfg *xdsconfig.Config, table *routing.Table, plans map[planKey]*plan, method string, md metadata.MD, channelID *uint64) *Explanation {
	e := &Explanation{Method: method, Listener: cfg.ListenerName, RouteConfig: cfg.RouteConfigName, VirtualHost: cfg.VirtualHost.Name}
	ctx := metadata.NewOutgoingContext(context.Background(), md)
	routes := cfg.VirtualHost.Routes
	for _, tr := range table.Explain(ctx, method) {
		rt := &routes[tr.Route]
		e.Trials = append(e.Trials, RouteTrial{
			Index: rt.Index, pos: tr.Route, Name: rt.Name, Match: routing.DescribeMatch(rt), Action: routing.DescribeAction(rt),
			Matched: tr.Path && tr.Header < 0 && !tr.Ignored, Chance: float64(tr.Chance) / routing.Certain, Why: why(rt, tr),
		})
	}
	for i := range e.Trials {
		if e.Trials[i].Chance > 0 {
			e.Route = &e.Trials[i]
			break
		}
	}
	if e.Route == nil {
		e.Outcome = PickNoRoute
		e.Err = (&picker{state: &channelState{config: cfg}}).noRoute(method)
		e.Reason = reason(e)
		return e
	}
	i := e.Route.pos
	rt := &routes[i]
	switch rt.Action.Kind {
	case routeconfig.ActionCluster, routeconfig.ActionWeightedClusters:
	default:
		e.Outcome = PickUnsupportedAction
		e.Err = (&picker{state: &channelState{config: cfg}}).unsupported(i)
		e.Reason = reason(e)
		return e
	}
	e.Outcome = PickClusterError
	for _, c := range table.Choices(i) {
		ch := clusterChoice(cfg, table.Clusters[c.Cluster], plans[planKey{i, table.Clusters[c.Cluster]}])
		ch.Weight, ch.Total = c.Weight, c.Total
		if ch.Err == nil {
			e.Outcome = PickSent
		} else if e.Err == nil {
			e.Err = ch.Err
		}
		e.Choices = append(e.Choices, ch)
	}
	if e.Outcome == PickSent {
		e.Err = nil
	}
	if pl := plans[planKey{i, e.Choices[0].Name}]; pl != nil {
		e.Timeout = pl.timeout
		e.Retry = retryPlan(pl.retry)
	}
	for _, h := range rt.HashPolicies {
		e.HashPolicies = append(e.HashPolicies, routing.DescribeHashPolicy(h))
	}
	if table.HasHashPolicies(i) {
		e.hash(ctx, table, i, channelID)
	}
	e.Reason = reason(e)
	return e
}

// hash computes the request hash of route i, as the picker does.
func (e *Explanation) hash(ctx context.Context, table *routing.Table, i int, channelID *uint64) {
	if channelID != nil {
		e.Hash, e.HasHash = table.Hash(ctx, i, *channelID)
		return
	}
	// Hashed with two channel IDs, the hash differs exactly when a policy
	// that is evaluated hashes the channel ID.
	h0, ok := table.Hash(ctx, i, 0)
	h1, _ := table.Hash(ctx, i, ^uint64(0))
	if h0 != h1 {
		e.HashDependsOnChannel = true
		return
	}
	e.Hash, e.HasHash = h0, ok
}

// clusterChoice describes the route-level cluster name of cfg, with pl the
// plan of the route and that cluster.
func clusterChoice(cfg *xdsconfig.Config, name string, pl *plan) ClusterChoice {
	ch := ClusterChoice{Name: name}
	leaves, err := leavesOf(cfg, name)
	if err != nil {
		ch.Err = err
		return ch
	}
	slot := cfg.Clusters[name]
	ch.Type = clusterTypeNames[slot.Cluster.Kind]
	if slot.Cluster.Kind == xdsresource.ClusterAggregate {
		for _, l := range leaves {
			ch.Leaves = append(ch.Leaves, l.Name)
		}
	} else {
		var perr error
		if ch.Policy, perr = LBPolicyName(slot.Cluster); perr != nil {
			ch.Err = perr
		}
	}
	if pl != nil {
		for _, f := range pl.filters {
			ch.Filters = append(ch.Filters, f.name)
		}
		if pl.err != nil && ch.Err == nil {
			ch.Err = pl.err
		}
	}
	return ch
}

// clusterTypeNames name the cluster types as explanations and config
// lines do.
var clusterTypeNames = map[xdsresource.ClusterKind]string{
	xdsresource.ClusterEDS:        "eds",
	xdsresource.ClusterLogicalDNS: "logical_dns",
	xdsresource.ClusterAggregate:  "aggregate",
}

// retryPlan describes rp, nil for none.
func retryPlan(rp *retryPolicy) *RetryPlan {
	if rp == nil {
		return nil
	}
	p := &RetryPlan{MaxAttempts: rp.maxAttempts, BaseInterval: rp.base, MaxInterval: rp.max}
	for c := range rp.codes {
		p.On = append(p.On, c)
	}
	slices.Sort(p.On)
	return p
}
