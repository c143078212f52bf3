package xdsgrpc

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/xdslens/xdslens/xdsclient/xdsresource/routeconfig"

	"github.com/xdslens/xdslens/xdsgrpc/internal/routing"
)

// why says which matcher of route r decided trial tr.
func why(r *routeconfig.Route, tr routing.Trial) string {
	switch {
	case tr.Ignored:
		return "its cluster comes from a header (cluster_header), which gRPC never matches"
	case !tr.Path:
		return "the path does not match"
	case tr.Header >= 0:
		h := routing.DescribeHeader(r.Headers[tr.Header])
		if !tr.HeaderPresent {
			return h + " does not match: the RPC has no such header"
		}
		return h + " does not match " + strconv.Quote(tr.HeaderValue)
	case tr.Chance == 0:
		return "its matchers match, but its runtime_fraction is 0%: it takes no RPC"
	case tr.Chance < routing.Certain:
		return "its matchers match; its runtime_fraction takes " + routing.Percent(tr.Chance, routing.Certain) + " of such RPCs, the others go on to the next routes"
	}
	return "its matchers all match"
}

// reason says what e decided, and why, in words.
func reason(e *Explanation) string {
	var b strings.Builder
	if e.Route == nil {
		fmt.Fprintf(&b, "no route of virtual host %q matches %s", e.VirtualHost, e.Method)
		if len(e.Trials) == 0 {
			b.WriteString(": it has no routes")
		}
		writeTrials(&b, e.Trials, len(e.Trials))
		return b.String()
	}
	r := e.Route
	fmt.Fprintf(&b, "route %s (%s) is the first that matches %s", r.Label(), r.Match, e.Method)
	if r.Chance < 1 {
		fmt.Fprintf(&b, ", for %s of such RPCs (runtime_fraction); the others go to %s", percent(r.Chance), next(e))
	}
	if n := routeIndexIn(e); n > 0 {
		b.WriteString("; the routes before it do not")
		writeTrials(&b, e.Trials, n)
	}
	if e.Outcome == PickUnsupportedAction {
		fmt.Fprintf(&b, "; its action, %s, cannot forward the RPC: it fails UNAVAILABLE", r.Action)
		return b.String()
	}
	if len(e.Choices) == 1 {
		c := &e.Choices[0]
		fmt.Fprintf(&b, "; it sends it to cluster %q%s", c.Name, clusterText(c))
	} else {
		b.WriteString("; it draws its cluster at random, by weight:")
		for i := range e.Choices {
			c := &e.Choices[i]
			if i > 0 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, " %q %d/%d (%s)%s", c.Name, c.Weight, c.Total, routing.Percent(int64(c.Weight), int64(c.Total)), clusterText(c))
		}
	}
	switch {
	case e.HasHash:
		fmt.Fprintf(&b, "; request hash %#016x from %s", e.Hash, strings.Join(e.HashPolicies, ", "))
	case e.HashDependsOnChannel:
		fmt.Fprintf(&b, "; its request hash depends on the channel's random ID (%s)", strings.Join(e.HashPolicies, ", "))
	case len(e.HashPolicies) > 0:
		fmt.Fprintf(&b, "; no hash policy (%s) produced a hash: a ring_hash cluster picks at random", strings.Join(e.HashPolicies, ", "))
	}
	if e.Timeout > 0 {
		fmt.Fprintf(&b, "; deadline at most %v", e.Timeout)
	}
	if rp := e.Retry; rp != nil {
		fmt.Fprintf(&b, "; retried on %v, at most %d attempts, backoff %v to %v", rp.On, rp.MaxAttempts, rp.BaseInterval, rp.MaxInterval)
	}
	return b.String()
}

// clusterText describes a cluster choice after its name.
func clusterText(c *ClusterChoice) string {
	var parts []string
	switch {
	case c.Err != nil:
		return ", which fails it: " + c.Err.Error()
	case c.Type == "aggregate":
		parts = append(parts, "aggregate of "+strings.Join(c.Leaves, ", "))
	default:
		parts = append(parts, c.Type+" "+c.Policy)
	}
	if len(c.Filters) > 0 {
		parts = append(parts, "HTTP filters "+strings.Join(c.Filters, ", "))
	}
	return " (" + strings.Join(parts, "; ") + ")"
}

// writeTrials writes, after a ":", why each of the first n trials did not
// take the RPC.
func writeTrials(b *strings.Builder, trials []RouteTrial, n int) {
	for i := range trials[:n] {
		t := &trials[i]
		sep := ";"
		if i == 0 {
			sep = ":"
		}
		fmt.Fprintf(b, "%s route %s (%s): %s", sep, t.Label(), t.Match, t.Why)
	}
}

// routeIndexIn returns the position of e.Route in e.Trials.
func routeIndexIn(e *Explanation) int {
	for i := range e.Trials {
		if &e.Trials[i] == e.Route {
			return i
		}
	}
	return len(e.Trials)
}

// next names where the RPCs that e.Route's runtime_fraction does not take
// go.
func next(e *Explanation) string {
	for i := routeIndexIn(e) + 1; i < len(e.Trials); i++ {
		if e.Trials[i].Chance > 0 {
			return "route " + e.Trials[i].Label()
		}
	}
	return "no route (they fail UNAVAILABLE)"
}

// percent formats a share from 0 to 1 as a percentage.
func percent(share float64) string {
	return routing.Percent(int64(share*routing.Certain+0.5), routing.Certain)
}
