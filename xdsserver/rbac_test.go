package xdsserver_test

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	rbacconfigv3 "github.com/envoyproxy/go-control-plane/envoy/config/rbac/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	rbacv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/rbac/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/xdslens/xdslens/internal/testing/certtest"
	"github.com/xdslens/xdslens/internal/testing/servertest"
	"github.com/xdslens/xdslens/internal/testing/xdstest"
	"github.com/xdslens/xdslens/internal/xdswatch/demo/serverres"
	"github.com/xdslens/xdslens/xdsserver"
)

// A chain under mTLS with RBAC: the TestService is allowed to the client
// identity alone; the health service to anyone, through an RBACPerRoute
// override that turns RBAC off on its route. Decisions reach the hooks,
// denials the stdout audit logger.
func TestRBACOnServer(t *testing.T) {
	env := servertest.NewEnv(t, servertest.Options{})
	var stdout xdstest.SyncBuffer
	s := serve(t, env.Pool(), xdsserver.WithStdout(&stdout))
	rules := &rbacv3.RBAC{Rules: &rbacconfigv3.RBAC{
		Action: rbacconfigv3.RBAC_ALLOW,
		Policies: map[string]*rbacconfigv3.Policy{
			"test-service-client": serverres.Policy(serverres.PathPrefix("/grpc.testing.TestService/"), serverres.PrincipalExact(servertest.ClientSPIFFE)),
		},
		AuditLoggingOptions: &rbacconfigv3.RBAC_AuditLoggingOptions{
			AuditCondition: rbacconfigv3.RBAC_AuditLoggingOptions_ON_DENY,
			LoggerConfigs: []*rbacconfigv3.RBAC_AuditLoggingOptions_AuditLoggerConfig{{AuditLogger: &corev3.TypedExtensionConfig{
				Name: "stdout", TypedConfig: &anypb.Any{TypeUrl: "type.googleapis.com/envoy.extensions.rbac.audit_loggers.stream.v3.StdoutAuditLog"},
			}}},
		},
	}}
	health := serverres.Serve("/grpc.health.v1.Health/")
	health.TypedPerFilterConfig = map[string]*anypb.Any{"authz": serverres.MustAny(&rbacv3.RBACPerRoute{})}
	routes := serverres.Routes("r", health, serverres.Serve("/"))
	env.Set(serverres.Listener(s.name(), s.host, s.port, nil,
		serverres.Chain("mtls", nil, serverres.InlineHCM(routes, serverres.Filter("authz", rules)), serverres.TLS(servertest.Provider, servertest.Provider, true))))
	waitMode(t, s, xdsserver.ModeServing, "")

	ctx := ctxT(t)
	allowed := servertest.Dial(t, s.addr, grpc.WithTransportCredentials(env.ClientTLS(&certtest.Names{URIs: []string{servertest.ClientSPIFFE}})))
	other := servertest.Dial(t, s.addr, grpc.WithTransportCredentials(env.ClientTLS(&certtest.Names{URIs: []string{"spiffe://example.org/ns/default/sa/other"}})))
	for _, tc := range []struct {
		name   string
		conn   *grpc.ClientConn
		method string
		want   codes.Code
	}{
		{"allowed identity", allowed, emptyCall, codes.OK},
		{"other identity", other, emptyCall, codes.PermissionDenied},
		{"health, RBAC off on its route", other, healthCheck, codes.OK},
	} {
		if err := servertest.Call(ctx, tc.conn, tc.method); status.Code(err) != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
	s.ev.mu.Lock()
	got := s.ev.authz
	s.ev.mu.Unlock()
	want := []xdsserver.AuthzInfo{
		{Address: s.addr, Chain: "mtls", Filter: "authz", Method: emptyCall, Allowed: true, Policy: "test-service-client"},
		{Address: s.addr, Chain: "mtls", Filter: "authz", Method: emptyCall, Allowed: false},
	}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("decisions %+v, want %+v", got, want)
	}
	line := stdout.String()
	if strings.Count(line, "\n") != 1 || !strings.Contains(line, `"rpc_method":"`+emptyCall+`","principal":"spiffe://example.org/ns/default/sa/other","policy_name":"authz","matched_rule":"","authorized":false`) {
		t.Errorf("audit output %q, want one denial line", line)
	}
}

// An RBAC override wrapped in a FilterConfig marked disabled is applied
// as its config says, as gRPC C-core and grpc-go apply it (neither reads
// disabled): the route keeps an RBAC filter, here one that denies every
// RPC, rather than running none.
func TestRBACDisabledOverrideStillApplies(t *testing.T) {
	env := servertest.NewEnv(t, servertest.Options{})
	s := serve(t, env.Pool())
	denyAll := &rbacv3.RBACPerRoute{Rbac: &rbacv3.RBAC{Rules: &rbacconfigv3.RBAC{
		Action:   rbacconfigv3.RBAC_DENY,
		Policies: map[string]*rbacconfigv3.Policy{"all": serverres.Policy(serverres.AnyPermission, serverres.AnyPrincipal)},
	}}}
	empty := serverres.Serve(emptyCall)
	empty.TypedPerFilterConfig = map[string]*anypb.Any{"authz": serverres.MustAny(&routev3.FilterConfig{Config: serverres.MustAny(denyAll), Disabled: true})}
	allowAll := serverres.RBAC("authz", rbacconfigv3.RBAC_ALLOW, map[string]*rbacconfigv3.Policy{"all": serverres.Policy(serverres.AnyPermission, serverres.AnyPrincipal)})
	env.Set(serverres.Listener(s.name(), s.host, s.port, nil,
		serverres.Chain("c", nil, serverres.InlineHCM(serverres.Routes("r", empty, serverres.Serve("/")), allowAll), nil)))
	waitMode(t, s, xdsserver.ModeServing, "")
	ctx := ctxT(t)
	if code := callCode(t, ctx, s, emptyCall); code != codes.PermissionDenied {
		t.Errorf("EmptyCall, whose route's disabled override denies every RPC: %v, want PermissionDenied", code)
	}
	if code := callCode(t, ctx, s, unaryCall); code != codes.OK {
		t.Errorf("UnaryCall, on the route without override: %v, want OK", code)
	}
}

