package compare_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	xdstypev3 "github.com/cncf/xds/go/xds/type/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	rbacconfigv3 "github.com/envoyproxy/go-control-plane/envoy/config/rbac/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	rbacv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/rbac/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/authz/audit"
	"google.golang.org/grpc/credentials"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/emptypb"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/xdslens/xdslens/internal/testing/certtest"
	"github.com/xdslens/xdslens/internal/testing/servertest"
	"github.com/xdslens/xdslens/internal/testing/xdstest"
	"github.com/xdslens/xdslens/internal/xdswatch/demo/serverres"
	"github.com/xdslens/xdslens/xdsserver"
)

// recorder is an audit logger registered with grpc-go's authz/audit
// registry, which both servers run (gRFC A59): each config's "server"
// says whose events it records.
type recorder struct {
	mu     sync.Mutex
	events map[string][]string
}

var auditRecorder = &recorder{events: map[string][]string{}}

const recorderName = "xdslens_compare_recorder"

func init() { audit.RegisterLoggerBuilder(recorderBuilder{}) }

type recorderBuilder struct{}

type recorderConfig struct {
	audit.LoggerConfig
	server string
}

func (recorderBuilder) Name() string { return recorderName }

func (recorderBuilder) ParseLoggerConfig(js json.RawMessage) (audit.LoggerConfig, error) {
	var c struct{ Server string }
	if err := json.Unmarshal(js, &c); err != nil {
		return nil, err
	}
	return &recorderConfig{server: c.Server}, nil
}

func (recorderBuilder) Build(c audit.LoggerConfig) audit.Logger {
	return recordFunc(func(e *audit.Event) {
		auditRecorder.mu.Lock()
		defer auditRecorder.mu.Unlock()
		s := c.(*recorderConfig).server
		auditRecorder.events[s] = append(auditRecorder.events[s],
			fmt.Sprintf("%s principal=%q policy=%q rule=%q authorized=%v", e.FullMethodName, e.Principal, e.PolicyName, e.MatchedRule, e.Authorized))
	})
}

type recordFunc func(*audit.Event)

func (f recordFunc) Log(e *audit.Event) { f(e) }

// rbacCase is one RBAC config of the table, selected by the header
// x-case; it is applied by an RBACPerRoute override on its own route.
type rbacCase struct {
	name     string
	rules    *rbacconfigv3.RBAC
	audited  bool
	requests []rbacRequest
}

// rbacRequest is one RPC of a case and the outcome both servers must
// give it.
type rbacRequest struct {
	client string // a key of the clients map
	local  string // the local address, "" for any
	method string
	md     []string
	want   string
}

func policy(perm *rbacconfigv3.Permission, id *rbacconfigv3.Principal) map[string]*rbacconfigv3.Policy {
	return map[string]*rbacconfigv3.Policy{"p": serverres.Policy(perm, id)}
}

// rbacListener is one mTLS chain whose RBAC filter "authz" allows
// everything, and whose routes apply each case's rules to the RPCs with
// its x-case header; the audit loggers' config names the server.
func rbacListener(t *testing.T, cases []rbacCase) listenerFunc {
	return func(side int, name, addr string) *listenerv3.Listener {
		server := sideNames[side]
		var routes []*routev3.Route
		for _, c := range cases {
			rules := c.rules
			if c.audited {
				v, err := structpb.NewStruct(map[string]any{"server": server})
				if err != nil {
					t.Fatal(err)
				}
				rules = protoClone(rules)
				rules.AuditLoggingOptions = &rbacconfigv3.RBAC_AuditLoggingOptions{
					AuditCondition: rbacconfigv3.RBAC_AuditLoggingOptions_ON_DENY_AND_ALLOW,
					LoggerConfigs: []*rbacconfigv3.RBAC_AuditLoggingOptions_AuditLoggerConfig{{AuditLogger: &corev3.TypedExtensionConfig{
						Name:        "recorder",
						TypedConfig: serverres.MustAny(&xdstypev3.TypedStruct{TypeUrl: "type.googleapis.com/" + recorderName, Value: v}),
					}}},
				}
			}
			r := serverres.Serve("/")
			r.Match.Headers = []*routev3.HeaderMatcher{{Name: "x-case", HeaderMatchSpecifier: &routev3.HeaderMatcher_ExactMatch{ExactMatch: c.name}}}
			r.TypedPerFilterConfig = map[string]*anypb.Any{"authz": serverres.MustAny(&rbacv3.RBACPerRoute{Rbac: &rbacv3.RBAC{Rules: rules}})}
			routes = append(routes, r)
		}
		routes = append(routes, serverres.Serve("/"))
		host, port := servertest.HostPort(t, addr)
		allowAll := serverres.RBAC("authz", rbacconfigv3.RBAC_ALLOW, policy(serverres.AnyPermission, serverres.AnyPrincipal))
		return serverres.Listener(name, host, port, nil, serverres.Chain("mtls", nil,
			serverres.InlineHCM(serverres.Routes("r", routes...), allowAll),
			serverres.TLS(servertest.Provider, servertest.Provider, true)))
	}
}

