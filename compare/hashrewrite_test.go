package compare_test

import (
	"fmt"
	"testing"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"

	"github.com/xdslens/xdslens/internal/testing/rpctest"
	"github.com/xdslens/xdslens/internal/testing/xdstest"
	"github.com/xdslens/xdslens/internal/xdswatch/demo/controlplane"
)

// TestSideBySideHashRewriteGroups hashes a header rewritten by a
// regex_rewrite whose substitution names a capture group as the xDS API
// and RE2 name it ("\1"), over a ring_hash cluster, whose rings the two
// channels build alike (TestSideBySideRingHash). A deliberate difference,
// asserted: xdslens reads "\1" as gRPC C-core's RE2::GlobalReplace does,
// so "user-7" hashes as "id-7" and goes where "id-7" (which the pattern
// leaves as it is) goes on both channels; grpc-go reads the substitution
// as a Go template, in which "\1" is literal, so every user hashes as the
// same two bytes and goes where the value `id-\1` goes.
func TestSideBySideHashRewriteGroups(t *testing.T) {
	s := newSideBySide(t, 3)
	e := s.e
	s.clusterOf = map[string]string{e.Addr(0): "b0", e.Addr(1): "b1", e.Addr(2): "b2"}
	action := rpctest.ToCluster("c")
	action.HashPolicy = []*routev3.RouteAction_HashPolicy{{PolicySpecifier: &routev3.RouteAction_HashPolicy_Header_{
		Header: &routev3.RouteAction_HashPolicy_Header{HeaderName: "x-user", RegexRewrite: &matcherv3.RegexMatchAndSubstitute{
			Pattern: &matcherv3.RegexMatcher{Regex: `^user-(\d+)$`}, Substitution: `id-\1`,
		}},
	}}}
	e.Set(controlplane.Listener("svc", "svc-route"),
		rpctest.RouteConfig("svc-route", rpctest.Route(rpctest.PrefixMatch("/"), action)),
		rpctest.WithRingHash(controlplane.Cluster("c", ""), 1024, 4096),
		controlplane.Endpoints("c", e.Addr(0), e.Addr(1), e.Addr(2)))
	literal := `id-\1`
	s.eventually(t, s.both(t, "/pkg.Svc/M", "x-user", literal), "/pkg.Svc/M", "x-user", literal)
	grpcGoOwner := s.both(t, "/pkg.Svc/M", "x-user", literal)
	used := map[string]bool{}
	for k := range 24 {
		user, id := fmt.Sprintf("user-%d", k), fmt.Sprintf("id-%d", k)
		owner := s.both(t, "/pkg.Svc/M", "x-user", id)
		used[owner] = true
		ctx := xdstest.Context(t)
		if got := s.where(rpctest.Call(ctx, s.ours, "/pkg.Svc/M", "x-user", user)); got != owner {
			t.Errorf("xdslens: %s went to %s, want %s, where %s goes", user, got, owner, id)
		}
		if got := s.where(rpctest.Call(ctx, s.theirs, "/pkg.Svc/M", "x-user", user)); got != grpcGoOwner {
			t.Errorf("grpc-go: %s went to %s, want %s, where %q goes (if grpc-go now reads \\1 as a group, this difference is gone)", user, got, grpcGoOwner, literal)
		}
	}
	if len(used) < 2 {
		t.Errorf("24 ids all went to %v: the test cannot tell the two readings apart", used)
	}
}

// TestSideBySideEncodedAuthority dials both channels to xds:///a%20b,
// whose Listener is "a b": of two virtual hosts, one for the domain
// "a%20b" and one for any other, both channels choose the first, by the
// authority gRPC gives them, percent-encoded.
func TestSideBySideEncodedAuthority(t *testing.T) {
	e := rpctest.NewEnv(t, 2)
	s := &sideBySide{e: e, ours: e.Dial("xdslens:///a%20b"), theirs: dialGRPC(e, "xds:///a%20b"),
		clusterOf: map[string]string{e.Addr(0): "encoded", e.Addr(1): "any"}}
	rc := rpctest.RouteConfig("route", rpctest.Route(rpctest.PrefixMatch("/"), rpctest.ToCluster("any")))
	encoded := rpctest.RouteConfig("route", rpctest.Route(rpctest.PrefixMatch("/"), rpctest.ToCluster("encoded"))).VirtualHosts[0]
	encoded.Name, encoded.Domains = "encoded", []string{"a%20b"}
	rc.VirtualHosts = append([]*routev3.VirtualHost{encoded}, rc.VirtualHosts...)
	e.Set(controlplane.Listener("a b", "route"), rc,
		controlplane.Cluster("encoded", ""), controlplane.Endpoints("encoded", e.Addr(0)),
		controlplane.Cluster("any", ""), controlplane.Endpoints("any", e.Addr(1)))
	s.eventually(t, "encoded", "/pkg.Svc/M")
}