// RBAC's url_path matchers see an RPC's path as gRPC C-core canonicalizes
// it: a path spelled otherwise than the DENY rule cannot step past it to
// a handler that takes any method (grpc.UnknownServiceHandler, such as a
// proxy's), while the route matchers and the handler see it as sent.
func TestRBACURLPathCanonical(t *testing.T) {
	env := servertest.NewEnv(t, servertest.Options{})
	var mu sync.Mutex
	var handled []string
	unknown := grpc.UnknownServiceHandler(func(_ any, st grpc.ServerStream) error {
		m, _ := grpc.MethodFromServerStream(st)
		mu.Lock()
		handled = append(handled, m)
		mu.Unlock()
		return st.SendMsg(&emptyMsg{})
	})
	s := serve(t, env.Pool(), xdsserver.WithServerOptions(unknown))
	denyAdmin := serverres.RBAC("authz", rbacconfigv3.RBAC_DENY, map[string]*rbacconfigv3.Policy{
		"no-admin": serverres.Policy(serverres.PathPrefix("/pkg.Admin/"), serverres.AnyPrincipal),
	})
	env.Set(serverres.Listener(s.name(), s.host, s.port, nil,
		serverres.Chain("c", nil, serverres.InlineHCM(serverres.Routes("r", serverres.Serve("")), denyAdmin), nil)))
	waitMode(t, s, xdsserver.ModeServing, "")
	conn := s.plaintext(t)
	for method, want := range map[string]codes.Code{
		"/pkg.Public/Get":        codes.OK,
		"/pkg.Admin/Reset":       codes.PermissionDenied,
		"//pkg.Admin/Reset":      codes.PermissionDenied,
		"/x/../pkg.Admin/Reset":  codes.PermissionDenied,
		"/%70kg.Admin/Reset":     codes.PermissionDenied,
		"/pkg.Public/../Admin/x": codes.OK, // /pkg.Admin/x is not what it is: /Admin/x
	} {
		err := conn.Invoke(ctxT(t), method, &emptyMsg{}, &emptyMsg{})
		if got := status.Code(err); got != want {
			t.Errorf("%s: %v, want %v", method, err, want)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if want := []string{"/pkg.Public/Get", "/pkg.Public/../Admin/x"}; len(handled) != 2 || !slices.Contains(handled, want[0]) || !slices.Contains(handled, want[1]) {
		t.Errorf("the handler served %q, want %q", handled, want)
	}
}

// Two RBAC filters in one chain, DENY then ALLOW: an RPC goes on only
// when both let it, and the second is not asked about an RPC the first
// denied.
func TestRBACDenyThenAllow(t *testing.T) {
	env := servertest.NewEnv(t, servertest.Options{})
	s := serve(t, env.Pool())
	deny := serverres.RBAC("deny", rbacconfigv3.RBAC_DENY, map[string]*rbacconfigv3.Policy{
		"no-unary": serverres.Policy(serverres.PathPrefix(unaryCall), serverres.AnyPrincipal),
	})
	allow := serverres.RBAC("allow", rbacconfigv3.RBAC_ALLOW, map[string]*rbacconfigv3.Policy{
		"test-service": serverres.Policy(serverres.PathPrefix("/grpc.testing.TestService/"), serverres.AnyPrincipal),
	})
	env.Set(serverres.Listener(s.name(), s.host, s.port, nil,
		serverres.Chain("c", nil, serverres.InlineHCM(serverres.Routes("r", serverres.Serve("/")), deny, allow), nil)))
	waitMode(t, s, xdsserver.ModeServing, "")
	ctx := ctxT(t)
	for method, want := range map[string]codes.Code{emptyCall: codes.OK, unaryCall: codes.PermissionDenied, healthCheck: codes.PermissionDenied} {
		if got := callCode(t, ctx, s, method); got != want {
			t.Errorf("%s: %v, want %v", method, got, want)
		}
	}
	s.ev.mu.Lock()
	defer s.ev.mu.Unlock()
	asked := map[string][]string{} // method: the filters that decided, in order
	for _, d := range s.ev.authz {
		asked[d.Method] = append(asked[d.Method], fmt.Sprintf("%s:%v", d.Filter, d.Allowed))
	}
	for method, want := range map[string][]string{
		emptyCall:   {"deny:true", "allow:true"},
		unaryCall:   {"deny:false"},
		healthCheck: {"deny:true", "allow:false"},
	} {
		if !slices.Equal(asked[method], want) {
			t.Errorf("%s: decisions %q, want %q", method, asked[method], want)
		}
	}
}
