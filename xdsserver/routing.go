package xdsserver

import (
	"context"
	"fmt"
	"math/rand/v2"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/xdslens/xdslens/xdsclient/xdsresource/routeconfig"

	"github.com/xdslens/xdslens/xdsclient/xdsresource/matcher"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/xdslens/xdslens/httpfilter"
	"github.com/xdslens/xdslens/xdsclient/xdsconfig"
)

// routeTable is the compiled route configuration of one filter chain: its
// virtual hosts and, per route, the interceptors of the chain's HTTP
// filters with the route's overrides. It is immutable.
type routeTable struct {
	// err, when set, fails every RPC of the chain: the route
	// configuration could not be had.
	err    error
	vhosts []routeconfig.VirtualHost
	hosts  [][]serverRoute // per virtual host
	// every is the index of the only virtual host, when it takes every
	// authority ("*"), so that the authority need not be read; else -1.
	every int
	// name names the route configuration in errors: `RDS resource "r"` or
	// `the inline route configuration of filter chain "c"`.
	name string
}

// serverRoute is one compiled route.
type serverRoute struct {
	path     pathMatch
	headers  []headerMatch
	fraction int64 // per million, -1 when unset
	// err fails the RPCs the route matches: its action is not
	// non_forwarding_action, or a filter could not be built for it.
	err          error
	interceptors []httpfilter.ServerInterceptor
	ignored      bool // a cluster_header route, which gRPC ignores
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
	for i := range rc.VirtualHosts {
		vh := &rc.VirtualHosts[i]
		routes := make([]serverRoute, len(vh.Routes))
		for j := range vh.Routes {
			routes[j] = compileRoute(c, vh, &vh.Routes[j], env, fmt.Sprintf("route %d of virtual host %q of %s", j, vh.Name, name))
		}
		t.hosts = append(t.hosts, routes)
	}
	return t
}

func compileRoute(c *chain, vh *routeconfig.VirtualHost, r *routeconfig.Route, env httpfilter.ServerEnv, at string) serverRoute {
	sr := serverRoute{fraction: -1}
	if r.Action.Kind == routeconfig.ActionClusterHeader {
		sr.ignored = true
		return sr
	}
	var err error
	if sr.path, err = compilePath(r); err != nil {
		sr.err = status.Errorf(codes.Unavailable, "%s: %v", at, err)
	}
	for _, h := range r.Headers {
		hm, herr := compileHeader(h)
		if herr != nil && sr.err == nil {
			sr.err = status.Errorf(codes.Unavailable, "%s: %v", at, herr)
		}
		sr.headers = append(sr.headers, hm)
	}
	if r.FractionPerMillion != nil {
		sr.fraction = int64(*r.FractionPerMillion)
	}
	if sr.err != nil {
		return sr
	}
	if r.Action.Kind != routeconfig.ActionNonForwarding {
		sr.err = status.Errorf(codes.Unavailable, "%s has a %s action; an xDS-enabled server serves only routes with non_forwarding_action", at, r.Action.Kind)
		return sr
	}
	sr.interceptors, err = c.interceptors(vh, r, env)
	if err != nil {
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
	routes := t.hosts[vh]
	for i := range routes {
		r := &routes[i]
		if r.ignored || !r.path.match(method) || !r.headersMatch(ctx) {
			continue
		}
		if r.fraction >= 0 && int64(rand.Uint32N(1_000_000)) >= r.fraction {
			continue
		}
		if r.err != nil {
			return nil, r.err
		}
		return r, nil
	}
	return nil, status.Errorf(codes.Unavailable, "no route of virtual host %q of %s matches the RPC %q", t.vhosts[vh].Name, t.name, method)
}

func (r *serverRoute) headersMatch(ctx context.Context) bool {
	for i := range r.headers {
		if !r.headers[i].match(ctx) {
			return false
		}
	}
	return true
}

// pathMatch is a route's path matcher. As in gRPC C-core, a safe_regex
// is case-sensitive whatever case_sensitive says.
type pathMatch struct {
	kind  routeconfig.PathMatchKind
	value string // lower-cased when fold
	fold  bool
	re    *regexp.Regexp
}

func compilePath(r *routeconfig.Route) (pathMatch, error) {
	p := pathMatch{kind: r.PathMatch, fold: r.CaseInsensitive}
	switch r.PathMatch {
	case routeconfig.PathPrefix:
		p.value = r.Prefix
	case routeconfig.PathExact:
		p.value = r.Path
	case routeconfig.PathRegex:
		re, err := regexp.Compile(`^(?:` + r.SafeRegex + `)$`)
		if err != nil {
			return p, fmt.Errorf("safe_regex %q: %v", r.SafeRegex, err)
		}
		p.re, p.fold = re, false
	}
	if p.fold {
		p.value = strings.ToLower(p.value)
	}
	return p, nil
}

func (p *pathMatch) match(method string) bool {
	switch p.kind {
	case routeconfig.PathPrefix:
		if p.fold {
			return len(method) >= len(p.value) && strings.EqualFold(method[:len(p.value)], p.value)
		}
		return strings.HasPrefix(method, p.value)
	case routeconfig.PathExact:
		if p.fold {
			return strings.EqualFold(method, p.value)
		}
		return method == p.value
	case routeconfig.PathRegex:
		return p.re.MatchString(method)
	}
	return false
}

// headerMatch is a route's header matcher, reading the RPC's incoming
// metadata as gRPC C-core's routing does: a "-bin" header is never
// present, "content-type" is always "application/grpc", and the values of
// a header sent several times are joined with ",".
type headerMatch struct {
	m  matcher.Header
	re *regexp.Regexp
}

func compileHeader(h matcher.Header) (headerMatch, error) {
	hm := headerMatch{m: h}
	if h.IgnoreCase {
		hm.m.Value = strings.ToLower(h.Value)
	}
	if h.Kind == matcher.Regex {
		re, err := regexp.Compile(`^(?:` + h.Value + `)$`)
		if err != nil {
			return hm, fmt.Errorf("header %q safe_regex %q: %v", h.Name, h.Value, err)
		}
		hm.re = re
	}
	return hm, nil
}

func (h *headerMatch) match(ctx context.Context) bool {
	v, present := routeHeader(ctx, h.m.Name)
	var m bool
	switch {
	case h.m.Kind == matcher.Present:
		m = present == h.m.Present
	case !present:
		return false // every other matcher fails on an absent header, inverted or not
	case h.m.Kind == matcher.Range:
		n, err := strconv.ParseInt(v, 10, 64)
		m = err == nil && n >= h.m.RangeStart && n < h.m.RangeEnd
	case h.m.Kind == matcher.Regex:
		m = h.re.MatchString(v)
	default:
		m = h.matchString(v)
	}
	return m != h.m.Invert
}

func (h *headerMatch) matchString(v string) bool {
	want := h.m.Value
	if h.m.IgnoreCase {
		v = strings.ToLower(v)
	}
	switch h.m.Kind {
	case matcher.Exact:
		return v == want
	case matcher.Prefix:
		return strings.HasPrefix(v, want)
	case matcher.Suffix:
		return strings.HasSuffix(v, want)
	case matcher.Contains:
		return strings.Contains(v, want)
	}
	return false
}

// routeHeader returns the value of a request header as route matchers see
// it.
func routeHeader(ctx context.Context, name string) (string, bool) {
	switch {
	case strings.HasSuffix(name, "-bin"):
		return "", false
	case name == "content-type":
		return "application/grpc", true
	}
	vs := metadata.ValueFromIncomingContext(ctx, name)
	if len(vs) == 0 {
		return "", false
	}
	return strings.Join(vs, ","), true
}