func TestSideBySideRBAC(t *testing.T) {
	t.Parallel()
	// The recorder is the process's (gRPC's audit registry is): this run
	// starts it empty, so that go test -count=N compares each run alone.
	auditRecorder.mu.Lock()
	clear(auditRecorder.events)
	auditRecorder.mu.Unlock()
	p := newServedPair(t, servertest.Options{})
	const other = "spiffe://example.org/ns/default/sa/other"
	clients := map[string]credentials.TransportCredentials{
		"spiffe": p.env.ClientTLS(&certtest.Names{URIs: []string{servertest.ClientSPIFFE}, DNS: []string{"both.example.com"}}),
		"other":  p.env.ClientTLS(&certtest.Names{URIs: []string{other}}),
		"dns":    p.env.ClientTLS(&certtest.Names{DNS: []string{"client.example.com"}}),
		"cn":     p.env.ClientTLS(&certtest.Names{CommonName: "client", Organization: "acme"}),
	}
	allow, deny := rbacconfigv3.RBAC_ALLOW, rbacconfigv3.RBAC_DENY
	rules := func(a rbacconfigv3.RBAC_Action, perm *rbacconfigv3.Permission, id *rbacconfigv3.Principal) *rbacconfigv3.RBAC {
		return &rbacconfigv3.RBAC{Action: a, Policies: policy(perm, id)}
	}
	cases := []rbacCase{
		{name: "method", rules: rules(allow, serverres.PathPrefix(emptyCall), serverres.AnyPrincipal), requests: []rbacRequest{
			{"spiffe", "", emptyCall, nil, "OK"},
			{"spiffe", "", unaryCall, nil, "PermissionDenied"},
		}},
		{name: "header", rules: rules(deny, serverres.HeaderExact("x-user", "mallory"), serverres.AnyPrincipal), requests: []rbacRequest{
			{"spiffe", "", emptyCall, []string{"x-user", "mallory"}, "PermissionDenied"},
			{"spiffe", "", emptyCall, []string{"x-user", "alice"}, "OK"},
			{"spiffe", "", emptyCall, nil, "OK"},
		}},
		{name: "principal", rules: rules(allow, serverres.AnyPermission, serverres.PrincipalExact(servertest.ClientSPIFFE)), requests: []rbacRequest{
			{"spiffe", "", emptyCall, nil, "OK"},
			{"other", "", emptyCall, nil, "PermissionDenied"},
			{"dns", "", emptyCall, nil, "PermissionDenied"},
		}},
		// A DNS SAN counts only when the certificate has no URI SAN.
		{name: "principal-dns", rules: rules(allow, serverres.AnyPermission, serverres.PrincipalExact("client.example.com")), requests: []rbacRequest{
			{"dns", "", emptyCall, nil, "OK"},
			{"spiffe", "", emptyCall, nil, "PermissionDenied"},
		}},
		{name: "principal-both", rules: rules(allow, serverres.AnyPermission, serverres.PrincipalExact("both.example.com")), requests: []rbacRequest{
			{"spiffe", "", emptyCall, nil, "PermissionDenied"},
		}},
		{name: "principal-subject", rules: rules(allow, serverres.AnyPermission, serverres.PrincipalExact("CN=client,O=acme")), requests: []rbacRequest{
			{"cn", "", emptyCall, nil, "OK"},
			{"dns", "", emptyCall, nil, "PermissionDenied"},
		}},
		{name: "source-ip", rules: rules(allow, serverres.AnyPermission, serverres.SourceIP("127.0.0.2", 32)), requests: []rbacRequest{
			{"spiffe", "127.0.0.2", emptyCall, nil, "OK"},
			{"spiffe", "127.0.0.1", emptyCall, nil, "PermissionDenied"},
		}},
		{name: "not-health", rules: rules(deny, &rbacconfigv3.Permission{Rule: &rbacconfigv3.Permission_NotRule{NotRule: serverres.PathPrefix("/grpc.health.v1.Health/")}}, serverres.AnyPrincipal),
			requests: []rbacRequest{
				{"spiffe", "", healthCheck, nil, "OK"},
				{"spiffe", "", emptyCall, nil, "PermissionDenied"},
			}},
		{name: "audited", audited: true, rules: rules(allow, serverres.PathPrefix(emptyCall), serverres.PrincipalExact(servertest.ClientSPIFFE)), requests: []rbacRequest{
			{"spiffe", "", emptyCall, nil, "OK"},
			{"spiffe", "", unaryCall, nil, "PermissionDenied"},
			{"other", "", emptyCall, nil, "PermissionDenied"},
		}},
	}
	p.set(rbacListener(t, cases))
	p.waitModes(t, "SERVING", xdstest.Timeout)
	p.eventually(t, "OK", clients["spiffe"], emptyCall, "x-case", "method")
	for _, c := range cases {
		for _, r := range c.requests {
			md := append([]string{"x-case", c.name}, r.md...)
			if got := p.both(t, clients[r.client], r.local, r.method, md...); got != r.want {
				t.Errorf("case %s, %s from %s %q %v: both %s, want %s", c.name, r.client, r.local, r.method, r.md, got, r.want)
			}
		}
	}
	// The audit loggers saw the same events, in order, from both servers,
	// but for a deliberate difference: the policy name of an event is the
	// RBAC filter's instance name in xdslens, as gRFC A59 says ("the xDS
	// RBAC filter name"), and empty in grpc-go.
	auditRecorder.mu.Lock()
	defer auditRecorder.mu.Unlock()
	for side, policyName := range []string{"authz", ""} {
		pn := fmt.Sprintf("policy=%q", policyName)
		want := []string{
			emptyCall + ` principal="` + servertest.ClientSPIFFE + `" ` + pn + ` rule="p" authorized=true`,
			unaryCall + ` principal="` + servertest.ClientSPIFFE + `" ` + pn + ` rule="" authorized=false`,
			emptyCall + ` principal="` + other + `" ` + pn + ` rule="" authorized=false`,
		}
		if got := auditRecorder.events[sideNames[side]]; !slices.Equal(got, want) {
			t.Errorf("%s's audit events %q, want %q", sideNames[side], got, want)
		}
	}
}

