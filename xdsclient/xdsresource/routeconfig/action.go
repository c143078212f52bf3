package routeconfig

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"

	"github.com/xdslens/xdslens/internal/xdsduration"
	"github.com/xdslens/xdslens/xdsclient/xdsresource/filterconfig"
	"github.com/xdslens/xdslens/xdsclient/xdsresource/internal/decoding"
	"github.com/xdslens/xdslens/xdsclient/xdsresource/matcher"
	"github.com/xdslens/xdslens/xdsclient/xdsresource/rls"
)

// ActionKind says what a route does.
type ActionKind int

// Route action kinds.
const (
	// ActionCluster sends requests to Action.Cluster.
	ActionCluster ActionKind = iota + 1
	// ActionWeightedClusters splits requests over
	// Action.WeightedClusters.
	ActionWeightedClusters
	// ActionClusterHeader sends requests to the cluster named by the
	// request header Action.ClusterHeader. gRPC clients do not
	// support it and ignore such routes.
	ActionClusterHeader
	// ActionNonForwarding is non_forwarding_action, used by servers.
	ActionNonForwarding
	// ActionClusterSpecifierPlugin sends requests to the cluster that the
	// RLS plugin Action.ClusterSpecifierPlugin picks (gRFC A28).
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

// Action is what a Route does; Kind says which field applies.
type Action struct {
	Kind ActionKind
	// Cluster is set for ActionCluster.
	Cluster string
	// WeightedClusters is set for ActionWeightedClusters. Clusters of
	// weight 0 are left out; the weights add up to more than 0 and fit a
	// uint32.
	WeightedClusters []WeightedCluster
	// ClusterHeader is set for ActionClusterHeader, as received (it may
	// be empty: gRPC never reads it, as the route never matches).
	ClusterHeader string
	// ClusterSpecifierPlugin is set for ActionClusterSpecifierPlugin: the
	// name of an entry of RouteConfiguration.ClusterSpecifierPlugins.
	ClusterSpecifierPlugin string
}

// WeightedCluster is one entry of a weighted_clusters action.
type WeightedCluster struct {
	Name   string
	Weight uint32
	// FilterOverrides is the cluster's typed_per_filter_config, nil when
	// empty: for an HTTP filter it has an override for, it wins over the
	// route's and the virtual host's.
	FilterOverrides filterconfig.Overrides
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
	// value before hashing: every match of Regex is replaced by
	// Substitution, read as RE2 reads a rewrite string ("\1" is capture
	// group 1, "\\" a backslash), as the xDS API says.
	Regex, Substitution string
	// Terminal stops the evaluation of later policies once this one has
	// produced a hash.
	Terminal bool
}

// RetryPolicy is a validated retry_policy.
type RetryPolicy struct {
	// RetryOn lists the retry_on conditions that gRPC supports:
	// "cancelled", "deadline-exceeded", "internal", "resource-exhausted",
	// "unavailable", written exactly so between the commas, each once,
	// in the order first named (a set, as gRPC C-core keeps them, however
	// long retry_on is). Empty means no retries.
	RetryOn []string
	// NumRetries is at least 1 (default 1).
	NumRetries uint32
	// BaseInterval (default 25ms) and MaxInterval (default ten times
	// BaseInterval) are positive; a Duration beyond what a time.Duration
	// holds, and ten times a BaseInterval that large, are the largest
	// time.Duration (package xdsduration).
	BaseInterval, MaxInterval time.Duration
}

// validateRouteAction reads a into r, in gRPC C-core's order
// (RouteActionParse): max_stream_duration, hash_policy and retry_policy
// first, so that their errors reject the resource even when the cluster
// specifier, read last, is one gRPC ignores (keep false).
func validateRouteAction(trustedServer bool, a *routev3.RouteAction, r *Route, plugins map[string]*rls.Config) (keep bool, err error) {
	msd := a.GetMaxStreamDuration()
	field, d := "grpc_timeout_header_max", msd.GetGrpcTimeoutHeaderMax()
	if d == nil {
		field, d = "max_stream_duration", msd.GetMaxStreamDuration()
	}
	if d != nil {
		v, err := xdsduration.Parse(d)
		if err != nil {
			return false, fmt.Errorf("route.max_stream_duration.%s: %v", field, err)
		}
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
	if trustedServer {
		r.AutoHostRewrite = a.GetAutoHostRewrite().GetValue()
	}

	switch cs := a.GetClusterSpecifier().(type) {
	case *routev3.RouteAction_Cluster:
		if cs.Cluster == "" {
			return false, errors.New("route.cluster is empty")
		}
		r.Action = Action{Kind: ActionCluster, Cluster: cs.Cluster}
	case *routev3.RouteAction_WeightedClusters:
		wcs, err := validateWeightedClusters(cs.WeightedClusters)
		if err != nil {
			return false, err
		}
		r.Action = Action{Kind: ActionWeightedClusters, WeightedClusters: wcs}
	case *routev3.RouteAction_ClusterHeader:
		// gRPC reads no more of it: the route is kept, for those who
		// describe routes, and never matches.
		r.Action = Action{Kind: ActionClusterHeader, ClusterHeader: cs.ClusterHeader}
	case *routev3.RouteAction_ClusterSpecifierPlugin:
		if cs.ClusterSpecifierPlugin == "" {
			return false, errors.New("route.cluster_specifier_plugin is empty")
		}
		rl, ok := plugins[cs.ClusterSpecifierPlugin]
		switch {
		case !ok:
			return false, fmt.Errorf("route.cluster_specifier_plugin %q is not in cluster_specifier_plugins", cs.ClusterSpecifierPlugin)
		case rl == nil:
			return false, nil // an optional plugin that is not supported
		}
		r.Action = Action{Kind: ActionClusterSpecifierPlugin, ClusterSpecifierPlugin: cs.ClusterSpecifierPlugin}
	default:
		return false, nil
	}
	return true, nil
}

// validateWeightedClusters returns the clusters of weight above 0 of m.
func validateWeightedClusters(m *routev3.WeightedCluster) ([]WeightedCluster, error) {
	var sum uint64
	var wcs []WeightedCluster
	for i, c := range m.GetClusters() {
		if c.GetName() == "" {
			return nil, fmt.Errorf("weighted_clusters.clusters[%d]: name is empty", i)
		}
		overrides, err := filterconfig.ValidateOverrides(c.GetTypedPerFilterConfig())
		if err != nil {
			return nil, fmt.Errorf("weighted_clusters.clusters[%d]: %v", i, err)
		}
		if c.GetWeight() == nil {
			// gRPC C-core refuses a cluster without a weight;
			// grpc-go reads it as 0 and leaves the cluster out.
			return nil, fmt.Errorf("weighted_clusters.clusters[%d] %q: weight is not set", i, c.GetName())
		}
		w := c.GetWeight().GetValue()
		if w == 0 {
			continue
		}
		if !decoding.AddWeight(&sum, w) {
			return nil, errors.New("weighted_clusters weights sum to more than 4294967295")
		}
		wcs = append(wcs, WeightedCluster{Name: c.GetName(), Weight: w, FilterOverrides: overrides})
	}
	if sum == 0 {
		return nil, errors.New("weighted_clusters weights sum to 0")
	}
	return wcs, nil
}

func validateHashPolicy(m *routev3.RouteAction_HashPolicy) (HashPolicy, bool, error) {
	p := HashPolicy{Terminal: m.GetTerminal()}
	switch s := m.GetPolicySpecifier().(type) {
	case *routev3.RouteAction_HashPolicy_Header_:
		p.Kind, p.HeaderName = HashHeader, s.Header.GetHeaderName()
		if p.HeaderName == "" {
			return p, false, errors.New("header.header_name is empty")
		}
		if rw := s.Header.GetRegexRewrite(); rw != nil {
			p.Regex, p.Substitution = rw.GetPattern().GetRegex(), rw.GetSubstitution()
			if p.Regex == "" {
				// An empty expression, or none, would rewrite every
				// value; gRPC C-core refuses both.
				return p, false, errors.New("header.regex_rewrite.pattern.regex is empty")
			}
			if err := matcher.CheckRegex(p.Regex); err != nil {
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

func validateRetryPolicy(m *routev3.RetryPolicy) (*RetryPolicy, error) {
	if m == nil {
		return nil, nil
	}
	p := &RetryPolicy{NumRetries: 1, BaseInterval: 25 * time.Millisecond}
	// Each condition is compared as it is written, as gRPC C-core
	// compares it: " unavailable" and "Unavailable" are conditions gRPC
	// does not know (grpc-go trims and lower-cases them).
	for c := range strings.SplitSeq(m.GetRetryOn(), ",") {
		if retryCodes[c] && !slices.Contains(p.RetryOn, c) {
			p.RetryOn = append(p.RetryOn, c)
		}
	}
	if n := m.GetNumRetries(); n != nil {
		if n.GetValue() < 1 {
			return nil, errors.New("retry_policy.num_retries is 0, must be at least 1")
		}
		p.NumRetries = n.GetValue()
	}
	var err error
	if b := m.GetRetryBackOff(); b != nil {
		if p.BaseInterval, err = xdsduration.Parse(b.GetBaseInterval()); err != nil {
			return nil, fmt.Errorf("retry_policy.retry_back_off.base_interval: %v", err)
		}
		if p.BaseInterval <= 0 {
			return nil, errors.New("retry_policy.retry_back_off.base_interval must be positive")
		}
	}
	// Ten times a base interval of centuries is the largest duration, not
	// a negative one (gRPC C-core's durations saturate).
	p.MaxInterval = xdsduration.Times(p.BaseInterval, 10)
	if mi := m.GetRetryBackOff().GetMaxInterval(); mi != nil {
		if p.MaxInterval, err = xdsduration.Parse(mi); err != nil {
			return nil, fmt.Errorf("retry_policy.retry_back_off.max_interval: %v", err)
		}
		if p.MaxInterval <= 0 {
			return nil, errors.New("retry_policy.retry_back_off.max_interval must be positive")
		}
	}
	return p, nil
}
