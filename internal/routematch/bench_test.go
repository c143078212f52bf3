package routematch_test

import (
	"context"
	"testing"

	"google.golang.org/grpc/metadata"

	"github.com/xdslens/xdslens/internal/routematch"
	"github.com/xdslens/xdslens/xdsclient/xdsresource/matcher"
	"github.com/xdslens/xdslens/xdsclient/xdsresource/routeconfig"
)

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
