package httpfilter_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"net/netip"
	"strings"
	"sync"
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	rbacconfigv3 "github.com/envoyproxy/go-control-plane/envoy/config/rbac/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	rbacv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/rbac/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/xdslens/xdslens/httpfilter"
	"github.com/xdslens/xdslens/internal/testing/certtest"
)

func perms(ps ...*rbacconfigv3.Permission) []*rbacconfigv3.Permission { return ps }
func ids(ps ...*rbacconfigv3.Principal) []*rbacconfigv3.Principal     { return ps }

func andPerms(ps ...*rbacconfigv3.Permission) *rbacconfigv3.Permission {
	return &rbacconfigv3.Permission{Rule: &rbacconfigv3.Permission_AndRules{AndRules: &rbacconfigv3.Permission_Set{Rules: ps}}}
}
func orPerms(ps ...*rbacconfigv3.Permission) *rbacconfigv3.Permission {
	return &rbacconfigv3.Permission{Rule: &rbacconfigv3.Permission_OrRules{OrRules: &rbacconfigv3.Permission_Set{Rules: ps}}}
}
func notPerm(p *rbacconfigv3.Permission) *rbacconfigv3.Permission {
	return &rbacconfigv3.Permission{Rule: &rbacconfigv3.Permission_NotRule{NotRule: p}}
}
func headerPerm(h *routev3.HeaderMatcher) *rbacconfigv3.Permission {
	return &rbacconfigv3.Permission{Rule: &rbacconfigv3.Permission_Header{Header: h}}
}
func pathPerm(m *matcherv3.StringMatcher) *rbacconfigv3.Permission {
	return &rbacconfigv3.Permission{Rule: &rbacconfigv3.Permission_UrlPath{UrlPath: &matcherv3.PathMatcher{Rule: &matcherv3.PathMatcher_Path{Path: m}}}}
}
func cidr(addr string, bits uint32) *corev3.CidrRange {
	return &corev3.CidrRange{AddressPrefix: addr, PrefixLen: wrapperspb.UInt32(bits)}
}
func andIDs(ps ...*rbacconfigv3.Principal) *rbacconfigv3.Principal {
	return &rbacconfigv3.Principal{Identifier: &rbacconfigv3.Principal_AndIds{AndIds: &rbacconfigv3.Principal_Set{Ids: ps}}}
}
func orIDs(ps ...*rbacconfigv3.Principal) *rbacconfigv3.Principal {
	return &rbacconfigv3.Principal{Identifier: &rbacconfigv3.Principal_OrIds{OrIds: &rbacconfigv3.Principal_Set{Ids: ps}}}
}
func authID(name *matcherv3.StringMatcher) *rbacconfigv3.Principal {
	return &rbacconfigv3.Principal{Identifier: &rbacconfigv3.Principal_Authenticated_{Authenticated: &rbacconfigv3.Principal_Authenticated{PrincipalName: name}}}
}
func sourceID(r *corev3.CidrRange) *rbacconfigv3.Principal {
	return &rbacconfigv3.Principal{Identifier: &rbacconfigv3.Principal_SourceIp{SourceIp: r}}
}

func exact(s string) *matcherv3.StringMatcher {
	return &matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_Exact{Exact: s}}
}
func prefix(s string) *matcherv3.StringMatcher {
	return &matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_Prefix{Prefix: s}}
}
func regex(re string) *matcherv3.StringMatcher {
	return &matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_SafeRegex{SafeRegex: &matcherv3.RegexMatcher{Regex: re}}}
}
func header(name string, spec *routev3.HeaderMatcher) *routev3.HeaderMatcher {
	spec.Name = name
	return spec
}
func exactHeader(name, v string) *routev3.HeaderMatcher {
	return header(name, &routev3.HeaderMatcher{HeaderMatchSpecifier: &routev3.HeaderMatcher_ExactMatch{ExactMatch: v}})
}

// rules is an RBAC config with action and the policies given by name.
func rules(action rbacconfigv3.RBAC_Action, policies map[string]*rbacconfigv3.Policy) *rbacv3.RBAC {
	return &rbacv3.RBAC{Rules: &rbacconfigv3.RBAC{Action: action, Policies: policies}}
}

// env records what an RBAC interceptor reports.
type env struct {
	mu        sync.Mutex
	decisions []httpfilter.AuthzDecision
	stdout    bytes.Buffer
}

func (e *env) Write(p []byte) (int, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.stdout.Write(p)
}

func (e *env) lines() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return strings.Split(strings.TrimSuffix(e.stdout.String(), "\n"), "\n")
}

func (e *env) serverEnv() httpfilter.ServerEnv {
	return httpfilter.ServerEnv{FilterName: "authz", Stdout: e, Authz: func(d httpfilter.AuthzDecision) {
		e.mu.Lock()
		defer e.mu.Unlock()
		e.decisions = append(e.decisions, d)
	}}
}

// interceptor builds the RBAC filter's interceptor for cfg and override
// (either nil), through the registry.
func interceptor(t testing.TB, cfg *rbacv3.RBAC, override *rbacv3.RBACPerRoute, e httpfilter.ServerEnv) httpfilter.ServerInterceptor {
	t.Helper()
	f := httpfilter.Get(httpfilter.RBACTypeURL).(httpfilter.ServerFilter)
	a, err := anypb.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c, err := f.ParseConfig(a)
	if err != nil {
		t.Fatalf("ParseConfig: %v", err)
	}
	var o httpfilter.Config
	if override != nil {
		a, err := anypb.New(override)
		if err != nil {
			t.Fatal(err)
		}
		if o, err = f.ParseOverride(a); err != nil {
			t.Fatalf("ParseOverride: %v", err)
		}
	}
	in, err := f.BuildServerInterceptor(c, o, e)
	if err != nil {
		t.Fatalf("BuildServerInterceptor: %v", err)
	}
	return in
}

// rpc is one RPC to decide on.
type rpc struct {
	method string
	md     metadata.MD
	conn   *httpfilter.Conn
}

var (
	serverAddr = netip.MustParseAddrPort("10.0.0.1:8443")
	peerAddr   = netip.MustParseAddrPort("192.168.1.7:40000")
)

func defaultRPC() rpc {
	return rpc{
		method: "/pkg.Svc/Method",
		md:     metadata.Pairs(":authority", "svc.example.com", "content-type", "application/grpc+proto", "x-user", "alice"),
		conn:   httpfilter.NewConn(serverAddr, peerAddr, nil),
	}
}

// allowed runs in on r and says whether r may go on; a denial must be
// PERMISSION_DENIED.
func allowed(t testing.TB, in httpfilter.ServerInterceptor, r rpc) bool {
	t.Helper()
	ctx := metadata.NewIncomingContext(context.Background(), r.md)
	_, err := in.Intercept(ctx, httpfilter.ServerCall{Method: r.method, Conn: r.conn})
	if err != nil && status.Code(err) != codes.PermissionDenied {
		t.Fatalf("Intercept = %v, want nil or PERMISSION_DENIED", err)
	}
	return err == nil
}

// tlsConn is a connection from peerAddr with TLS, the client's certificate
// carrying names (none when nil).
func tlsConn(t testing.TB, ca *certtest.CA, names *certtest.Names) *httpfilter.Conn {
	st := &tls.ConnectionState{}
	if names != nil {
		st.PeerCertificates = append(st.PeerCertificates, ca.Issue(t, *names).Cert)
	}
	return httpfilter.NewConn(serverAddr, peerAddr, st)
}
