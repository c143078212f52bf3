package xdsserver

import (
	"fmt"
	"sync/atomic"

	"github.com/xdslens/xdslens/xdsclient/xdsresource/serverlistener"

	"github.com/xdslens/xdslens/xdsclient/xdsresource/routeconfig"

	"github.com/xdslens/xdslens/httpfilter"
)

// chain is one filter chain of a server Listener as the server runs it:
// its HTTP filters parsed, and its compiled route table, which changes
// with the route configuration while the chain stays.
type chain struct {
	fc        *serverlistener.FilterChain
	isDefault bool
	// filters are the chain's HTTP filters but the router, parsed;
	// filtersErr, when set, fails every route of the chain.
	filters    []chainFilter
	filtersErr error
	routes     atomic.Pointer[routeTable]
}

type chainFilter struct {
	name string
	f    httpfilter.ServerFilter
	cfg  httpfilter.Config
}

// label is the chain's name as hooks give it.
func (c *chain) label() string { return c.fc.Name }

// newChain parses the HTTP filters of fc with the filters registered with
// package httpfilter.
func newChain(fc *serverlistener.FilterChain, isDefault bool) *chain {
	c := &chain{fc: fc, isDefault: isDefault}
	for _, hf := range fc.HTTPFilters {
		if hf.TypeURL == httpfilter.RouterTypeURL {
			break // the router ends the chain (gRFC A39)
		}
		sf, ok := httpfilter.Get(hf.TypeURL).(httpfilter.ServerFilter)
		if !ok {
			c.filtersErr = fmt.Errorf("HTTP filter %q: type %q has no server filter registered with package httpfilter", hf.Name, hf.TypeURL)
			return c
		}
		cfg, err := sf.ParseConfig(hf.Config)
		if err != nil {
			c.filtersErr = fmt.Errorf("HTTP filter %q: %v", hf.Name, err)
			return c
		}
		c.filters = append(c.filters, chainFilter{name: hf.Name, f: sf, cfg: cfg})
	}
	return c
}

// interceptors builds the chain's filters for route r of virtual host vh,
// each with its most specific override: the route's, else the virtual
// host's. An override's FilterConfig.disabled is not read, as gRPC C-core
// does not read it (nor grpc-go without its experimental ext_proc and
// ext_authz switches): its config applies, so that no route runs without
// an authorization filter that gRPC would run there.
func (c *chain) interceptors(vh *routeconfig.VirtualHost, r *routeconfig.Route, env httpfilter.ServerEnv) ([]httpfilter.ServerInterceptor, error) {
	if c.filtersErr != nil {
		return nil, c.filtersErr
	}
	var out []httpfilter.ServerInterceptor
	for _, cf := range c.filters {
		o, ok := r.FilterOverrides[cf.name]
		if !ok {
			o, ok = vh.FilterOverrides[cf.name]
		}
		var override httpfilter.Config
		if ok {
			var err error
			if override, err = cf.f.ParseOverride(o.Config); err != nil {
				return nil, fmt.Errorf("HTTP filter %q: override: %v", cf.name, err)
			}
		}
		env.FilterName = cf.name
		in, err := cf.f.BuildServerInterceptor(cf.cfg, override, env)
		if err != nil {
			return nil, fmt.Errorf("HTTP filter %q: %v", cf.name, err)
		}
		if in != nil {
			out = append(out, in)
		}
	}
	return out, nil
}
