package xdsgrpc

import (
	"strconv"

	"google.golang.org/grpc/balancer"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/xdslens/xdslens/xdsclient/xdsresource"
	"github.com/xdslens/xdslens/xdsgrpc/internal/routing"
)

// picker routes a pick to the picker of the cluster its route chooses. It
// is immutable: the router builds a new one on every change.
type picker struct {
	state    *channelState
	table    *routing.Table
	clusters []pickCluster // by index in table.Clusters
}

type pickCluster struct {
	name   string
	picker balancer.Picker // nil until the child reports one
	err    error           // the cluster cannot be used
}

// Pick routes the RPC and picks from the chosen cluster. Its errors are
// UNAVAILABLE statuses (gRFC A54: never a code reserved for applications),
// which end the RPC even when it waits for ready, except that of a cluster
// whose endpoints all fail, which lets a wait-for-ready RPC wait.
func (p *picker) Pick(info balancer.PickInfo) (balancer.PickResult, error) {
	if p.state.err != nil {
		return p.fail(info, "", PickConfigError, p.state.err)
	}
	d := p.table.Route(info.Ctx, info.FullMethodName)
	switch d.Outcome {
	case routing.NoRoute:
		return p.fail(info, "", PickNoRoute, p.noRoute(info.FullMethodName))
	case routing.Unsupported:
		return p.fail(info, "", PickUnsupportedAction, p.unsupported(d.Route))
	}
	c := &p.clusters[d.Cluster]
	if ci := callInfoFrom(info.Ctx); ci != nil {
		ci.Cluster = c.name
	}
	if c.err != nil {
		return p.fail(info, c.name, PickClusterError, c.err)
	}
	if c.picker == nil {
		return balancer.PickResult{}, balancer.ErrNoSubConnAvailable
	}
	return c.picker.Pick(info)
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
	if r.Action.Kind == xdsresource.ActionClusterSpecifierPlugin {
		what = "cluster specifier plugin " + quote(r.Action.ClusterSpecifierPlugin) + " (route lookup is not supported by xdslens)"
	}
	return status.Errorf(codes.Unavailable, "route %d of virtual host %q in %s matches the RPC, but its action (%s) cannot forward it (xDS node ID: %s)",
		route, cfg.VirtualHost.Name, p.routeConfigName(), what, cfg.NodeID)
}

func quote(s string) string { return strconv.Quote(s) }
