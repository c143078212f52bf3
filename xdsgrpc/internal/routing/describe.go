package routing

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/xdslens/xdslens/xdsclient/xdsresource/routeconfig"

	"github.com/xdslens/xdslens/xdsclient/xdsresource/filterconfig"
	"github.com/xdslens/xdslens/xdsclient/xdsresource/matcher"
)

// DescribeMatch returns the match of r in words, its matchers joined with
// ", ": `prefix "/pkg.Svc/", header "x-env" exact "canary",
// runtime_fraction 25%`.
func DescribeMatch(r *routeconfig.Route) string {
	parts := []string{DescribePath(r)}
	for _, h := range r.Headers {
		parts = append(parts, DescribeHeader(h))
	}
	if r.FractionPerMillion != nil {
		parts = append(parts, "runtime_fraction "+Percent(int64(*r.FractionPerMillion), Certain))
	}
	return strings.Join(parts, ", ")
}

// DescribePath returns the path matcher of r in words: `prefix
// "/pkg.Svc/"`, `path "/pkg.Svc/M" (ignoring case)`, `safe_regex "..."`.
func DescribePath(r *routeconfig.Route) string {
	switch r.PathMatch {
	case routeconfig.PathPrefix:
		return "prefix " + strconv.Quote(r.Prefix) + caseNote(r.CaseInsensitive)
	case routeconfig.PathExact:
		return "path " + strconv.Quote(r.Path) + caseNote(r.CaseInsensitive)
	case routeconfig.PathRegex:
		return "safe_regex " + strconv.Quote(r.SafeRegex)
	}
	return "no path matcher"
}

func caseNote(insensitive bool) string {
	if insensitive {
		return " (ignoring case)"
	}
	return ""
}

// DescribeHeader returns a header matcher in words: `header "x-env" exact
// "canary"`, `header "x-id" not present`, `header "x-n" range [1, 10)`.
func DescribeHeader(h matcher.Header) string {
	var b strings.Builder
	b.WriteString("header " + strconv.Quote(h.Name) + " ")
	if h.Invert {
		b.WriteString("not ")
	}
	switch h.Kind {
	case matcher.Present:
		if h.Present {
			b.WriteString("present")
		} else {
			b.WriteString("absent")
		}
	case matcher.Range:
		fmt.Fprintf(&b, "range [%d, %d)", h.RangeStart, h.RangeEnd)
	default:
		b.WriteString(h.Kind.String() + " " + strconv.Quote(h.Value))
		if h.IgnoreCase {
			b.WriteString(" (ignoring case)")
		}
	}
	return b.String()
}

// DescribeAction returns what r does with the RPCs it matches: `cluster
// "c1"`, `weighted_clusters "c1" 80, "c2" 20`, or an action gRPC cannot
// forward with.
func DescribeAction(r *routeconfig.Route) string {
	a := &r.Action
	switch a.Kind {
	case routeconfig.ActionCluster:
		return "cluster " + strconv.Quote(a.Cluster)
	case routeconfig.ActionWeightedClusters:
		parts := make([]string, len(a.WeightedClusters))
		for i, wc := range a.WeightedClusters {
			parts[i] = strconv.Quote(wc.Name) + " " + strconv.FormatUint(uint64(wc.Weight), 10)
		}
		return "weighted_clusters " + strings.Join(parts, ", ")
	case routeconfig.ActionClusterHeader:
		return "cluster_header " + strconv.Quote(a.ClusterHeader) + " (never matched by gRPC)"
	case routeconfig.ActionClusterSpecifierPlugin:
		return "cluster_specifier_plugin " + strconv.Quote(a.ClusterSpecifierPlugin)
	case routeconfig.ActionNonForwarding:
		return "non_forwarding_action (cannot forward)"
	}
	return "an action gRPC cannot forward with (redirect, direct_response or filter_action)"
}

// DescribeRoute returns r in one line: its match, its action and what else
// it asks of an RPC (max_stream_duration, retry_policy, hash policies,
// filter overrides), such as `prefix "/" -> cluster "c1", timeout 1s`.
func DescribeRoute(r *routeconfig.Route) string {
	parts := []string{DescribeMatch(r) + " -> " + DescribeAction(r)}
	if r.MaxStreamDuration != nil {
		parts = append(parts, "timeout "+r.MaxStreamDuration.String())
	}
	if rp := r.RetryPolicy; rp != nil {
		parts = append(parts, DescribeRetry(rp))
	}
	for _, h := range r.HashPolicies {
		parts = append(parts, "hash "+DescribeHashPolicy(h))
	}
	if len(r.FilterOverrides) > 0 {
		parts = append(parts, "HTTP filter overrides "+DescribeOverrides(r.FilterOverrides))
	}
	return strings.Join(parts, ", ")
}

// DescribeOverrides lists the HTTP filters that overrides configure, by
// name: `[fault rbac]`.
func DescribeOverrides(overrides filterconfig.Overrides) string {
	names := make([]string, 0, len(overrides))
	for name := range overrides {
		names = append(names, name)
	}
	slices.Sort(names)
	return "[" + strings.Join(names, " ") + "]"
}

// DescribeRetry returns a retry_policy in words: `retry on [unavailable]
// up to 3 retries, backoff 25ms to 250ms`.
func DescribeRetry(rp *routeconfig.RetryPolicy) string {
	return fmt.Sprintf("retry on %v up to %d retries, backoff %v to %v", rp.RetryOn, rp.NumRetries, rp.BaseInterval, rp.MaxInterval)
}

// DescribeHashPolicy returns a hash policy in words: `header "x-user"`,
// `header "x-user" rewritten "^u-" -> "" (terminal)`, `channel_id`.
func DescribeHashPolicy(h routeconfig.HashPolicy) string {
	var s string
	switch h.Kind {
	case routeconfig.HashHeader:
		s = "header " + strconv.Quote(h.HeaderName)
		if h.Regex != "" {
			s += " rewritten " + strconv.Quote(h.Regex) + " -> " + strconv.Quote(h.Substitution)
		}
	case routeconfig.HashChannelID:
		s = "channel_id"
	default:
		s = "unknown"
	}
	if h.Terminal {
		s += " (terminal)"
	}
	return s
}

// Percent returns n/total as a percentage with at most two decimals:
// "25%", "33.33%".
func Percent(n, total int64) string {
	if total <= 0 {
		return "0%"
	}
	s := strconv.FormatFloat(float64(n)*100/float64(total), 'f', 2, 64)
	return strings.TrimRight(strings.TrimRight(s, "0"), ".") + "%"
}
