package xdsresource

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
)

// RouteConfiguration is a validated RouteConfiguration.
type RouteConfiguration struct {
	// Name is the RouteConfiguration's name; it may be empty for a
	// configuration carried inline in a Listener.
	Name string
	// VirtualHosts are the virtual hosts in order.
	VirtualHosts []VirtualHost
	// ClusterSpecifierPlugins are the RLS cluster specifier plugins (gRFC
	// A28) that routes use, by name; nil when there are none. Plugins no
	// route uses are left out, as gRPC does.
	ClusterSpecifierPlugins map[string]*RouteLookupConfig
}

// VirtualHost is one virtual host of a RouteConfiguration.
type VirtualHost struct {
	// Name is the virtual host's name.
	Name string
	// Domains is never empty. Each entry is an exact host, "*", a suffix
	// pattern "*.example.com" or a prefix pattern "example.*".
	Domains []string
	// Routes are the usable routes in order. Routes that gRPC ignores (see
	// Route) are left out.
	Routes []Route
	// RetryPolicy is the virtual host's retry_policy, nil when unset.
	RetryPolicy *RetryPolicy
}

// PathMatchKind says which path matcher a Route uses.
type PathMatchKind int

// Path matcher kinds.
const (
	// PathPrefix matches paths that start with Route.Prefix; an empty
	// prefix matches every path.
	PathPrefix PathMatchKind = iota + 1
	// PathExact matches the path Route.Path.
	PathExact
	// PathRegex matches paths that Route.SafeRegex matches in full.
	PathRegex
)

// String returns "prefix", "path" or "safe_regex".
func (k PathMatchKind) String() string {
	switch k {
	case PathPrefix:
		return "prefix"
	case PathExact:
		return "path"
	case PathRegex:
		return "safe_regex"
	}
	return fmt.Sprintf("PathMatchKind(%d)", int(k))
}

// Route is one validated route.
//
// Following gRPC, a route whose match has query_parameters, or whose route
// action names no cluster specifier that gRPC understands, or points to an
// optional cluster_specifier_plugin of a type other than RLS, is left out of
// its VirtualHost rather than rejected.
type Route struct {
	// PathMatch says which of Prefix, Path and SafeRegex applies.
	PathMatch PathMatchKind
	// Prefix, Path and SafeRegex hold the path matcher; only the one named
	// by PathMatch is meaningful. SafeRegex is an RE2 expression that must
	// match the whole path.
	Prefix, Path, SafeRegex string
	// CaseInsensitive is true when match.case_sensitive is false.
	CaseInsensitive bool
	// Headers must all match for the route to match.
	Headers []HeaderMatcher
	// FractionPerMillion is runtime_fraction.default_value in parts per
	// million, nil when unset.
	FractionPerMillion *uint32
	// Action says what to do with a matching request.
	Action RouteAction
	// MaxStreamDuration is the route action's
	// max_stream_duration.grpc_timeout_header_max if set, else its
	// max_stream_duration.max_stream_duration; nil when neither is set.
	MaxStreamDuration *time.Duration
	// HashPolicies are the route action's supported hash policies, in
	// order; header and filter_state "io.grpc.channel_id" policies are
	// kept, others are dropped.
	HashPolicies []HashPolicy
	// RetryPolicy is the route action's retry_policy, nil when unset.
	RetryPolicy *RetryPolicy
	// AutoHostRewrite is the route action's auto_host_rewrite; it is
	// honoured only when the resource came from a trusted server (gRFC A81)
	// and is false otherwise.
	AutoHostRewrite bool
}

// ActionKind says what a route does.
type ActionKind int

// Route action kinds.
const (
	// ActionCluster sends requests to RouteAction.Cluster.
	ActionCluster ActionKind = iota + 1
	// ActionWeightedClusters splits requests over
	// RouteAction.WeightedClusters.
	ActionWeightedClusters
	// ActionClusterHeader sends requests to the cluster named by the
	// request header RouteAction.ClusterHeader. gRPC clients do not
	// support it and ignore such routes.
	ActionClusterHeader
	// ActionNonForwarding is non_forwarding_action, used by servers.
	ActionNonForwarding
	// ActionClusterSpecifierPlugin sends requests to the cluster that the
	// RLS plugin RouteAction.ClusterSpecifierPlugin picks (gRFC A28).
	ActionClusterSpecifierPlugin
	// ActionUnsupported is any other action (redirect, direct_response,
	// filter_action): gRPC keeps the route but fails the requests it
	// matches.
	ActionUnsupported
)

