// Package routing matches RPCs against the routes of one xDS virtual host
// (gRFC A28): path, header and runtime-fraction matchers, the first match
// winning, then the route's action: one cluster, or a weighted pick among
// several.
//
// A Table is compiled once per configuration and then used by every pick,
// concurrently and without locks. Routing a pick allocates nothing unless a
// matched header has several values (they are joined with ",").
//
// Where gRPC's implementations differ, C-core is followed: a header whose
// name ends in "-bin" is never present to a matcher, a header sent with an
// empty value is present (grpc-go takes it for absent), "content-type" is
// always "application/grpc", a runtime fraction of N per million matches
// when a random number below one million is less than N (so 0 never
// matches), and a safe_regex path matcher is case-sensitive whatever
// case_sensitive says.
package routing

import (
	"context"
	"fmt"
	"math/rand/v2"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/xdslens/xdslens/xdsclient/xdsresource/matcher"
	"github.com/xdslens/xdslens/xdsclient/xdsresource/routeconfig"

	"google.golang.org/grpc/metadata"
)

// Outcome is what routing decided for one RPC.
type Outcome uint8

const (
	// Routed: the RPC goes to Decision.Cluster.
	Routed Outcome = iota + 1
	// NoRoute: no route of the virtual host matches the RPC.
	NoRoute
	// Unsupported: the matching route's action is not one a gRPC client
	// can forward with (non_forwarding_action, redirect, direct_response,
	// filter_action, or a cluster specifier plugin this data plane does
	// not run).
	Unsupported
)

// String returns "routed", "no_route" or "unsupported_action".
func (o Outcome) String() string {
	switch o {
	case Routed:
		return "routed"
	case NoRoute:
		return "no_route"
	case Unsupported:
		return "unsupported_action"
	}
	return "unknown"
}

// Decision is the result of routing one RPC.
type Decision struct {
	Outcome Outcome
	// Route is the index, in the virtual host's routes, of the route that
	// matched; -1 with NoRoute.
	Route int
	// Cluster is the index in Table.Clusters of the cluster chosen, -1
	// unless Outcome is Routed.
	Cluster int
}

// Rand returns a uniformly distributed number in [0, n). Tests inject a
// deterministic one; the default is math/rand/v2's.
type Rand func(n uint32) uint32

// Table is one virtual host's routes, compiled.
//
// Path matchers depend on the method alone, so a Table remembers, for up
// to MaxRememberedMethods methods, which routes' paths match it: a pick
// then evaluates only those routes' header and fraction matchers, in order,
// instead of every route's path (for 1,000 routes, tens of nanoseconds
// instead of microseconds). Methods are remembered in a copy-on-write map
// read without a lock.
type Table struct {
	routes []route
	// Clusters are the distinct names of the clusters the routes can
	// choose, in the order routes first name them.
	Clusters []string
	rnd      Rand

	byMethod atomic.Pointer[map[string][]int32]
	mu       sync.Mutex // held to add to byMethod
}

// MaxRememberedMethods bounds how many methods a Table remembers the
// path-matching routes of; MaxRememberedRoutes how many such routes it
// remembers for one method. Beyond either, picks match every route's path.
const (
	MaxRememberedMethods = 1024
	MaxRememberedRoutes  = 64
)

type route struct {
	path     pathMatcher
	headers  []headerMatcher
	fraction int64 // per million; -1 when unset
	action   routeconfig.ActionKind
	// targets are the route's clusters with cumulative weights; one
	// entry of weight 1 for a single cluster.
	targets []target
	total   uint32
	hashes  []hashPolicy
}

type target struct {
	cluster    int    // index in Table.Clusters
	cumulative uint32 // sum of the weights up to and including this one
}

type pathMatcher struct {
	kind  routeconfig.PathMatchKind
	value string // lower-cased when fold is set
	fold  bool
	re    *regexp.Regexp
}

type headerMatcher struct {
	name   string
	kind   matcher.Kind
	value  string // lower-cased when fold is set
	fold   bool
	re     *regexp.Regexp
	start  int64
	end    int64
	absent bool // a -bin header: never present
	ctype  bool // content-type: always "application/grpc"
	m      matcher.Header
}

// Option configures Compile.
type Option func(*Table)

