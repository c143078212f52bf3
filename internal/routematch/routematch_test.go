package routematch_test

import (
	"context"
	"fmt"
	"testing"

	"google.golang.org/grpc/metadata"

	"github.com/xdslens/xdslens/internal/routematch"
	"github.com/xdslens/xdslens/internal/testing/testmain"
	"github.com/xdslens/xdslens/xdsclient/xdsresource/matcher"
	"github.com/xdslens/xdslens/xdsclient/xdsresource/routeconfig"
)

// TestMain ends the test binary without the race detector's pause at exit.
func TestMain(m *testing.M) { testmain.Run(m) }

var serve = routeconfig.Action{Kind: routeconfig.ActionNonForwarding}

func prefix(p string) routeconfig.Route {
	return routeconfig.Route{PathMatch: routeconfig.PathPrefix, Prefix: p, Action: serve}
}

// sides are a client's and a server's view of the same metadata.
var sides = []struct {
	name string
	md   routematch.Metadata
	ctx  func(metadata.MD) context.Context
}{
	{"outgoing", routematch.Outgoing, func(md metadata.MD) context.Context { return metadata.NewOutgoingContext(context.Background(), md) }},
	{"incoming", routematch.Incoming, func(md metadata.MD) context.Context { return metadata.NewIncomingContext(context.Background(), md) }},
}