// String returns a short name for k.
func (k ActionKind) String() string {
	switch k {
	case ActionCluster:
		return "cluster"
	case ActionWeightedClusters:
		return "weighted_clusters"
	case ActionClusterHeader:
		return "cluster_header"
	case ActionNonForwarding:
		return "non_forwarding"
	case ActionClusterSpecifierPlugin:
		return "cluster_specifier_plugin"
	case ActionUnsupported:
		return "unsupported"
	}
	return fmt.Sprintf("ActionKind(%d)", int(k))
}

// RouteAction is what a Route does; Kind says which field applies.
type RouteAction struct {
	Kind ActionKind
	// Cluster is set for ActionCluster.
	Cluster string
	// WeightedClusters is set for ActionWeightedClusters. Clusters of
	// weight 0 are left out; the weights add up to more than 0 and fit a
	// uint32.
	WeightedClusters []WeightedCluster
	// ClusterHeader is set for ActionClusterHeader.
	ClusterHeader string
	// ClusterSpecifierPlugin is set for ActionClusterSpecifierPlugin: the
	// name of an entry of RouteConfiguration.ClusterSpecifierPlugins.
	ClusterSpecifierPlugin string
}

// WeightedCluster is one entry of a weighted_clusters action.
type WeightedCluster struct {
	Name   string
	Weight uint32
}

// HeaderMatchKind says how a HeaderMatcher compares a header's value.
type HeaderMatchKind int

// Header matcher kinds.
const (
	HeaderExact    HeaderMatchKind = iota + 1 // value equals Value
	HeaderPrefix                              // value starts with Value
	HeaderSuffix                              // value ends with Value
	HeaderContains                            // value contains Value
	HeaderRegex                               // Value, an RE2 expression, matches the whole value
	HeaderPresent                             // the header is present iff Present
	HeaderRange                               // value is an integer in [RangeStart, RangeEnd)
)

// HeaderMatcher is one header condition of a Route.
type HeaderMatcher struct {
	// Name is the header name, lower-cased.
	Name string
	Kind HeaderMatchKind
	// Value is the string, prefix, suffix, substring or regular
	// expression to compare with.
	Value string
	// IgnoreCase makes exact, prefix, suffix and contains matching
	// case-insensitive.
	IgnoreCase bool
	// Present is set for HeaderPresent.
	Present bool
	// RangeStart and RangeEnd are set for HeaderRange.
	RangeStart, RangeEnd int64
	// Invert negates the result.
	Invert bool
}

// HashPolicyKind says what a HashPolicy hashes.
type HashPolicyKind int

// Hash policy kinds.
const (
	// HashHeader hashes the value of the header HashPolicy.HeaderName.
	HashHeader HashPolicyKind = iota + 1
	// HashChannelID hashes a per-channel random value.
	HashChannelID
)

// HashPolicy is one hash policy of a route, used by ring_hash.
type HashPolicy struct {
	Kind HashPolicyKind
	// HeaderName is set for HashHeader.
	HeaderName string
	// Regex and Substitution, when Regex is not empty, rewrite the header
	// value before hashing.
	Regex, Substitution string
	// Terminal stops the evaluation of later policies once this one has
	// produced a hash.
	Terminal bool
}

// RetryPolicy is a validated retry_policy.
type RetryPolicy struct {
	// RetryOn lists the retry_on conditions that gRPC supports:
	// "cancelled", "deadline-exceeded", "internal", "resource-exhausted",
	// "unavailable". Empty means no retries.
	RetryOn []string
	// NumRetries is at least 1 (default 1).
	NumRetries uint32
	// BaseInterval (default 25ms) and MaxInterval (default ten times
	// BaseInterval) are positive.
	BaseInterval, MaxInterval time.Duration
}

// Summary returns a one-line description of rc, for example
// `route config r1: 2 virtual hosts, 5 routes`.
func (rc *RouteConfiguration) Summary() string {
	vhosts, routes := rc.counts()
	return fmt.Sprintf("route config %s: %s, %s", rc.Name,
		plural(vhosts, "virtual host", "virtual hosts"), plural(routes, "route", "routes"))
}

