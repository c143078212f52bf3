package serverres_test

import (
	"net/netip"
	"testing"

	"github.com/xdslens/xdslens/xdsclient/xdsresource/routeconfig"

	"github.com/xdslens/xdslens/xdsclient/xdsresource/filterconfig"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	rbacconfigv3 "github.com/envoyproxy/go-control-plane/envoy/config/rbac/v3"
	rbacv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/rbac/v3"
	"go.uber.org/goleak"

	"github.com/xdslens/xdslens/internal/testing/testmain"
	"github.com/xdslens/xdslens/internal/xdswatch/demo/serverres"
	"github.com/xdslens/xdslens/xdsclient/xdsresource"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m, goleak.Cleanup(testmain.Exit)) }

// TestResourcesAreValid checks that the builders make resources that a
// client accepts and decodes to what their documentation says.
func TestResourcesAreValid(t *testing.T) {
	const name = "grpc/server?xds.resource.listening_address=127.0.0.1:8443"
	rbac := serverres.RBAC("authz", rbacconfigv3.RBAC_ALLOW, map[string]*rbacconfigv3.Policy{
		"by-path":   serverres.Policy(serverres.PathPrefix("/pkg."), serverres.AnyPrincipal),
		"by-header": serverres.Policy(serverres.HeaderExact("x-user", "alice"), serverres.SourceIP("10.0.0.0", 8)),
		"by-name":   serverres.Policy(serverres.AnyPermission, serverres.PrincipalExact("spiffe://example.org/a")),
	})
	lis := serverres.Listener(name, "127.0.0.1", 8443,
		serverres.Chain("default", nil, serverres.RDSHCM("routes"), nil),
		serverres.Chain("mtls", &listenerv3.FilterChainMatch{SourcePrefixRanges: []*corev3.CidrRange{serverres.CIDR("10.1.2.3", 16)}},
			serverres.InlineHCM(serverres.Routes("inline", serverres.Serve("/pkg."), serverres.Forward("/", "c1")), rbac),
			serverres.TLS("ids", "roots", true)),
	)
	opts := xdsresource.DecodeOptions{HasCertificateProvider: func(n string) bool { return n == "ids" || n == "roots" }}
	_, v, err := xdsresource.ListenerType.Decode(opts, serverres.MustAny(lis))
	if err != nil {
		t.Fatal(err)
	}
	s := v.(*xdsresource.Listener).Server
	if s == nil || s.Address != "127.0.0.1" || s.Port != 8443 || len(s.FilterChains) != 1 || s.DefaultFilterChain == nil {
		t.Fatalf("decoded %+v, want a server listener on 127.0.0.1:8443 with one chain and a default", s)
	}
	if d := s.DefaultFilterChain; d.RouteConfigName != "routes" || d.Security != nil || len(d.HTTPFilters) != 1 || d.HTTPFilters[0].TypeURL != filterconfig.RouterTypeURL {
		t.Errorf("default chain %+v, want RDS \"routes\", plaintext, the router alone", d)
	}
	fc := s.FilterChains[0]
	if want := []netip.Prefix{netip.MustParsePrefix("10.1.0.0/16")}; fc.Name != "mtls" || len(fc.Match.SourcePrefixes) != 1 || fc.Match.SourcePrefixes[0] != want[0] {
		t.Errorf("chain %q matches sources %v, want \"mtls\" matching %v", fc.Name, fc.Match.SourcePrefixes, want)
	}
	if sec := fc.Security; sec == nil || sec.IdentityInstance != "ids" || sec.RootInstance != "roots" || !sec.RequireClientCert {
		t.Errorf("chain security %+v, want identity ids, roots roots, client certificates required", sec)
	}
	if len(fc.HTTPFilters) != 2 || fc.HTTPFilters[0].Name != "authz" || fc.HTTPFilters[1].TypeURL != filterconfig.RouterTypeURL {
		t.Errorf("chain filters %+v, want authz then the router", fc.HTTPFilters)
	}
	rc := fc.InlineRouteConfig
	if rc == nil || len(rc.VirtualHosts) != 1 || len(rc.VirtualHosts[0].Routes) != 2 {
		t.Fatalf("inline routes %+v, want one virtual host with two routes", rc)
	}
	if r := rc.VirtualHosts[0].Routes; r[0].Action.Kind != routeconfig.ActionNonForwarding || r[1].Action.Kind == routeconfig.ActionNonForwarding {
		t.Errorf("route actions %v, %v: want Serve non-forwarding and Forward not", r[0].Action.Kind, r[1].Action.Kind)
	}
	var cfg rbacv3.RBAC
	if err := fc.HTTPFilters[0].Config.UnmarshalTo(&cfg); err != nil {
		t.Fatal(err)
	}
	if got := cfg.GetRules().GetPolicies()["by-header"].GetPrincipals()[0].GetDirectRemoteIp().GetPrefixLen(); got.GetValue() != 8 {
		t.Errorf("SourceIP prefix_len = %v, want 8", got)
	}
}