// WithRand makes the table draw its random numbers (runtime fractions and
// weighted clusters) from r.
func WithRand(r Rand) Option { return func(t *Table) { t.rnd = r } }

func defaultRand(n uint32) uint32 { return rand.Uint32N(n) }

// Compile compiles the routes of vh. It fails only on a regular expression
// that does not compile, which the resource validation already rejects.
func Compile(vh *routeconfig.VirtualHost, opts ...Option) (*Table, error) {
	t := &Table{rnd: defaultRand}
	for _, o := range opts {
		o(t)
	}
	index := map[string]int{}
	clusterIndex := func(name string) int {
		i, ok := index[name]
		if !ok {
			i = len(t.Clusters)
			index[name] = i
			t.Clusters = append(t.Clusters, name)
		}
		return i
	}
	for i := range vh.Routes {
		r := &vh.Routes[i]
		if r.Action.Kind == routeconfig.ActionClusterHeader {
			// gRPC ignores routes whose cluster comes from a header
			// (gRFC A28): the route never matches.
			t.routes = append(t.routes, route{action: r.Action.Kind, path: pathMatcher{kind: 0}})
			continue
		}
		cr, err := compileRoute(r)
		if err != nil {
			return nil, fmt.Errorf("routes[%d]: %w", i, err)
		}
		switch r.Action.Kind {
		case routeconfig.ActionCluster:
			cr.targets = []target{{cluster: clusterIndex(r.Action.Cluster), cumulative: 1}}
			cr.total = 1
		case routeconfig.ActionWeightedClusters:
			for _, wc := range r.Action.WeightedClusters {
				cr.total += wc.Weight
				cr.targets = append(cr.targets, target{cluster: clusterIndex(wc.Name), cumulative: cr.total})
			}
		}
		t.routes = append(t.routes, cr)
	}
	return t, nil
}

func compileRoute(r *routeconfig.Route) (route, error) {
	cr := route{action: r.Action.Kind, fraction: -1}
	cr.path = pathMatcher{kind: r.PathMatch}
	switch r.PathMatch {
	case routeconfig.PathPrefix:
		cr.path.value, cr.path.fold = r.Prefix, r.CaseInsensitive
	case routeconfig.PathExact:
		cr.path.value, cr.path.fold = r.Path, r.CaseInsensitive
	case routeconfig.PathRegex:
		re, err := regexp.Compile(`^(?:` + r.SafeRegex + `)$`)
		if err != nil {
			return cr, fmt.Errorf("safe_regex %q: %w", r.SafeRegex, err)
		}
		cr.path.re = re
	}
	if cr.path.fold {
		cr.path.value = strings.ToLower(cr.path.value)
	}
	for j, h := range r.Headers {
		hm := headerMatcher{name: h.Name, kind: h.Kind, value: h.Value, fold: h.IgnoreCase, start: h.RangeStart, end: h.RangeEnd, m: h}
		hm.absent = strings.HasSuffix(h.Name, "-bin")
		hm.ctype = h.Name == "content-type"
		if h.Kind == matcher.Regex {
			re, err := regexp.Compile(`^(?:` + h.Value + `)$`)
			if err != nil {
				return cr, fmt.Errorf("headers[%d] safe_regex %q: %w", j, h.Value, err)
			}
			hm.re = re
		}
		if hm.fold {
			hm.value = strings.ToLower(hm.value)
		}
		cr.headers = append(cr.headers, hm)
	}
	if r.FractionPerMillion != nil {
		cr.fraction = int64(*r.FractionPerMillion)
	}
	hashes, err := compileHashPolicies(r.HashPolicies)
	if err != nil {
		return cr, err
	}
	cr.hashes = hashes
	return cr, nil
}