// Each header matcher decides alike on a client's outgoing metadata and
// on a server's incoming metadata (gRFC A36: a server's routes match as
// a client's do), with C-core's rules for -bin headers, content-type,
// empty values and headers sent several times.
func TestHeaderMatchingBothSides(t *testing.T) {
	type kv = []string
	for _, tc := range []struct {
		name string
		m    matcher.Header
		md   kv
		want bool
	}{
		{"exact", matcher.Header{Name: "x-env", Kind: matcher.Exact, Value: "canary"}, kv{"x-env", "canary"}, true},
		{"exact other", matcher.Header{Name: "x-env", Kind: matcher.Exact, Value: "canary"}, kv{"x-env", "prod"}, false},
		{"exact absent", matcher.Header{Name: "x-env", Kind: matcher.Exact, Value: "canary"}, nil, false},
		{"exact inverted absent", matcher.Header{Name: "x-env", Kind: matcher.Exact, Value: "canary", Invert: true}, nil, false},
		{"exact inverted other", matcher.Header{Name: "x-env", Kind: matcher.Exact, Value: "canary", Invert: true}, kv{"x-env", "prod"}, true},
		{"exact ignore case", matcher.Header{Name: "x-env", Kind: matcher.Exact, Value: "Canary", IgnoreCase: true}, kv{"x-env", "CANARY"}, true},
		{"upper-case key in metadata", matcher.Header{Name: "x-env", Kind: matcher.Exact, Value: "a"}, kv{"X-Env", "a"}, true},
		{"several values joined", matcher.Header{Name: "x-v", Kind: matcher.Exact, Value: "a,b"}, kv{"x-v", "a", "x-v", "b"}, true},
		{"prefix", matcher.Header{Name: "x-v", Kind: matcher.Prefix, Value: "ab"}, kv{"x-v", "abc"}, true},
		{"prefix ignore case", matcher.Header{Name: "x-v", Kind: matcher.Prefix, Value: "AB", IgnoreCase: true}, kv{"x-v", "abc"}, true},
		{"suffix", matcher.Header{Name: "x-v", Kind: matcher.Suffix, Value: "bc"}, kv{"x-v", "abc"}, true},
		{"suffix no", matcher.Header{Name: "x-v", Kind: matcher.Suffix, Value: "bc"}, kv{"x-v", "abd"}, false},
		{"contains", matcher.Header{Name: "x-v", Kind: matcher.Contains, Value: "B", IgnoreCase: true}, kv{"x-v", "abc"}, true},
		// ignore_case folds ASCII letters only, as C-core: a non-ASCII
		// letter matches only itself.
		{"ignore case non-ASCII same", matcher.Header{Name: "x-v", Kind: matcher.Exact, Value: "CAFÉ", IgnoreCase: true}, kv{"x-v", "cafÉ"}, true},
		{"ignore case non-ASCII other case", matcher.Header{Name: "x-v", Kind: matcher.Exact, Value: "CAFÉ", IgnoreCase: true}, kv{"x-v", "café"}, false},
		{"ignore case Kelvin sign", matcher.Header{Name: "x-v", Kind: matcher.Prefix, Value: "k", IgnoreCase: true}, kv{"x-v", "\u212a1"}, false},
		{"ignore case long s", matcher.Header{Name: "x-v", Kind: matcher.Contains, Value: "S", IgnoreCase: true}, kv{"x-v", "ſ"}, false},
		{"ignore case suffix non-ASCII", matcher.Header{Name: "x-v", Kind: matcher.Suffix, Value: "É", IgnoreCase: true}, kv{"x-v", "aÉ"}, true},
		{"regex full", matcher.Header{Name: "x-v", Kind: matcher.Regex, Value: "a.c"}, kv{"x-v", "abc"}, true},
		{"regex partial", matcher.Header{Name: "x-v", Kind: matcher.Regex, Value: "b"}, kv{"x-v", "abc"}, false},
		{"range in", matcher.Header{Name: "x-n", Kind: matcher.Range, RangeStart: 10, RangeEnd: 20}, kv{"x-n", "10"}, true},
		{"range end excluded", matcher.Header{Name: "x-n", Kind: matcher.Range, RangeStart: 10, RangeEnd: 20}, kv{"x-n", "20"}, false},
		{"range not a number", matcher.Header{Name: "x-n", Kind: matcher.Range, RangeStart: 10, RangeEnd: 20}, kv{"x-n", "15x"}, false},
		{"present", matcher.Header{Name: "x-p", Kind: matcher.Present, Present: true}, kv{"x-p", ""}, true},
		{"present absent", matcher.Header{Name: "x-p", Kind: matcher.Present, Present: true}, nil, false},
		{"present false absent", matcher.Header{Name: "x-p", Kind: matcher.Present, Present: false}, nil, true},
		{"present inverted absent", matcher.Header{Name: "x-p", Kind: matcher.Present, Present: true, Invert: true}, nil, true},
		{"binary header never present", matcher.Header{Name: "x-b-bin", Kind: matcher.Present, Present: true}, kv{"x-b-bin", "\x01"}, false},
		{"binary header absent inverted", matcher.Header{Name: "x-b-bin", Kind: matcher.Present, Present: true, Invert: true}, kv{"x-b-bin", "\x01"}, true},
		{"binary header present_match false", matcher.Header{Name: "x-b-bin", Kind: matcher.Present, Present: false}, kv{"x-b-bin", "\x01"}, true},
		{"binary header exact never matches", matcher.Header{Name: "x-b-bin", Kind: matcher.Exact, Value: "\x01"}, kv{"x-b-bin", "\x01"}, false},
		{"binary header prefix inverted never matches", matcher.Header{Name: "x-b-bin", Kind: matcher.Prefix, Value: "z", Invert: true}, kv{"x-b-bin", "\x01"}, false},
		{"present_match false on an empty value", matcher.Header{Name: "x-p", Kind: matcher.Present, Present: false}, kv{"x-p", ""}, false},
		{"exact empty value", matcher.Header{Name: "x-p", Kind: matcher.Exact, Value: ""}, kv{"x-p", ""}, true},
		// Empty values are valid, as in C-core: an empty prefix, suffix or
		// contains matches any value of a header that is present.
		{"empty exact on a value", matcher.Header{Name: "x-p", Kind: matcher.Exact}, kv{"x-p", "a"}, false},
		{"empty prefix", matcher.Header{Name: "x-p", Kind: matcher.Prefix}, kv{"x-p", "abc"}, true},
		{"empty prefix on an empty value", matcher.Header{Name: "x-p", Kind: matcher.Prefix}, kv{"x-p", ""}, true},
		{"empty prefix absent", matcher.Header{Name: "x-p", Kind: matcher.Prefix}, nil, false},
		{"empty suffix ignoring case", matcher.Header{Name: "x-p", Kind: matcher.Suffix, IgnoreCase: true}, kv{"x-p", "ABC"}, true},
		{"empty contains inverted", matcher.Header{Name: "x-p", Kind: matcher.Contains, Invert: true}, kv{"x-p", "abc"}, false},
		{"empty prefix on a -bin header", matcher.Header{Name: "x-b-bin", Kind: matcher.Prefix}, kv{"x-b-bin", "\x01"}, false},
		{"content-type is application/grpc", matcher.Header{Name: "content-type", Kind: matcher.Exact, Value: "application/grpc"}, nil, true},
		{"content-type from metadata ignored", matcher.Header{Name: "content-type", Kind: matcher.Exact, Value: "text/plain"}, kv{"content-type", "text/plain"}, false},
	} {
		for _, side := range sides {
			t.Run(side.name+"/"+tc.name, func(t *testing.T) {
				r := prefix("")
				r.Headers = []matcher.Header{tc.m}
				tbl, err := routematch.Compile([]routeconfig.Route{r}, side.md)
				if err != nil {
					t.Fatal(err)
				}
				ctx := context.Background()
				if tc.md != nil {
					ctx = side.ctx(metadata.Pairs(tc.md...))
				}
				if got := tbl.Match(ctx, "/s/m") == 0; got != tc.want {
					t.Errorf("matched = %v, want %v", got, tc.want)
				}
			})
		}
	}
}

