package xdsserver

import (
	"context"
	"fmt"
	"slices"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/xdslens/xdslens/httpfilter"
	"github.com/xdslens/xdslens/internal/routematch"
	"github.com/xdslens/xdslens/xdsclient/xdsconfig"
	"github.com/xdslens/xdslens/xdsclient/xdsresource/routeconfig"
)

// routeTable is the compiled route configuration of one filter chain: its
// virtual hosts, each with its routes' matchers (package routematch, the
// client's matching, reading the RPC's incoming metadata) and, per route,
// the interceptors of the chain's HTTP filters with the route's
// overrides. It is immutable.
type routeTable struct {
	// err, when set, fails every RPC of the chain: the route
	// configuration could not be had.
	err    error
	vhosts []routeconfig.VirtualHost
	hosts  []hostRoutes // per virtual host
	// every is the index of the only virtual host, when it takes every
	// authority ("*"), so that the authority need not be read; else -1.
	every int
	// name names the route configuration in errors: `RDS resource "r"` or
	// `the inline route configuration of filter chain "c"`.
	name string
}

// hostRoutes are the compiled routes of one virtual host.
type hostRoutes struct {
	match *routematch.Table
	// err fails every RPC of the virtual host: its matchers could not be
	// compiled.
	err    error
	routes []serverRoute
}

// serverRoute is what one route does with the RPCs it matches.
type serverRoute struct {
	// err fails them: the route's action is not non_forwarding_action, or
	// a filter could not be built for it.
	err          error
	interceptors []httpfilter.ServerInterceptor
}

// errorTable returns a table that fails every RPC with err.
func errorTable(err error) *routeTable {
	return &routeTable{err: status.Error(codes.Unavailable, err.Error())}
}

// compileTable compiles rc for chain c, whose HTTP filters the routes run;
// env is what the filters are given.
func compileTable(c *chain, rc *routeconfig.Config, name string, env httpfilter.ServerEnv) *routeTable {
	t := &routeTable{vhosts: rc.VirtualHosts, every: -1, name: name}
	if len(rc.VirtualHosts) == 1 && slices.Contains(rc.VirtualHosts[0].Domains, "*") {
		t.every = 0
	}
	t.hosts = make([]hostRoutes, len(rc.VirtualHosts))
	for i := range rc.VirtualHosts {
		vh, h := &rc.VirtualHosts[i], &t.hosts[i]
		var err error
		if h.match, err = routematch.Compile(vh.Routes, routematch.Incoming); err != nil {
			h.err = status.Errorf(codes.Unavailable, "virtual host %q of %s: %v", vh.Name, name, err)
			continue
		}
		h.routes = make([]serverRoute, len(vh.Routes))
		for j := range vh.Routes {
			h.routes[j] = compileRoute(c, vh, &vh.Routes[j], env, fmt.Sprintf("route %d of virtual host %q of %s", j, vh.Name, name))
		}
	}
	return t
}

func compileRoute(c *chain, vh *routeconfig.VirtualHost, r *routeconfig.Route, env httpfilter.ServerEnv, at string) serverRoute {
	var sr serverRoute
	switch r.Action.Kind {
	case routeconfig.ActionClusterHeader:
		return sr // never matched
	case routeconfig.ActionNonForwarding:
	default:
		sr.err = status.Errorf(codes.Unavailable, "%s has a %s action; an xDS-enabled server serves only routes with non_forwarding_action", at, r.Action.Kind)
		return sr
	}
	var err error
	if sr.interceptors, err = c.interceptors(vh, r, env); err != nil {
		sr.err = status.Errorf(codes.Unavailable, "%s: %v", at, err)
	}
	return sr
}

// route finds the route of an RPC: its interceptors, or the error it
// fails with, an UNAVAILABLE status.
func (t *routeTable) route(ctx context.Context, method string) (*serverRoute, error) {
	if t.err != nil {
		return nil, t.err
	}
	vh := t.every
	if vh < 0 {
		authority := ""
		if vs := metadata.ValueFromIncomingContext(ctx, ":authority"); len(vs) > 0 {
			authority = vs[0]
		}
		if vh = xdsconfig.FindVirtualHost(t.vhosts, authority); vh < 0 {
			return nil, status.Errorf(codes.Unavailable, "no virtual host of %s matches the authority %q", t.name, authority)
		}
	}
	h := &t.hosts[vh]
	if h.err != nil {
		return nil, h.err
	}
	i := h.match.Match(ctx, method)
	if i < 0 {
		return nil, status.Errorf(codes.Unavailable, "no route of virtual host %q of %s matches the RPC %q", t.vhosts[vh].Name, t.name, method)
	}
	r := &h.routes[i]
	if r.err != nil {
		return nil, r.err
	}
	return r, nil
}
