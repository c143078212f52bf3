package routing

import (
	"context"

	"github.com/xdslens/xdslens/xdsclient/xdsresource/routeconfig"
)

// Certain is the Chance of a route that takes every RPC its path and
// header matchers match: one million parts per million.
const Certain = 1_000_000

// Trial says how one route fared against an RPC, evaluated by the
// matchers Route uses, without drawing a random number.
type Trial struct {
	// Route is the route's index in the virtual host's routes.
	Route int
	// Ignored is set for a route gRPC never matches (one whose cluster
	// comes from a header, gRFC A28); the other fields are zero.
	Ignored bool
	// Path says whether the route's path matcher matches the method.
	Path bool
	// Header is the index of the first header matcher that does not match
	// the RPC, -1 when every one does or when Path is false (the header
	// matchers are then not evaluated). HeaderValue and HeaderPresent are
	// what that matcher saw of the RPC's header.
	Header        int
	HeaderValue   string
	HeaderPresent bool
	// Chance is the share, in parts per million, of RPCs such as this one
	// that the route takes: Certain when its path and headers match and
	// it has no runtime_fraction, its fraction when it has one, and 0 when
	// its path or a header does not match.
	Chance int64
}

// Explain evaluates the routes of t in order for an RPC of method whose
// outgoing metadata ctx carries, with the same matchers as Route, and
// returns one Trial per route up to and including the first one that
// takes every such RPC (Chance Certain), or one per route when none does.
// Unlike Route it draws no random number: a runtime_fraction is reported
// as a Chance, and the routes after it are evaluated too.
func (t *Table) Explain(ctx context.Context, method string) []Trial {
	var trials []Trial
	for i := range t.routes {
		tr := t.trial(ctx, i, method)
		trials = append(trials, tr)
		if tr.Chance >= Certain {
			break
		}
	}
	return trials
}

// trial evaluates route i for an RPC of method.
func (t *Table) trial(ctx context.Context, i int, method string) Trial {
	r := &t.routes[i]
	tr := Trial{Route: i, Header: -1}
	if r.action == routeconfig.ActionClusterHeader {
		tr.Ignored = true
		return tr
	}
	if tr.Path = r.path.match(method); !tr.Path {
		return tr
	}
	for k := range r.headers {
		h := &r.headers[k]
		if !h.match(ctx) {
			tr.Header = k
			tr.HeaderValue, tr.HeaderPresent = h.lookup(ctx)
			return tr
		}
	}
	tr.Chance = Certain
	if r.fraction >= 0 {
		tr.Chance = min(r.fraction, Certain)
	}
	return tr
}

// Choice is one cluster a route can send an RPC to.
type Choice struct {
	// Cluster is the cluster's index in Table.Clusters.
	Cluster int
	// Weight is the cluster's weight; the route draws a cluster with odds
	// Weight / Total.
	Weight, Total uint32
}

// Choices returns the clusters route i draws from, in the order of its
// draw, with their weights: one Choice of weight 1 for a route to one
// cluster, none for a route that does not forward.
func (t *Table) Choices(i int) []Choice {
	if i < 0 || i >= len(t.routes) {
		return nil
	}
	r := &t.routes[i]
	out := make([]Choice, 0, len(r.targets))
	var prev uint32
	for _, tg := range r.targets {
		out = append(out, Choice{Cluster: tg.cluster, Weight: tg.cumulative - prev, Total: r.total})
		prev = tg.cumulative
	}
	return out
}
