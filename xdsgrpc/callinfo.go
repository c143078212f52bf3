package xdsgrpc

import (
	"context"

	"github.com/xdslens/xdslens/xdsclient/lrs"
	"github.com/xdslens/xdslens/xdsgrpc/internal/callctx"
)

// CallInfo is what the data plane decided for one RPC: the cluster its
// route chose, and the leaf cluster and locality of the endpoint it was
// sent to. The data plane fills it in during the RPC; read it once the RPC
// has returned. An RPC is routed once, so Cluster does not change however
// many times the RPC is picked; Leaf and Locality are those of its last
// pick.
//
//	var info xdsgrpc.CallInfo
//	err := conn.Invoke(xdsgrpc.WithCallInfo(ctx, &info), method, req, resp)
//	log.Printf("%s went to cluster %s", method, info.Cluster)
type CallInfo struct {
	// Cluster is the cluster the route chose (for an aggregate cluster,
	// the aggregate's name), "" when the RPC failed before one was chosen.
	Cluster string
	call    callctx.Call
}

// Leaf returns the EDS or LOGICAL_DNS cluster the RPC was given to ("" when
// none was).
func (c *CallInfo) Leaf() string { return c.call.Leaf }

// Locality returns the region, zone and sub-zone of the endpoint the RPC
// was sent to (all "" when it was not sent).
func (c *CallInfo) Locality() (region, zone, subZone string) {
	l := c.call.Locality
	return l.Region, l.Zone, l.SubZone
}

// Attempts returns the number of attempts the RPC made: 1, or more when
// its route's retry_policy retried it (0 when it was not sent).
func (c *CallInfo) Attempts() int { return c.call.Attempts }

// Fault returns the fault the fault injection filter put on the RPC:
// "delay", "abort", "delay+abort", or "" for none.
func (c *CallInfo) Fault() string { return c.call.Fault }

// WithCallInfo returns a context for one RPC through an xdslens channel
// that has the data plane record its decisions in info. Give each RPC a
// CallInfo of its own.
func WithCallInfo(ctx context.Context, info *CallInfo) context.Context {
	info.call = callctx.Call{ClusterOut: &info.Cluster}
	return callctx.With(ctx, &info.call)
}

// Routing is the routing decision of one RPC of an xdslens channel, and
// where its last pick sent it: what a per-call observer (a trace, a
// per-call metric) reads with RoutingOf.
type Routing struct {
	// Target is the channel's target, as hooks name it.
	Target string
	// Listener is the name of the Listener resource and ListenerVersion
	// the version of the response that carried it.
	Listener, ListenerVersion string
	// RouteConfig is the name of the RouteConfiguration resource ("" when
	// the route configuration is inline in the Listener), and
	// RouteConfigVersion the version of the response that carried it.
	RouteConfig, RouteConfigVersion string
	// VirtualHost is the name of the virtual host.
	VirtualHost string
	// RouteIndex is the position of the route the RPC matched among the
	// virtual host's routes as received (-1 when none matched), and
	// RouteName its name ("" when it has none).
	RouteIndex int
	RouteName  string
	// Cluster is the cluster the route chose (for an aggregate cluster,
	// the aggregate), "" when none was.
	Cluster string
	// Leaf is the EDS or LOGICAL_DNS cluster of the last pick, "" when it
	// did not reach one, and Policy the name of its endpoint policy, as
	// gRPC registers it.
	Leaf, Policy string
	// Locality and Address are the locality and the address of the
	// endpoint the last pick sent the RPC to (zero when it sent none).
	Locality lrs.Locality
	Address  string
}

// RoutingOf returns the routing decision of the RPC whose context (or the
// context of one of its attempts, as a stats.Handler sees it) is ctx, on
// a channel with DialOptions' interceptors or a CallInfo; false when ctx
// carries none, or the RPC was not routed yet. Read it on the RPC's
// goroutine, or once an attempt has ended: the picks of the RPC write
// what it reads. It allocates nothing.
func RoutingOf(ctx context.Context) (Routing, bool) {
	c := callctx.From(ctx)
	if c == nil || !c.Decided {
		return Routing{}, false
	}
	r := Routing{Target: c.Target, RouteIndex: -1, Cluster: c.Cluster, Leaf: c.Leaf, Policy: c.Policy, Locality: c.Locality, Address: c.Address}
	if cfg := c.Config; cfg != nil {
		r.Listener, r.ListenerVersion = cfg.ListenerName, cfg.ListenerVersion
		r.RouteConfig, r.RouteConfigVersion = cfg.RouteConfigName, cfg.RouteConfigVersion
		if vh := cfg.VirtualHost; vh != nil {
			r.VirtualHost = vh.Name
			if c.Route >= 0 && c.Route < len(vh.Routes) {
				rt := &vh.Routes[c.Route]
				r.RouteIndex, r.RouteName = rt.Index, rt.Name
			}
		}
	}
	return r, true
}