// An RBACPerRoute override wrapped in a FilterConfig marked disabled
// applies as its config says on both servers: neither gRPC reads
// disabled (grpc-go only with its experimental ext_proc or ext_authz
// switches on), so the route keeps its RBAC, here one denying every RPC.
func TestSideBySideRBACDisabledOverride(t *testing.T) {
	t.Parallel()
	p := newServedPair(t, servertest.Options{})
	denyAll := &rbacv3.RBACPerRoute{Rbac: &rbacv3.RBAC{Rules: &rbacconfigv3.RBAC{
		Action: rbacconfigv3.RBAC_DENY, Policies: policy(serverres.AnyPermission, serverres.AnyPrincipal),
	}}}
	p.set(func(_ int, name, addr string) *listenerv3.Listener {
		empty := serverres.Serve(emptyCall)
		empty.TypedPerFilterConfig = map[string]*anypb.Any{"authz": serverres.MustAny(&routev3.FilterConfig{Config: serverres.MustAny(denyAll), Disabled: true})}
		host, port := servertest.HostPort(t, addr)
		allowAll := serverres.RBAC("authz", rbacconfigv3.RBAC_ALLOW, policy(serverres.AnyPermission, serverres.AnyPrincipal))
		return serverres.Listener(name, host, port, nil,
			serverres.Chain("plain", nil, serverres.InlineHCM(serverres.Routes("r", empty, serverres.Serve("/")), allowAll), nil))
	})
	p.waitModes(t, "SERVING", xdstest.Timeout)
	p.eventually(t, "OK", plaintext, unaryCall)
	if got := p.both(t, plaintext, "", emptyCall); got != "PermissionDenied" {
		t.Errorf("EmptyCall under a disabled override that denies everything: both %s, want PermissionDenied", got)
	}
}