func (rc *RouteConfiguration) counts() (vhosts, routes int) {
	for _, vh := range rc.VirtualHosts {
		routes += len(vh.Routes)
	}
	return len(rc.VirtualHosts), routes
}

func decodeRouteConfig(opts DecodeOptions, b []byte) (string, any, error) {
	m := new(routev3.RouteConfiguration)
	if err := unmarshal(b, m); err != nil {
		return "", nil, err
	}
	if m.GetName() == "" {
		return "", nil, errNoName
	}
	rc, err := validateRouteConfig(opts, m)
	if err != nil {
		return m.GetName(), nil, err
	}
	return m.GetName(), rc, nil
}

// validateRouteConfig is shared by RDS and by Listeners with an inline
// route_config.
func validateRouteConfig(opts DecodeOptions, m *routev3.RouteConfiguration) (*RouteConfiguration, error) {
	// RLS is the only cluster specifier plugin gRPC supports. Another type
	// makes the resource invalid unless the plugin is optional: then the
	// routes that use it are ignored. plugins maps each name to its config,
	// nil for those ignored.
	plugins := make(map[string]*RouteLookupConfig)
	for i, p := range m.GetClusterSpecifierPlugins() {
		ext := p.GetExtension()
		cfg := ext.GetTypedConfig()
		if cfg.GetTypeUrl() != RouteLookupClusterSpecifierTypeURL {
			if !p.GetIsOptional() {
				return nil, fmt.Errorf("cluster_specifier_plugins[%d] %q: unsupported plugin type %q",
					i, ext.GetName(), cfg.GetTypeUrl())
			}
			plugins[ext.GetName()] = nil
			continue
		}
		rl, err := validateRouteLookup(cfg)
		if err != nil {
			return nil, fmt.Errorf("cluster_specifier_plugins[%d] %q: %v", i, ext.GetName(), err)
		}
		plugins[ext.GetName()] = rl
	}

	rc := &RouteConfiguration{Name: m.GetName()}
	for i, vh := range m.GetVirtualHosts() {
		v, err := validateVirtualHost(opts, vh, fmt.Sprintf("virtual_hosts[%d]", i), plugins)
		if err != nil {
			return nil, err
		}
		rc.VirtualHosts = append(rc.VirtualHosts, v)
		for _, r := range v.Routes {
			if r.Action.Kind == ActionClusterSpecifierPlugin {
				if rc.ClusterSpecifierPlugins == nil {
					rc.ClusterSpecifierPlugins = make(map[string]*RouteLookupConfig)
				}
				rc.ClusterSpecifierPlugins[r.Action.ClusterSpecifierPlugin] = plugins[r.Action.ClusterSpecifierPlugin]
			}
		}
	}
	return rc, nil
}

// validateVirtualHost validates m; errors start with at, the path of m.
func validateVirtualHost(opts DecodeOptions, m *routev3.VirtualHost, at string, plugins map[string]*RouteLookupConfig) (VirtualHost, error) {
	vh := VirtualHost{Name: m.GetName(), Domains: m.GetDomains()}
	if len(vh.Domains) == 0 {
		return vh, fmt.Errorf("%s: domains is empty", at)
	}
	for i, d := range vh.Domains {
		if !validDomainPattern(d) {
			return vh, fmt.Errorf("%s.domains[%d]: invalid domain pattern %q", at, i, d)
		}
	}
	var err error
	if vh.RetryPolicy, err = validateRetryPolicy(m.GetRetryPolicy()); err != nil {
		return vh, fmt.Errorf("%s.%v", at, err)
	}
	if err := checkFilterOverrides(m.GetTypedPerFilterConfig()); err != nil {
		return vh, fmt.Errorf("%s.%v", at, err)
	}
	for i, r := range m.GetRoutes() {
		route, keep, err := validateRoute(opts, r, plugins)
		if err != nil {
			return vh, fmt.Errorf("%s.routes[%d]: %v", at, i, err)
		}
		if keep {
			vh.Routes = append(vh.Routes, route)
		}
	}
	return vh, nil
}

