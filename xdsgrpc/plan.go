package xdsgrpc

import (
	"fmt"
	"time"

	"github.com/xdslens/xdslens/xdsclient/xdsresource/routeconfig"

	"github.com/xdslens/xdslens/xdsclient/xdsresource/filterconfig"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/xdslens/xdslens/httpfilter"
	"github.com/xdslens/xdslens/xdsclient/xdsconfig"
)

// plan is what the interceptors do for the RPCs of one route and cluster
// besides routing them: their deadline (gRFC A31), their retries (gRFC
// A44) and the client HTTP filters of the listener (gRFC A39), built once
// per config.
type plan struct {
	// timeout bounds the RPC's deadline; 0 for none.
	timeout time.Duration
	// retry is the retry policy, nil for none.
	retry *retryPolicy
	// filters run before the RPC, in order.
	filters []namedInterceptor
	// err fails the RPCs: the filters could not be built.
	err error
}

type namedInterceptor struct {
	name string
	ic   httpfilter.ClientInterceptor
}

// needsInterceptors reports whether the plan does anything that only the
// interceptors can do.
func (p *plan) needsInterceptors() bool {
	return p != nil && (p.timeout > 0 || p.retry != nil || len(p.filters) > 0 || p.err != nil)
}

// retryPolicy is a retry_policy as gRFC A44 reads it.
type retryPolicy struct {
	codes       map[codes.Code]bool
	maxAttempts int // at most 5
	base, max   time.Duration
}

// maxRetryAttempts caps the attempts of an RPC, its first included (gRFC
// A44, as gRPC caps maxAttempts of its retry policies).
const maxRetryAttempts = 5

var retryOnCodes = map[string]codes.Code{
	"cancelled":          codes.Canceled,
	"deadline-exceeded":  codes.DeadlineExceeded,
	"internal":           codes.Internal,
	"resource-exhausted": codes.ResourceExhausted,
	"unavailable":        codes.Unavailable,
}

func newRetryPolicy(rp *routeconfig.RetryPolicy) *retryPolicy {
	if rp == nil || len(rp.RetryOn) == 0 {
		return nil
	}
	p := &retryPolicy{codes: map[codes.Code]bool{}, maxAttempts: min(int(rp.NumRetries)+1, maxRetryAttempts), base: rp.BaseInterval, max: rp.MaxInterval}
	for _, on := range rp.RetryOn {
		if c, ok := retryOnCodes[on]; ok {
			p.codes[c] = true
		}
	}
	if len(p.codes) == 0 || p.maxAttempts < 2 {
		return nil
	}
	return p
}

// planKey names the plan of a route and one of its clusters.
type planKey struct {
	route   int
	cluster string
}

// buildPlans returns the plans of every route and cluster of cfg's
// virtual host.
func buildPlans(cfg *xdsconfig.Config) map[planKey]*plan {
	vh := cfg.VirtualHost
	plans := map[planKey]*plan{}
	for i := range vh.Routes {
		r := &vh.Routes[i]
		rp := r.RetryPolicy
		if rp == nil {
			rp = vh.RetryPolicy
		}
		var timeout time.Duration
		if r.MaxStreamDuration != nil {
			timeout = *r.MaxStreamDuration
		} else if cfg.Listener != nil {
			timeout = cfg.Listener.MaxStreamDuration
		}
		base := plan{timeout: timeout, retry: newRetryPolicy(rp)}
		add := func(cluster string, clusterOverrides filterconfig.Overrides) {
			p := base
			p.filters, p.err = buildFilters(cfg, r, clusterOverrides)
			if p.err != nil {
				p.err = status.Errorf(codes.Unavailable, "route %d of virtual host %q: %v (xDS node ID: %s)", i, vh.Name, p.err, cfg.NodeID)
			}
			plans[planKey{i, cluster}] = &p
		}
		switch r.Action.Kind {
		case routeconfig.ActionCluster:
			add(r.Action.Cluster, nil)
		case routeconfig.ActionWeightedClusters:
			for _, wc := range r.Action.WeightedClusters {
				add(wc.Name, wc.FilterOverrides)
			}
		}
	}
	return plans
}

// buildFilters builds the client HTTP filters of the listener for one
// route and cluster (gRFC A39): each with its config and its most specific
// override (the weighted cluster's, the route's, the virtual host's), the
// router (last) running nothing. An override marked disabled applies as
// any other (filterconfig.Override), as in gRPC C-core.
func buildFilters(cfg *xdsconfig.Config, r *routeconfig.Route, clusterOverrides filterconfig.Overrides) ([]namedInterceptor, error) {
	if cfg.Listener == nil {
		return nil, nil
	}
	var out []namedInterceptor
	for _, hf := range cfg.Listener.HTTPFilters {
		f, ok := httpfilter.Get(hf.TypeURL).(httpfilter.ClientFilter)
		if !ok {
			// The resource was validated: a filter that no client runs is
			// an optional one, left out as gRPC leaves it out.
			continue
		}
		var override *filterconfig.Override
		for _, m := range []filterconfig.Overrides{clusterOverrides, r.FilterOverrides, cfg.VirtualHost.FilterOverrides} {
			if o, ok := m[hf.Name]; ok {
				override = &o
				break
			}
		}
		fc, err := f.ParseConfig(hf.Config)
		if err != nil {
			return nil, fmt.Errorf("HTTP filter %q: %w", hf.Name, err)
		}
		var oc httpfilter.Config
		if override != nil {
			if oc, err = f.ParseOverride(override.Config); err != nil {
				return nil, fmt.Errorf("HTTP filter %q: override: %w", hf.Name, err)
			}
		}
		ic, err := f.BuildClientInterceptor(fc, oc)
		if err != nil {
			return nil, fmt.Errorf("HTTP filter %q: %w", hf.Name, err)
		}
		if ic != nil {
			out = append(out, namedInterceptor{name: hf.Name, ic: ic})
		}
	}
	return out, nil
}
