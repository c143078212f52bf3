package httpfilter

import (
	"context"
	"fmt"

	rbacv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/rbac/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/xdslens/xdslens/httpfilter/internal/rbac"
)

// Type URLs of the RBAC filter's config and override (gRFC A41).
const (
	RBACTypeURL         = TypeURLPrefix + "envoy.extensions.filters.http.rbac.v3.RBAC"
	RBACPerRouteTypeURL = TypeURLPrefix + "envoy.extensions.filters.http.rbac.v3.RBACPerRoute"
)

// errRBACDenied is what an RPC that RBAC denies fails with. As in gRPC
// C-core, the message says nothing of the policies: the server's hooks
// and audit loggers do.
var errRBACDenied = status.Error(codes.PermissionDenied, "Unauthorized RPC request rejected.")

// rbacFilter is the RBAC HTTP filter of xDS-enabled servers (gRFC A41,
// with gRFC A59's audit loggers). Its parsed configs are *rbac.Rules.
type rbacFilter struct{}

func (rbacFilter) TypeURLs() []string { return []string{RBACTypeURL, RBACPerRouteTypeURL} }

func (rbacFilter) ParseConfig(cfg *anypb.Any) (Config, error) {
	if cfg.GetTypeUrl() != RBACTypeURL {
		return nil, fmt.Errorf("RBAC: config of type %q, want %q", cfg.GetTypeUrl(), RBACTypeURL)
	}
	m := new(rbacv3.RBAC)
	if err := proto.Unmarshal(cfg.GetValue(), m); err != nil {
		return nil, fmt.Errorf("RBAC: %v", err)
	}
	return rbac.Compile(m)
}

// ParseOverride parses an RBACPerRoute: without rbac, RBAC does nothing
// for the scope that carries it.
func (rbacFilter) ParseOverride(cfg *anypb.Any) (Config, error) {
	if cfg.GetTypeUrl() != RBACPerRouteTypeURL {
		return nil, fmt.Errorf("RBAC: override of type %q, want %q", cfg.GetTypeUrl(), RBACPerRouteTypeURL)
	}
	m := new(rbacv3.RBACPerRoute)
	if err := proto.Unmarshal(cfg.GetValue(), m); err != nil {
		return nil, fmt.Errorf("RBACPerRoute: %v", err)
	}
	if m.GetRbac() == nil {
		return rbac.Compile(nil)
	}
	r, err := rbac.Compile(m.GetRbac())
	if err != nil {
		return nil, fmt.Errorf("rbac.%v", err)
	}
	return r, nil
}

func (rbacFilter) BuildServerInterceptor(cfg, override Config, env ServerEnv) (ServerInterceptor, error) {
	c := cfg
	if override != nil {
		c = override
	}
	rules, ok := c.(*rbac.Rules)
	if !ok {
		return nil, fmt.Errorf("RBAC filter %q: config of type %T", env.FilterName, c)
	}
	if !rules.Enforced() {
		return nil, nil
	}
	return &rbacInterceptor{
		engine: rbac.NewEngine(rules, rbac.EngineOptions{PolicyName: env.FilterName, Stdout: env.Stdout}),
		env:    env,
	}, nil
}

// rbacInterceptor runs one RBAC engine for the RPCs of a route.
type rbacInterceptor struct {
	engine *rbac.Engine
	env    ServerEnv
}

func (i *rbacInterceptor) Intercept(ctx context.Context, call ServerCall) (context.Context, error) {
	r := rbac.Request{Ctx: ctx, Method: call.Method}
	if c := call.Conn; c != nil {
		r.Local, r.Remote = c.Local, c.Remote
		r.TLS, r.Principals, r.SPIFFEID = c.TLS != nil, c.PeerPrincipals, c.SPIFFEID
	}
	d := i.engine.Decide(&r)
	if i.env.Authz != nil {
		i.env.Authz(AuthzDecision{FilterName: i.env.FilterName, Method: call.Method, Allowed: d.Allowed, Policy: d.Policy, Deny: d.Deny})
	}
	if !d.Allowed {
		return ctx, errRBACDenied
	}
	return ctx, nil
}

var _ ServerFilter = rbacFilter{}