// validDomainPattern reports whether d is an exact domain or has a single
// "*" at its start or end.
func validDomainPattern(d string) bool {
	if d == "" {
		return false
	}
	i := strings.IndexByte(d, '*')
	if i < 0 {
		return true
	}
	return strings.Count(d, "*") == 1 && (i == 0 || i == len(d)-1)
}

// validateRoute returns the route and whether gRPC uses it.
func validateRoute(opts DecodeOptions, m *routev3.Route, plugins map[string]*RouteLookupConfig) (Route, bool, error) {
	var r Route
	match := m.GetMatch()
	if match == nil {
		return r, false, errors.New("match missing")
	}
	if len(match.GetQueryParameters()) != 0 {
		return r, false, nil // gRPC ignores routes that match on query parameters
	}
	switch p := match.GetPathSpecifier().(type) {
	case *routev3.RouteMatch_Prefix:
		r.PathMatch, r.Prefix = PathPrefix, p.Prefix
	case *routev3.RouteMatch_Path:
		r.PathMatch, r.Path = PathExact, p.Path
	case *routev3.RouteMatch_SafeRegex:
		r.PathMatch, r.SafeRegex = PathRegex, p.SafeRegex.GetRegex()
		if err := checkRegex(r.SafeRegex); err != nil {
			return r, false, fmt.Errorf("match.safe_regex: %v", err)
		}
	case nil:
		return r, false, errors.New("match has no path specifier (prefix, path or safe_regex)")
	default:
		pm := match.ProtoReflect()
		field := pm.WhichOneof(pm.Descriptor().Oneofs().ByName("path_specifier")).Name()
		return r, false, fmt.Errorf("match: unsupported path specifier %s", field)
	}
	if cs := match.GetCaseSensitive(); cs != nil {
		r.CaseInsensitive = !cs.GetValue()
	}
	for i, h := range match.GetHeaders() {
		hm, err := validateHeaderMatcher(h)
		if err != nil {
			return r, false, fmt.Errorf("match.headers[%d]: %v", i, err)
		}
		r.Headers = append(r.Headers, hm)
	}
	if f := match.GetRuntimeFraction(); f != nil {
		n, err := perMillion(f.GetDefaultValue())
		if err != nil {
			return r, false, fmt.Errorf("match.runtime_fraction: %v", err)
		}
		r.FractionPerMillion = &n
	}
	if err := checkFilterOverrides(m.GetTypedPerFilterConfig()); err != nil {
		return r, false, err
	}

	switch a := m.GetAction().(type) {
	case *routev3.Route_Route:
		keep, err := validateRouteAction(opts, a.Route, &r, plugins)
		if err != nil || !keep {
			return r, false, err
		}
	case *routev3.Route_NonForwardingAction:
		r.Action.Kind = ActionNonForwarding
	default:
		r.Action.Kind = ActionUnsupported
	}
	return r, true, nil
}

