package routematch

import (
	"context"
	"fmt"
	"strings"

	"google.golang.org/grpc/metadata"

	"github.com/xdslens/xdslens/internal/xdsmatch"
	"github.com/xdslens/xdslens/xdsclient/xdsresource/matcher"
	"github.com/xdslens/xdslens/xdsclient/xdsresource/routeconfig"
)

// Route is the compiled matchers of one route.
type Route struct {
	ignored  bool            // a cluster_header route: never matches
	path     xdsmatch.String // the zero String for a route that never matches
	headers  []headerMatcher
	fraction int64 // per million; -1 when unset
	plain    bool  // no header matcher and no fraction: its path decides
}

type headerMatcher struct {
	name   string
	m      xdsmatch.Header
	md     Metadata
	absent bool // a -bin header: never present
	ctype  bool // content-type: always "application/grpc"
}

// pathString is the string match of a route's path matcher; false for
// a route without one, which never matches. A safe_regex path is matched
// with case whatever case_sensitive says, as in C-core: a String ignores
// IgnoreCase for a regex.
func pathString(src *routeconfig.Route) (matcher.String, bool) {
	m := matcher.String{IgnoreCase: src.CaseInsensitive}
	switch src.PathMatch {
	case routeconfig.PathPrefix:
		m.Kind, m.Value = matcher.Prefix, src.Prefix
	case routeconfig.PathExact:
		m.Kind, m.Value = matcher.Exact, src.Path
	case routeconfig.PathRegex:
		m.Kind, m.Value = matcher.Regex, src.SafeRegex
	default:
		return m, false
	}
	return m, true
}

func (r *Route) compile(src *routeconfig.Route, md Metadata) error {
	r.fraction = -1
	if src.Action.Kind == routeconfig.ActionClusterHeader {
		// gRPC ignores routes whose cluster comes from a header (gRFC
		// A28): the route never matches.
		r.ignored = true
		return nil
	}
	if ps, ok := pathString(src); ok {
		path, err := xdsmatch.CompileString(ps)
		if err != nil {
			return fmt.Errorf("path: %w", err)
		}
		r.path = path
	}
	for j, h := range src.Headers {
		m, err := xdsmatch.CompileHeader(h)
		if err != nil {
			return fmt.Errorf("headers[%d]: %w", j, err)
		}
		r.headers = append(r.headers, headerMatcher{name: h.Name, m: m, md: md, absent: strings.HasSuffix(h.Name, "-bin"), ctype: h.Name == "content-type"})
	}
	if src.FractionPerMillion != nil {
		r.fraction = int64(*src.FractionPerMillion)
	}
	r.plain = len(r.headers) == 0 && r.fraction < 0
	return nil
}

// Ignored reports whether the route is one gRPC never matches (its
// cluster comes from a header, gRFC A28).
func (r *Route) Ignored() bool { return r.ignored }

// MatchPath reports whether the route's path matcher matches method.
func (r *Route) MatchPath(method string) bool { return r.path.Match(method) }

// FailedHeader returns the index of the first header matcher of the route
// that an RPC whose metadata ctx carries does not match, with what that
// matcher saw of the header; -1 when every one matches.
func (r *Route) FailedHeader(ctx context.Context) (index int, value string, present bool) {
	for k := range r.headers {
		h := &r.headers[k]
		if !h.match(ctx) {
			value, present = h.lookup(ctx)
			return k, value, present
		}
	}
	return -1, "", false
}

// Fraction returns the route's runtime fraction in parts per million, -1
// when it has none.
func (r *Route) Fraction() int64 { return r.fraction }

func (r *Route) headersMatch(ctx context.Context) bool {
	for i := range r.headers {
		if !r.headers[i].match(ctx) {
			return false
		}
	}
	return true
}

func (h *headerMatcher) match(ctx context.Context) bool {
	return h.m.Match(h.lookup(ctx))
}

// lookup returns the value of the header as the matchers see it.
func (h *headerMatcher) lookup(ctx context.Context) (string, bool) {
	switch {
	case h.absent:
		return "", false
	case h.ctype:
		return "application/grpc", true
	}
	var vs []string
	if h.md == Incoming {
		vs = metadata.ValueFromIncomingContext(ctx, h.name)
	} else {
		vs = metadata.ValueFromOutgoingContext(ctx, h.name)
	}
	switch len(vs) {
	case 0:
		return "", false
	case 1:
		return vs[0], true
	}
	return strings.Join(vs, ","), true
}