// A path matcher with case_sensitive false folds ASCII letters only, as
// C-core.
func TestPathIgnoringCaseFoldsASCII(t *testing.T) {
	for _, tc := range []struct {
		r      routeconfig.Route
		method string
		want   bool
	}{
		{routeconfig.Route{PathMatch: routeconfig.PathPrefix, Prefix: "/PKG.", CaseInsensitive: true}, "/pkg.S/M", true},
		{routeconfig.Route{PathMatch: routeconfig.PathPrefix, Prefix: "/pkg.Ş", CaseInsensitive: true}, "/PKG.Ş/M", true},
		{routeconfig.Route{PathMatch: routeconfig.PathPrefix, Prefix: "/pkg.s", CaseInsensitive: true}, "/pkg.ſ/M", false},
		{routeconfig.Route{PathMatch: routeconfig.PathExact, Path: "/pkg.K/M", CaseInsensitive: true}, "/pkg.k/m", true},
		{routeconfig.Route{PathMatch: routeconfig.PathExact, Path: "/pkg.K/M", CaseInsensitive: true}, "/pkg.\u212a/M", false},
	} {
		tc.r.Action = serve
		tbl, err := routematch.Compile([]routeconfig.Route{tc.r}, routematch.Outgoing)
		if err != nil {
			t.Fatal(err)
		}
		if got := tbl.Match(context.Background(), tc.method) == 0; got != tc.want {
			t.Errorf("route %q %q ignoring case, method %q: matched = %v, want %v", tc.r.Prefix, tc.r.Path, tc.method, got, tc.want)
		}
	}
}

// A table reads the metadata of its side only: a client's header matchers
// do not see the metadata the RPC came with, a server's do not see what it
// sends.
func TestMetadataOfItsSide(t *testing.T) {
	r := prefix("")
	r.Headers = []matcher.Header{{Name: "x-env", Kind: matcher.Exact, Value: "canary"}}
	md := metadata.Pairs("x-env", "canary")
	for _, tc := range []struct {
		name string
		md   routematch.Metadata
		ctx  context.Context
		want int
	}{
		{"outgoing table, outgoing metadata", routematch.Outgoing, metadata.NewOutgoingContext(context.Background(), md), 0},
		{"outgoing table, incoming metadata", routematch.Outgoing, metadata.NewIncomingContext(context.Background(), md), -1},
		{"incoming table, incoming metadata", routematch.Incoming, metadata.NewIncomingContext(context.Background(), md), 0},
		{"incoming table, outgoing metadata", routematch.Incoming, metadata.NewOutgoingContext(context.Background(), md), -1},
	} {
		tbl, err := routematch.Compile([]routeconfig.Route{r}, tc.md)
		if err != nil {
			t.Fatal(err)
		}
		if got := tbl.Match(tc.ctx, "/s/m"); got != tc.want {
			t.Errorf("%s: route %d, want %d", tc.name, got, tc.want)
		}
	}
}

// The values given by NewOutgoingContext and AppendToOutgoingContext are
// one header's values, joined.
func TestHeaderAppendedMetadata(t *testing.T) {
	r := prefix("")
	r.Headers = []matcher.Header{{Name: "x-env", Kind: matcher.Exact, Value: "a,b"}}
	tbl, err := routematch.Compile([]routeconfig.Route{r}, routematch.Outgoing)
	if err != nil {
		t.Fatal(err)
	}
	ctx := metadata.NewOutgoingContext(context.Background(), metadata.Pairs("x-env", "a"))
	ctx = metadata.AppendToOutgoingContext(ctx, "X-Env", "b")
	if got := tbl.Match(ctx, "/s/m"); got != 0 {
		t.Errorf("route %d, want 0 (values of NewOutgoingContext and AppendToOutgoingContext joined)", got)
	}
}