// Route routes one RPC: method is its full method name ("/pkg.Service/M"),
// ctx its context, whose outgoing metadata the header matchers read.
func (t *Table) Route(ctx context.Context, method string) Decision {
	if m := t.byMethod.Load(); m != nil {
		if candidates, ok := (*m)[method]; ok {
			for _, i := range candidates {
				if d, ok := t.try(ctx, int(i)); ok {
					return d
				}
			}
			return Decision{Outcome: NoRoute, Route: -1, Cluster: -1}
		}
	}
	var candidates []int32
	remember := true
	d := Decision{Outcome: NoRoute, Route: -1, Cluster: -1}
	decided := false
	for i := range t.routes {
		if !t.routes[i].path.match(method) {
			continue
		}
		if len(candidates) == MaxRememberedRoutes {
			remember = false
		}
		if remember {
			candidates = append(candidates, int32(i))
		}
		if !decided {
			d, decided = t.try(ctx, i)
		}
		if decided && !remember {
			break
		}
	}
	if remember {
		t.remember(method, candidates)
	}
	return d
}

// try applies the header and fraction matchers of route i, whose path
// matches, and returns its decision when it matches.
func (t *Table) try(ctx context.Context, i int) (Decision, bool) {
	r := &t.routes[i]
	if !r.headersMatch(ctx) {
		return Decision{}, false
	}
	if r.fraction >= 0 && int64(t.rnd(1_000_000)) >= r.fraction {
		return Decision{}, false
	}
	switch r.action {
	case routeconfig.ActionCluster, routeconfig.ActionWeightedClusters:
		return Decision{Outcome: Routed, Route: i, Cluster: r.pick(t.rnd)}, true
	}
	return Decision{Outcome: Unsupported, Route: i, Cluster: -1}, true
}

// remember records the routes whose path matches method.
func (t *Table) remember(method string, candidates []int32) {
	t.mu.Lock()
	defer t.mu.Unlock()
	old := t.byMethod.Load()
	n := 0
	if old != nil {
		if _, ok := (*old)[method]; ok {
			return
		}
		n = len(*old)
	}
	if n >= MaxRememberedMethods {
		return
	}
	m := make(map[string][]int32, n+1)
	if old != nil {
		for k, v := range *old {
			m[k] = v
		}
	}
	m[strings.Clone(method)] = candidates
	t.byMethod.Store(&m)
}

func (r *route) pick(rnd Rand) int {
	if len(r.targets) == 1 {
		return r.targets[0].cluster
	}
	n := rnd(r.total)
	for _, tg := range r.targets {
		if n < tg.cumulative {
			return tg.cluster
		}
	}
	return r.targets[len(r.targets)-1].cluster
}

func (p *pathMatcher) match(method string) bool {
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
	return false // a route gRPC ignores
}

func (r *route) headersMatch(ctx context.Context) bool {
	for i := range r.headers {
		if !r.headers[i].match(ctx) {
			return false
		}
	}
	return true
}

func (h *headerMatcher) match(ctx context.Context) bool {
	value, present := h.lookup(ctx)
	var m bool
	switch {
	case h.kind == matcher.Present:
		m = present == h.m.Present
	case !present:
		return false // every other matcher fails on an absent header, inverted or not
	case h.kind == matcher.Range:
		v, err := strconv.ParseInt(value, 10, 64)
		m = err == nil && v >= h.start && v < h.end
	case h.kind == matcher.Regex:
		m = h.re.MatchString(value)
	default:
		m = h.matchString(value)
	}
	return m != h.m.Invert
}

func (h *headerMatcher) matchString(v string) bool {
	want := h.value
	switch h.kind {
	case matcher.Exact:
		if h.fold {
			return strings.EqualFold(v, want)
		}
		return v == want
	case matcher.Prefix:
		if h.fold {
			return len(v) >= len(want) && strings.EqualFold(v[:len(want)], want)
		}
		return strings.HasPrefix(v, want)
	case matcher.Suffix:
		if h.fold {
			return len(v) >= len(want) && strings.EqualFold(v[len(v)-len(want):], want)
		}
		return strings.HasSuffix(v, want)
	case matcher.Contains:
		if h.fold {
			return strings.Contains(strings.ToLower(v), want)
		}
		return strings.Contains(v, want)
	}
	return false
}

// lookup returns the value of the header as the matchers see it.
func (h *headerMatcher) lookup(ctx context.Context) (string, bool) {
	switch {
	case h.absent:
		return "", false
	case h.ctype:
		return "application/grpc", true
	}
	vs := metadata.ValueFromOutgoingContext(ctx, h.name)
	switch len(vs) {
	case 0:
		return "", false
	case 1:
		return vs[0], true
	}
	return strings.Join(vs, ","), true
}