func validateRouteAction(opts DecodeOptions, a *routev3.RouteAction, r *Route, plugins map[string]*RouteLookupConfig) (keep bool, err error) {
	switch cs := a.GetClusterSpecifier().(type) {
	case *routev3.RouteAction_Cluster:
		if cs.Cluster == "" {
			return false, errors.New("route.cluster is empty")
		}
		r.Action = RouteAction{Kind: ActionCluster, Cluster: cs.Cluster}
	case *routev3.RouteAction_WeightedClusters:
		var sum uint64
		var wcs []WeightedCluster
		for i, c := range cs.WeightedClusters.GetClusters() {
			if c.GetName() == "" {
				return false, fmt.Errorf("weighted_clusters.clusters[%d]: name is empty", i)
			}
			if err := checkFilterOverrides(c.GetTypedPerFilterConfig()); err != nil {
				return false, fmt.Errorf("weighted_clusters.clusters[%d]: %v", i, err)
			}
			w := c.GetWeight().GetValue()
			if w == 0 {
				continue
			}
			if !addWeight(&sum, w) {
				return false, errors.New("weighted_clusters weights sum to more than 4294967295")
			}
			wcs = append(wcs, WeightedCluster{Name: c.GetName(), Weight: w})
		}
		if sum == 0 {
			return false, errors.New("weighted_clusters weights sum to 0")
		}
		r.Action = RouteAction{Kind: ActionWeightedClusters, WeightedClusters: wcs}
	case *routev3.RouteAction_ClusterHeader:
		if cs.ClusterHeader == "" {
			return false, errors.New("route.cluster_header is empty")
		}
		r.Action = RouteAction{Kind: ActionClusterHeader, ClusterHeader: cs.ClusterHeader}
	case *routev3.RouteAction_ClusterSpecifierPlugin:
		rl, ok := plugins[cs.ClusterSpecifierPlugin]
		switch {
		case !ok:
			return false, fmt.Errorf("route.cluster_specifier_plugin %q is not in cluster_specifier_plugins", cs.ClusterSpecifierPlugin)
		case rl == nil:
			return false, nil // an optional plugin that is not supported
		}
		r.Action = RouteAction{Kind: ActionClusterSpecifierPlugin, ClusterSpecifierPlugin: cs.ClusterSpecifierPlugin}
	default:
		return false, nil
	}

	msd := a.GetMaxStreamDuration()
	if d := msd.GetGrpcTimeoutHeaderMax(); d != nil {
		v := d.AsDuration()
		r.MaxStreamDuration = &v
	} else if d := msd.GetMaxStreamDuration(); d != nil {
		v := d.AsDuration()
		r.MaxStreamDuration = &v
	}
	for i, hp := range a.GetHashPolicy() {
		p, ok, err := validateHashPolicy(hp)
		if err != nil {
			return false, fmt.Errorf("route.hash_policy[%d]: %v", i, err)
		}
		if ok {
			r.HashPolicies = append(r.HashPolicies, p)
		}
	}
	if r.RetryPolicy, err = validateRetryPolicy(a.GetRetryPolicy()); err != nil {
		return false, fmt.Errorf("route.%v", err)
	}
	if opts.TrustedServer {
		r.AutoHostRewrite = a.GetAutoHostRewrite().GetValue()
	}
	return true, nil
}

func validateHeaderMatcher(h *routev3.HeaderMatcher) (HeaderMatcher, error) {
	hm := HeaderMatcher{Name: strings.ToLower(h.GetName()), Invert: h.GetInvertMatch()}
	switch s := h.GetHeaderMatchSpecifier().(type) {
	case *routev3.HeaderMatcher_ExactMatch:
		hm.Kind, hm.Value = HeaderExact, s.ExactMatch
	case *routev3.HeaderMatcher_PrefixMatch:
		hm.Kind, hm.Value = HeaderPrefix, s.PrefixMatch
	case *routev3.HeaderMatcher_SuffixMatch:
		hm.Kind, hm.Value = HeaderSuffix, s.SuffixMatch
	case *routev3.HeaderMatcher_ContainsMatch:
		hm.Kind, hm.Value = HeaderContains, s.ContainsMatch
	case *routev3.HeaderMatcher_SafeRegexMatch:
		hm.Kind, hm.Value = HeaderRegex, s.SafeRegexMatch.GetRegex()
	case *routev3.HeaderMatcher_PresentMatch:
		hm.Kind, hm.Present = HeaderPresent, s.PresentMatch
	case *routev3.HeaderMatcher_RangeMatch:
		hm.Kind, hm.RangeStart, hm.RangeEnd = HeaderRange, s.RangeMatch.GetStart(), s.RangeMatch.GetEnd()
		if hm.RangeEnd < hm.RangeStart {
			return hm, fmt.Errorf("range_match end %d is less than start %d", hm.RangeEnd, hm.RangeStart)
		}
	case *routev3.HeaderMatcher_StringMatch:
		if err := fromStringMatcher(s.StringMatch, &hm); err != nil {
			return hm, fmt.Errorf("string_match: %v", err)
		}
	default:
		return hm, errors.New("no header match specifier")
	}
	switch hm.Kind {
	case HeaderPrefix, HeaderSuffix, HeaderContains:
		if hm.Value == "" {
			return hm, fmt.Errorf("empty %v match", hm.Kind)
		}
	case HeaderRegex:
		if err := checkRegex(hm.Value); err != nil {
			return hm, err
		}
	}
	return hm, nil
}

