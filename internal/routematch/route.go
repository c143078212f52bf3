package routematch

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"google.golang.org/grpc/metadata"

	"github.com/xdslens/xdslens/internal/asciifold"
	"github.com/xdslens/xdslens/xdsclient/xdsresource/matcher"
	"github.com/xdslens/xdslens/xdsclient/xdsresource/routeconfig"
)

// Route is the compiled matchers of one route.
type Route struct {
	ignored  bool // a cluster_header route: never matches
	path     pathMatcher
	headers  []headerMatcher
	fraction int64 // per million; -1 when unset
	plain    bool  // no header matcher and no fraction: its path decides
}

type pathMatcher struct {
	kind  routeconfig.PathMatchKind // 0 for a route that never matches
	value string                    // lower-cased when fold is set
	fold  bool
	re    *regexp.Regexp
}

type headerMatcher struct {
	m      matcher.Header
	value  string // m.Value, lower-cased when m.IgnoreCase is set
	re     *regexp.Regexp
	md     Metadata
	absent bool // a -bin header: never present
	ctype  bool // content-type: always "application/grpc"
}

func (r *Route) compile(src *routeconfig.Route, md Metadata) error {
	r.fraction = -1
	if src.Action.Kind == routeconfig.ActionClusterHeader {
		// gRPC ignores routes whose cluster comes from a header (gRFC
		// A28): the route never matches.
		r.ignored = true
		return nil
	}
	r.path = pathMatcher{kind: src.PathMatch}
	switch src.PathMatch {
	case routeconfig.PathPrefix:
		r.path.value, r.path.fold = src.Prefix, src.CaseInsensitive
	case routeconfig.PathExact:
		r.path.value, r.path.fold = src.Path, src.CaseInsensitive
	case routeconfig.PathRegex:
		re, err := regexp.Compile(`^(?:` + src.SafeRegex + `)$`)
		if err != nil {
			return fmt.Errorf("safe_regex %q: %w", src.SafeRegex, err)
		}
		r.path.re = re
	}
	if r.path.fold {
		r.path.value = asciifold.Lower(r.path.value)
	}
	for j, h := range src.Headers {
		hm := headerMatcher{m: h, value: h.Value, md: md, absent: strings.HasSuffix(h.Name, "-bin"), ctype: h.Name == "content-type"}
		if h.Kind == matcher.Regex {
			re, err := regexp.Compile(`^(?:` + h.Value + `)$`)
			if err != nil {
				return fmt.Errorf("headers[%d] safe_regex %q: %w", j, h.Value, err)
			}
			hm.re = re
		}
		if h.IgnoreCase {
			hm.value = asciifold.Lower(hm.value)
		}
		r.headers = append(r.headers, hm)
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
func (r *Route) MatchPath(method string) bool { return r.path.match(method) }

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

func (p *pathMatcher) match(method string) bool {
	switch p.kind {
	case routeconfig.PathPrefix:
		if p.fold {
			return asciifold.HasPrefix(method, p.value)
		}
		return strings.HasPrefix(method, p.value)
	case routeconfig.PathExact:
		if p.fold {
			return asciifold.Equal(method, p.value)
		}
		return method == p.value
	case routeconfig.PathRegex:
		return p.re.MatchString(method)
	}
	return false // a route gRPC ignores
}

func (r *Route) headersMatch(ctx context.Context) bool {
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
	case h.m.Kind == matcher.Present:
		m = present == h.m.Present
	case !present:
		return false // every other matcher fails on an absent header, inverted or not
	case h.m.Kind == matcher.Range:
		v, err := strconv.ParseInt(value, 10, 64)
		m = err == nil && v >= h.m.RangeStart && v < h.m.RangeEnd
	case h.m.Kind == matcher.Regex:
		m = h.re.MatchString(value)
	default:
		m = h.matchString(value)
	}
	return m != h.m.Invert
}

func (h *headerMatcher) matchString(v string) bool {
	want, fold := h.value, h.m.IgnoreCase
	switch h.m.Kind {
	case matcher.Exact:
		if fold {
			return asciifold.Equal(v, want)
		}
		return v == want
	case matcher.Prefix:
		if fold {
			return asciifold.HasPrefix(v, want)
		}
		return strings.HasPrefix(v, want)
	case matcher.Suffix:
		if fold {
			return asciifold.HasSuffix(v, want)
		}
		return strings.HasSuffix(v, want)
	case matcher.Contains:
		if fold {
			return asciifold.Contains(v, want)
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
	var vs []string
	if h.md == Incoming {
		vs = metadata.ValueFromIncomingContext(ctx, h.m.Name)
	} else {
		vs = metadata.ValueFromOutgoingContext(ctx, h.m.Name)
	}
	switch len(vs) {
	case 0:
		return "", false
	case 1:
		return vs[0], true
	}
	return strings.Join(vs, ","), true
}
