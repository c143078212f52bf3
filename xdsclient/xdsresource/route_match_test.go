package xdsresource

import (
	"reflect"
	"testing"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"

	"github.com/xdslens/xdslens/xdsclient/xdsresource/matcher"
	"github.com/xdslens/xdslens/xdsclient/xdsresource/routeconfig"
)

// As in gRPC C-core and grpc-go, a domain pattern with a "*" at its start or
// end is accepted whatever else it holds: only that "*" is a wildcard.
func TestRouteConfigDomainPatterns(t *testing.T) {
	domains := []string{"**", "*a*", "a*b.*", "*.*", "*"}
	m := routeConfig(prefixRoute("/", "c1"))
	m.VirtualHosts[0].Domains = domains
	_, v, err := decode(t, RouteConfigType, m)
	if err != nil {
		t.Fatal(err)
	}
	if got := v.(*routeconfig.Config).VirtualHosts[0].Domains; !reflect.DeepEqual(got, domains) {
		t.Errorf("Domains = %q, want %q", got, domains)
	}
}

// As in gRPC C-core (RouteHeaderMatchersParse, StringMatcher::Create), the
// value of an exact, prefix, suffix or contains header matcher may be
// empty, in the match specifier or in a string_match; grpc-go rejects an
// empty prefix, suffix or contains.
func TestRouteConfigEmptyHeaderValues(t *testing.T) {
	r := prefixRoute("/", "c1")
	r.Match.Headers = []*routev3.HeaderMatcher{
		{Name: "a", HeaderMatchSpecifier: &routev3.HeaderMatcher_ExactMatch{}},
		{Name: "b", HeaderMatchSpecifier: &routev3.HeaderMatcher_PrefixMatch{}},
		{Name: "c", HeaderMatchSpecifier: &routev3.HeaderMatcher_SuffixMatch{}, InvertMatch: true},
		{Name: "d", HeaderMatchSpecifier: &routev3.HeaderMatcher_ContainsMatch{}},
		{Name: "e", HeaderMatchSpecifier: &routev3.HeaderMatcher_StringMatch{StringMatch: &matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_Prefix{}, IgnoreCase: true}}},
		{Name: "f", HeaderMatchSpecifier: &routev3.HeaderMatcher_StringMatch{StringMatch: &matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_Contains{}}}},
	}
	_, v, err := decode(t, RouteConfigType, routeConfig(r))
	if err != nil {
		t.Fatal(err)
	}
	want := []matcher.Header{
		{Name: "a", Kind: matcher.Exact}, {Name: "b", Kind: matcher.Prefix}, {Name: "c", Kind: matcher.Suffix, Invert: true},
		{Name: "d", Kind: matcher.Contains}, {Name: "e", Kind: matcher.Prefix, IgnoreCase: true}, {Name: "f", Kind: matcher.Contains},
	}
	if got := v.(*routeconfig.Config).VirtualHosts[0].Routes[0].Headers; !reflect.DeepEqual(got, want) {
		t.Errorf("Headers = %+v, want %+v", got, want)
	}
}