func fromStringMatcher(m *matcherv3.StringMatcher, hm *HeaderMatcher) error {
	hm.IgnoreCase = m.GetIgnoreCase()
	switch p := m.GetMatchPattern().(type) {
	case *matcherv3.StringMatcher_Exact:
		hm.Kind, hm.Value = HeaderExact, p.Exact
	case *matcherv3.StringMatcher_Prefix:
		hm.Kind, hm.Value = HeaderPrefix, p.Prefix
	case *matcherv3.StringMatcher_Suffix:
		hm.Kind, hm.Value = HeaderSuffix, p.Suffix
	case *matcherv3.StringMatcher_Contains:
		hm.Kind, hm.Value = HeaderContains, p.Contains
	case *matcherv3.StringMatcher_SafeRegex:
		hm.Kind, hm.Value, hm.IgnoreCase = HeaderRegex, p.SafeRegex.GetRegex(), false
	default:
		return errors.New("no match pattern")
	}
	return nil
}

// String returns "exact", "prefix", "suffix", "contains", "safe_regex",
// "present" or "range".
func (k HeaderMatchKind) String() string {
	switch k {
	case HeaderExact:
		return "exact"
	case HeaderPrefix:
		return "prefix"
	case HeaderSuffix:
		return "suffix"
	case HeaderContains:
		return "contains"
	case HeaderRegex:
		return "safe_regex"
	case HeaderPresent:
		return "present"
	case HeaderRange:
		return "range"
	}
	return fmt.Sprintf("HeaderMatchKind(%d)", int(k))
}

// checkRegex reports whether re is a valid RE2 expression.
func checkRegex(re string) error {
	if _, err := regexp.Compile(re); err != nil {
		return fmt.Errorf("invalid regex %q: %v", re, err)
	}
	return nil
}

func validateHashPolicy(m *routev3.RouteAction_HashPolicy) (HashPolicy, bool, error) {
	p := HashPolicy{Terminal: m.GetTerminal()}
	switch s := m.GetPolicySpecifier().(type) {
	case *routev3.RouteAction_HashPolicy_Header_:
		p.Kind, p.HeaderName = HashHeader, s.Header.GetHeaderName()
		if rw := s.Header.GetRegexRewrite(); rw != nil {
			p.Regex, p.Substitution = rw.GetPattern().GetRegex(), rw.GetSubstitution()
			if err := checkRegex(p.Regex); err != nil {
				return p, false, fmt.Errorf("header.regex_rewrite: %v", err)
			}
		}
		return p, true, nil
	case *routev3.RouteAction_HashPolicy_FilterState_:
		if s.FilterState.GetKey() != "io.grpc.channel_id" {
			return p, false, nil
		}
		p.Kind = HashChannelID
		return p, true, nil
	}
	return p, false, nil
}

// retryCodes are the retry_on conditions that gRPC understands.
var retryCodes = map[string]bool{
	"cancelled": true, "deadline-exceeded": true, "internal": true,
	"resource-exhausted": true, "unavailable": true,
}

func validateRetryPolicy(m *routev3.RetryPolicy) (*RetryPolicy, error) {
	if m == nil {
		return nil, nil
	}
	p := &RetryPolicy{NumRetries: 1, BaseInterval: 25 * time.Millisecond}
	for c := range strings.SplitSeq(m.GetRetryOn(), ",") {
		c = strings.ToLower(strings.TrimSpace(c))
		if retryCodes[c] {
			p.RetryOn = append(p.RetryOn, c)
		}
	}
	if n := m.GetNumRetries(); n != nil {
		if n.GetValue() < 1 {
			return nil, errors.New("retry_policy.num_retries is 0, must be at least 1")
		}
		p.NumRetries = n.GetValue()
	}
	if b := m.GetRetryBackOff(); b != nil {
		if p.BaseInterval = b.GetBaseInterval().AsDuration(); p.BaseInterval <= 0 {
			return nil, errors.New("retry_policy.retry_back_off.base_interval must be positive")
		}
	}
	p.MaxInterval = 10 * p.BaseInterval
	if mi := m.GetRetryBackOff().GetMaxInterval(); mi != nil {
		if p.MaxInterval = mi.AsDuration(); p.MaxInterval <= 0 {
			return nil, errors.New("retry_policy.retry_back_off.max_interval must be positive")
		}
	}
	return p, nil
}