// A deliberate difference: RBAC's url_path. xdslens matches the path as
// gRPC C-core canonicalizes it, so a DENY rule on /pkg.Admin/ holds for
// /x/../pkg.Admin/Reset, which grpc-go's server hands to a
// grpc.UnknownServiceHandler (a proxy's, say); grpc-go's RBAC matches the
// path as sent and lets it through.
func TestSideBySideRBACURLPath(t *testing.T) {
	t.Parallel()
	handler := grpc.UnknownServiceHandler(func(_ any, st grpc.ServerStream) error { return st.SendMsg(&emptypb.Empty{}) })
	p := newServedPairWith(t, servertest.Options{}, serverOptions{
		ours:   []xdsserver.Option{xdsserver.WithServerOptions(handler)},
		theirs: []grpc.ServerOption{handler},
	})
	p.set(func(_ int, name, addr string) *listenerv3.Listener {
		host, port := servertest.HostPort(t, addr)
		deny := serverres.RBAC("authz", rbacconfigv3.RBAC_DENY, policy(serverres.PathPrefix("/pkg.Admin/"), serverres.AnyPrincipal))
		return serverres.Listener(name, host, port, nil,
			serverres.Chain("plain", nil, serverres.InlineHCM(serverres.Routes("r", serverres.Serve("")), deny), nil))
	})
	p.waitModes(t, "SERVING", xdstest.Timeout)
	p.eventually(t, "OK", plaintext, "/pkg.Public/Get")
	if got := p.both(t, plaintext, "", "/pkg.Admin/Reset"); got != "PermissionDenied" {
		t.Errorf("/pkg.Admin/Reset: both %s, want PermissionDenied", got)
	}
	for side, want := range []string{"PermissionDenied", "OK"} {
		if got := p.call(t, side, plaintext, "", "/x/../pkg.Admin/Reset"); got != want {
			t.Errorf("%s: /x/../pkg.Admin/Reset %s, want %s", sideNames[side], got, want)
		}
	}
}

// A deliberate difference: an RBAC string matcher with an empty prefix.
// gRPC C-core accepts it (its RBAC filter's config parser, through
// StringMatcher::Create), and it matches every value of a header that is
// sent; xdslens does as C-core. grpc-go rejects the Listener, and its
// server, which has no other, does not serve.
func TestSideBySideRBACEmptyPrefix(t *testing.T) {
	t.Parallel()
	p := newServedPair(t, servertest.Options{})
	anyUser := &rbacconfigv3.Permission{Rule: &rbacconfigv3.Permission_Header{Header: &routev3.HeaderMatcher{
		Name: "x-user", HeaderMatchSpecifier: &routev3.HeaderMatcher_StringMatch{StringMatch: &matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_Prefix{}}},
	}}}
	p.set(func(_ int, name, addr string) *listenerv3.Listener {
		host, port := servertest.HostPort(t, addr)
		return serverres.Listener(name, host, port, nil, serverres.Chain("plain", nil,
			serverres.InlineHCM(serverres.Routes("r", serverres.Serve("/")), serverres.RBAC("authz", rbacconfigv3.RBAC_DENY, policy(anyUser, serverres.AnyPrincipal))), nil))
	})
	p.waitEachMode(t, [2]string{"SERVING", "NOT_SERVING"}, xdstest.Timeout)
	// Every value of x-user is denied, the empty one included; an RPC
	// without one is not.
	for _, user := range []string{"mallory", ""} {
		if got := p.call(t, ours, plaintext, "", emptyCall, "x-user", user); got != "PermissionDenied" {
			t.Errorf("xdslens with x-user %q: %s, want PermissionDenied", user, got)
		}
	}
	if got := p.call(t, ours, plaintext, "", emptyCall); got != "OK" {
		t.Errorf("xdslens without x-user: %s, want OK", got)
	}
	const rejected = "empty prefix is not allowed"
	p.mu.Lock()
	why := p.why[theirs]
	p.mu.Unlock()
	if !strings.Contains(why, rejected) {
		t.Errorf("grpc-go is not serving because %q, want a reason saying %q", why, rejected)
	}
	if got := p.call(t, theirs, plaintext, "", emptyCall); got != "Unavailable" {
		t.Errorf("grpc-go: %s, want Unavailable (if grpc-go now accepts an empty prefix, this difference is gone)", got)
	}
}