// A regular expression that does not compile fails the table, naming the
// route and the matcher.
func TestCompileErrorNamesTheRoute(t *testing.T) {
	r := prefix("")
	r.Headers = []matcher.Header{{Name: "x", Kind: matcher.Regex, Value: "("}}
	_, err := routematch.Compile([]routeconfig.Route{prefix("/"), r}, routematch.Incoming)
	if err == nil || err.Error() != `routes[1]: headers[0]: invalid regex "(": error parsing regexp: missing closing ): `+"`(`" {
		t.Errorf("Compile: %v", err)
	}
}

// TestRememberedMethodsAgree checks that routing a method again, from the
// remembered path matches, decides as the first routing did, including
// when header matchers pass over some of the routes, and when more routes
// match a path than are remembered.
func TestRememberedMethodsAgree(t *testing.T) {
	vh := &routeconfig.VirtualHost{}
	for i := range 200 {
		r := prefix(fmt.Sprintf("/svc.S%d/", i%7))
		if i%3 == 0 {
			r.Headers = []matcher.Header{{Name: "x-k", Kind: matcher.Exact, Value: fmt.Sprint(i % 5)}}
		}
		vh.Routes = append(vh.Routes, r)
	}
	for i := range 100 { // 100 catch-all routes: more than MaxRememberedRoutes match every path
		r := prefix("/")
		r.Headers = []matcher.Header{{Name: "x-all", Kind: matcher.Exact, Value: fmt.Sprint(i)}}
		vh.Routes = append(vh.Routes, r)
	}
	tbl, err := routematch.Compile(vh.Routes, routematch.Outgoing)
	if err != nil {
		t.Fatal(err)
	}
	for round := range 2 {
		for s := range 8 {
			for k := range 6 {
				ctx := metadata.NewOutgoingContext(context.Background(), metadata.Pairs("x-k", fmt.Sprint(k), "x-all", fmt.Sprint(k*17)))
				method := fmt.Sprintf("/svc.S%d/M", s)
				want := -1
				// The reference: the first route in order whose matchers all match.
				for i, r := range vh.Routes {
					if len(method) < len(r.Prefix) || method[:len(r.Prefix)] != r.Prefix {
						continue
					}
					if len(r.Headers) > 0 && metadata.ValueFromOutgoingContext(ctx, r.Headers[0].Name)[0] != r.Headers[0].Value {
						continue
					}
					want = i
					break
				}
				if got := tbl.Match(ctx, method); got != want {
					t.Errorf("round %d: %s with x-k=%d: route %d, want %d", round, method, k, got, want)
				}
			}
		}
	}
}

// BenchmarkMatchString matches an RPC against a table of one route
// (matched one by one, not remembered) whose path matcher ignores case
// and whose one header matcher is of each string kind: the cost of the
// string matchers on every RPC.
func BenchmarkMatchString(b *testing.B) {
	for _, bc := range []struct {
		name string
		h    matcher.Header
	}{
		{"exact", matcher.Header{Name: "x-env", Kind: matcher.Exact, Value: "canary-eu-west-1"}},
		{"exact-ignore-case", matcher.Header{Name: "x-env", Kind: matcher.Exact, Value: "CANARY-eu-west-1", IgnoreCase: true}},
		{"prefix-ignore-case", matcher.Header{Name: "x-env", Kind: matcher.Prefix, Value: "CANARY-", IgnoreCase: true}},
		{"suffix", matcher.Header{Name: "x-env", Kind: matcher.Suffix, Value: "-west-1"}},
		{"contains-ignore-case", matcher.Header{Name: "x-env", Kind: matcher.Contains, Value: "EU-WEST", IgnoreCase: true}},
		{"regex", matcher.Header{Name: "x-env", Kind: matcher.Regex, Value: "canary-[a-z]+-[a-z]+-[0-9]"}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			r := routeconfig.Route{PathMatch: routeconfig.PathPrefix, Prefix: "/PKG.Service/", CaseInsensitive: true, Action: serve, Headers: []matcher.Header{bc.h}}
			tbl, err := routematch.Compile([]routeconfig.Route{r}, routematch.Outgoing)
			if err != nil {
				b.Fatal(err)
			}
			ctx := metadata.NewOutgoingContext(context.Background(), metadata.Pairs("x-env", "canary-eu-west-1"))
			b.ReportAllocs()
			for b.Loop() {
				if tbl.Match(ctx, "/pkg.Service/Method") != 0 {
					b.Fatal("no match")
				}
			}
		})
	}
}
