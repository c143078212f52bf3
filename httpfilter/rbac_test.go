package httpfilter_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"

	xdstypev3 "github.com/cncf/xds/go/xds/type/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	rbacconfigv3 "github.com/envoyproxy/go-control-plane/envoy/config/rbac/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	rbacv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/rbac/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"google.golang.org/grpc/authz/audit"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/xdslens/xdslens/httpfilter"
	"github.com/xdslens/xdslens/internal/testing/certtest"
)

// Builders of RBAC rules.
var (
	anyPerm = &rbacconfigv3.Permission{Rule: &rbacconfigv3.Permission_Any{Any: true}}
	anyID   = &rbacconfigv3.Principal{Identifier: &rbacconfigv3.Principal_Any{Any: true}}
)

func TestRBACPermissionsAndPrincipals(t *testing.T) {
	ca := certtest.NewCA(t, "ca")
	withMD := func(kv ...string) func(*rpc) {
		return func(r *rpc) { r.md = metadata.Join(r.md, metadata.Pairs(kv...)) }
	}
	withConn := func(c *httpfilter.Conn) func(*rpc) { return func(r *rpc) { r.conn = c } }
	withMethod := func(m string) func(*rpc) { return func(r *rpc) { r.method = m } }
	uriCert := tlsConn(t, ca, &certtest.Names{CommonName: "cn", DNS: []string{"client.example.com"}, URIs: []string{"spiffe://td/ns/a/sa/b"}})
	dnsCert := tlsConn(t, ca, &certtest.Names{CommonName: "cn", DNS: []string{"client.example.com"}})
	subjectCert := tlsConn(t, ca, &certtest.Names{CommonName: "client", Organization: "acme"})
	noCert := tlsConn(t, ca, nil)
	v6 := httpfilter.NewConn(netip.MustParseAddrPort("[2001:db8::1]:443"), netip.MustParseAddrPort("[2001:db8::2]:5000"), nil)

	tests := []struct {
		name   string
		perm   *rbacconfigv3.Permission // with any principal
		id     *rbacconfigv3.Principal  // with any permission
		change func(*rpc)
		want   bool
	}{
		{name: "any", perm: anyPerm, want: true},
		{name: "empty and_rules", perm: andPerms(), want: true},
		{name: "empty or_rules", perm: orPerms(), want: false},
		{name: "and_rules all", perm: andPerms(anyPerm, pathPerm(prefix("/pkg."))), want: true},
		{name: "and_rules one fails", perm: andPerms(anyPerm, pathPerm(prefix("/other."))), want: false},
		{name: "or_rules one", perm: orPerms(pathPerm(prefix("/other.")), pathPerm(exact("/pkg.Svc/Method"))), want: true},
		{name: "not_rule", perm: notPerm(pathPerm(prefix("/other."))), want: true},
		{name: "not_rule of any", perm: notPerm(anyPerm), want: false},

		{name: "url_path exact", perm: pathPerm(exact("/pkg.Svc/Method")), want: true},
		{name: "url_path exact other case", perm: pathPerm(exact("/PKG.svc/method")), want: false},
		{name: "url_path ignore_case", perm: pathPerm(&matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_Exact{Exact: "/PKG.svc/METHOD"}, IgnoreCase: true}), want: true},
		{name: "url_path suffix", perm: pathPerm(&matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_Suffix{Suffix: "/Method"}}), want: true},
		{name: "url_path contains ignore_case", perm: pathPerm(&matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_Contains{Contains: "SVC"}, IgnoreCase: true}), want: true},
		{name: "url_path regex whole", perm: pathPerm(regex("/pkg\\.Svc/.*")), want: true},
		{name: "url_path regex part only", perm: pathPerm(regex("Svc")), want: false},
		// url_path compares the path as gRPC C-core canonicalizes it, so
		// that a DENY rule on a method holds for every spelling of it.
		{name: "url_path after a dot segment", perm: pathPerm(prefix("/pkg.Svc/")), change: withMethod("/x/../pkg.Svc/Method"), want: true},
		{name: "url_path with doubled slashes", perm: pathPerm(exact("/pkg.Svc/Method")), change: withMethod("//pkg.Svc//Method"), want: true},
		{name: "url_path percent-escaped", perm: pathPerm(exact("/pkg.Svc/Method")), change: withMethod("/%70kg.Svc%2FMethod"), want: true},
		{name: "url_path without a leading slash", perm: pathPerm(exact("/pkg.Svc/Method")), change: withMethod("pkg.Svc/Method"), want: true},
		{name: "url_path above the root matches nothing", perm: pathPerm(prefix("/")), change: withMethod("/../pkg.Svc/Method"), want: false},
		{name: ":path header is the path as sent", perm: headerPerm(exactHeader(":path", "/pkg.Svc/Method")), change: withMethod("//pkg.Svc/Method"), want: false},

		{name: "header exact", perm: headerPerm(exactHeader("x-user", "alice")), want: true},
		{name: "header name in capitals", perm: headerPerm(exactHeader("X-User", "alice")), want: true},
		{name: "header exact other", perm: headerPerm(exactHeader("x-user", "bob")), want: false},
		{name: "header absent", perm: headerPerm(exactHeader("x-missing", "")), want: false},
		{name: "header absent inverted still fails", perm: headerPerm(header("x-missing", &routev3.HeaderMatcher{HeaderMatchSpecifier: &routev3.HeaderMatcher_ExactMatch{ExactMatch: "v"}, InvertMatch: true})), want: false},
		{name: "header inverted", perm: headerPerm(header("x-user", &routev3.HeaderMatcher{HeaderMatchSpecifier: &routev3.HeaderMatcher_ExactMatch{ExactMatch: "bob"}, InvertMatch: true})), want: true},
		{name: "header present", perm: headerPerm(header("x-user", &routev3.HeaderMatcher{HeaderMatchSpecifier: &routev3.HeaderMatcher_PresentMatch{PresentMatch: true}})), want: true},
		{name: "header not present", perm: headerPerm(header("x-missing", &routev3.HeaderMatcher{HeaderMatchSpecifier: &routev3.HeaderMatcher_PresentMatch{PresentMatch: false}})), want: true},
		{name: "header present inverted", perm: headerPerm(header("x-missing", &routev3.HeaderMatcher{HeaderMatchSpecifier: &routev3.HeaderMatcher_PresentMatch{PresentMatch: true}, InvertMatch: true})), want: true},
		{name: "header prefix", perm: headerPerm(header("x-user", &routev3.HeaderMatcher{HeaderMatchSpecifier: &routev3.HeaderMatcher_PrefixMatch{PrefixMatch: "al"}})), want: true},
		{name: "header suffix", perm: headerPerm(header("x-user", &routev3.HeaderMatcher{HeaderMatchSpecifier: &routev3.HeaderMatcher_SuffixMatch{SuffixMatch: "ice"}})), want: true},
		{name: "header contains", perm: headerPerm(header("x-user", &routev3.HeaderMatcher{HeaderMatchSpecifier: &routev3.HeaderMatcher_ContainsMatch{ContainsMatch: "lic"}})), want: true},
		{name: "header regex", perm: headerPerm(header("x-user", &routev3.HeaderMatcher{HeaderMatchSpecifier: &routev3.HeaderMatcher_SafeRegexMatch{SafeRegexMatch: &matcherv3.RegexMatcher{Regex: "a.*e"}}})), want: true},
		{name: "header string_match ignore_case", perm: headerPerm(header("x-user", &routev3.HeaderMatcher{HeaderMatchSpecifier: &routev3.HeaderMatcher_StringMatch{StringMatch: &matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_Prefix{Prefix: "ALI"}, IgnoreCase: true}}})), want: true},
		{name: "header range in", perm: headerPerm(header("x-n", &routev3.HeaderMatcher{HeaderMatchSpecifier: &routev3.HeaderMatcher_RangeMatch{RangeMatch: &typev3.Int64Range{Start: 10, End: 20}}})), change: withMD("x-n", "19"), want: true},
		{name: "header range end excluded", perm: headerPerm(header("x-n", &routev3.HeaderMatcher{HeaderMatchSpecifier: &routev3.HeaderMatcher_RangeMatch{RangeMatch: &typev3.Int64Range{Start: 10, End: 20}}})), change: withMD("x-n", "20"), want: false},
		{name: "header range not a number", perm: headerPerm(header("x-n", &routev3.HeaderMatcher{HeaderMatchSpecifier: &routev3.HeaderMatcher_RangeMatch{RangeMatch: &typev3.Int64Range{Start: 10, End: 20}}})), change: withMD("x-n", "1x"), want: false},
		{name: "header values joined with a comma", perm: headerPerm(exactHeader("x-multi", "a,b")), change: withMD("x-multi", "a", "x-multi", "b"), want: true},
		{name: "host is :authority", perm: headerPerm(exactHeader("host", "svc.example.com")), want: true},
		{name: ":authority", perm: headerPerm(exactHeader(":authority", "svc.example.com")), want: true},
		{name: ":path is the method", perm: headerPerm(exactHeader(":path", "/pkg.Svc/Method")), want: true},
		{name: ":method is POST", perm: headerPerm(exactHeader(":method", "POST")), want: true},
		{name: "content-type as the client sent it", perm: headerPerm(exactHeader("content-type", "application/grpc+proto")), want: true},
		{name: "te is never present", perm: headerPerm(header("te", &routev3.HeaderMatcher{HeaderMatchSpecifier: &routev3.HeaderMatcher_PresentMatch{PresentMatch: true}})), change: withMD("te", "trailers"), want: false},
		{name: "binary header in base64", perm: headerPerm(exactHeader("x-id-bin", "AQI")), change: withMD("x-id-bin", "\x01\x02"), want: true},

		{name: "destination_ip", perm: &rbacconfigv3.Permission{Rule: &rbacconfigv3.Permission_DestinationIp{DestinationIp: cidr("10.0.0.0", 8)}}, want: true},
		{name: "destination_ip other", perm: &rbacconfigv3.Permission{Rule: &rbacconfigv3.Permission_DestinationIp{DestinationIp: cidr("10.1.0.0", 16)}}, want: false},
		{name: "destination_ip IPv4-mapped range", perm: &rbacconfigv3.Permission{Rule: &rbacconfigv3.Permission_DestinationIp{DestinationIp: cidr("::ffff:10.0.0.0", 104)}}, want: true},
		{name: "destination_ip IPv6", perm: &rbacconfigv3.Permission{Rule: &rbacconfigv3.Permission_DestinationIp{DestinationIp: cidr("2001:db8::", 32)}}, change: withConn(v6), want: true},
		{name: "destination_ip v4 range, v6 address", perm: &rbacconfigv3.Permission{Rule: &rbacconfigv3.Permission_DestinationIp{DestinationIp: cidr("0.0.0.0", 0)}}, change: withConn(v6), want: false},
		{name: "destination_port", perm: &rbacconfigv3.Permission{Rule: &rbacconfigv3.Permission_DestinationPort{DestinationPort: 8443}}, want: true},
		{name: "destination_port other", perm: &rbacconfigv3.Permission{Rule: &rbacconfigv3.Permission_DestinationPort{DestinationPort: 443}}, want: false},
		{name: "metadata never", perm: &rbacconfigv3.Permission{Rule: &rbacconfigv3.Permission_Metadata{Metadata: &matcherv3.MetadataMatcher{}}}, want: false},
		{name: "metadata inverted always", perm: &rbacconfigv3.Permission{Rule: &rbacconfigv3.Permission_Metadata{Metadata: &matcherv3.MetadataMatcher{Invert: true}}}, want: true},
		{name: "requested_server_name empty", perm: &rbacconfigv3.Permission{Rule: &rbacconfigv3.Permission_RequestedServerName{RequestedServerName: exact("")}}, want: true},
		{name: "requested_server_name other", perm: &rbacconfigv3.Permission{Rule: &rbacconfigv3.Permission_RequestedServerName{RequestedServerName: exact("svc.example.com")}}, change: withConn(uriCert), want: false},

		{name: "source_ip", id: sourceID(cidr("192.168.0.0", 16)), want: true},
		{name: "source_ip other", id: sourceID(cidr("192.169.0.0", 16)), want: false},
		{name: "direct_remote_ip", id: &rbacconfigv3.Principal{Identifier: &rbacconfigv3.Principal_DirectRemoteIp{DirectRemoteIp: cidr("192.168.1.7", 32)}}, want: true},
		{name: "remote_ip", id: &rbacconfigv3.Principal{Identifier: &rbacconfigv3.Principal_RemoteIp{RemoteIp: cidr("192.168.1.0", 24)}}, want: true},
		{name: "and_ids", id: andIDs(anyID, sourceID(cidr("192.168.0.0", 16))), want: true},
		{name: "or_ids none", id: orIDs(sourceID(cidr("10.0.0.0", 8))), want: false},
		{name: "not_id", id: &rbacconfigv3.Principal{Identifier: &rbacconfigv3.Principal_NotId{NotId: sourceID(cidr("10.0.0.0", 8))}}, want: true},
		{name: "principal header", id: &rbacconfigv3.Principal{Identifier: &rbacconfigv3.Principal_Header{Header: exactHeader("x-user", "alice")}}, want: true},
		{name: "principal url_path", id: &rbacconfigv3.Principal{Identifier: &rbacconfigv3.Principal_UrlPath{UrlPath: &matcherv3.PathMatcher{Rule: &matcherv3.PathMatcher_Path{Path: prefix("/pkg")}}}}, want: true},

		{name: "authenticated, plaintext", id: authID(nil), want: false},
		{name: "authenticated, TLS without client certificate", id: authID(nil), change: withConn(noCert), want: true},
		{name: "principal_name, plaintext", id: authID(exact("")), want: false},
		{name: "principal_name empty, no client certificate", id: authID(exact("")), change: withConn(noCert), want: true},
		{name: "principal_name URI SAN", id: authID(exact("spiffe://td/ns/a/sa/b")), change: withConn(uriCert), want: true},
		{name: "principal_name DNS not checked when a URI SAN exists", id: authID(exact("client.example.com")), change: withConn(uriCert), want: false},
		{name: "principal_name subject not checked when SANs exist", id: authID(prefix("CN=")), change: withConn(dnsCert), want: false},
		{name: "principal_name DNS SAN", id: authID(exact("client.example.com")), change: withConn(dnsCert), want: true},
		{name: "principal_name subject", id: authID(exact("CN=client,O=acme")), change: withConn(subjectCert), want: true},
		{name: "principal_name regex", id: authID(regex("spiffe://td/ns/[^/]+/sa/b")), change: withConn(uriCert), want: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := &rbacconfigv3.Policy{Permissions: perms(anyPerm), Principals: ids(anyID)}
			if tc.perm != nil {
				p.Permissions = perms(tc.perm)
			}
			if tc.id != nil {
				p.Principals = ids(tc.id)
			}
			r := defaultRPC()
			if tc.change != nil {
				tc.change(&r)
			}
			allow := interceptor(t, rules(rbacconfigv3.RBAC_ALLOW, map[string]*rbacconfigv3.Policy{"p": p}), nil, httpfilter.ServerEnv{})
			if got := allowed(t, allow, r); got != tc.want {
				t.Errorf("ALLOW policy: allowed = %v, want %v", got, tc.want)
			}
			deny := interceptor(t, rules(rbacconfigv3.RBAC_DENY, map[string]*rbacconfigv3.Policy{"p": p}), nil, httpfilter.ServerEnv{})
			if got := allowed(t, deny, r); got == tc.want {
				t.Errorf("DENY policy: allowed = %v, want %v", got, !tc.want)
			}
		})
	}
}

func TestRBACDecisionsAndAudit(t *testing.T) {
	ca := certtest.NewCA(t, "ca")
	spiffe := tlsConn(t, ca, &certtest.Names{URIs: []string{"spiffe://td/ns/a/sa/b"}})
	policies := map[string]*rbacconfigv3.Policy{
		// Both b-admin and a-admin match /pkg.Admin/ RPCs: a-admin wins, by
		// name.
		"b-admin": {Permissions: perms(pathPerm(prefix("/pkg.Admin/"))), Principals: ids(anyID)},
		"a-admin": {Permissions: perms(pathPerm(prefix("/pkg.Admin/"))), Principals: ids(anyID)},
		"reader":  {Permissions: perms(pathPerm(exact("/pkg.Svc/Read"))), Principals: ids(authID(exact("spiffe://td/ns/a/sa/b")))},
	}
	stdoutLogger := &rbacconfigv3.RBAC_AuditLoggingOptions_AuditLoggerConfig{AuditLogger: &corev3.TypedExtensionConfig{
		Name: "stdout", TypedConfig: &anypb.Any{TypeUrl: "type.googleapis.com/envoy.extensions.rbac.audit_loggers.stream.v3.StdoutAuditLog"},
	}}
	type call struct {
		method  string
		conn    *httpfilter.Conn
		allowed bool
		policy  string
	}
	calls := []call{
		{"/pkg.Admin/Reset", nil, true, "a-admin"},
		{"/pkg.Svc/Read", spiffe, true, "reader"},
		{"/pkg.Svc/Read", nil, false, ""},
		{"/pkg.Svc/Write", spiffe, false, ""},
	}
	for _, tc := range []struct {
		cond      rbacconfigv3.RBAC_AuditLoggingOptions_AuditCondition
		onAllow   bool
		onDeny    bool
		condition string
	}{
		{rbacconfigv3.RBAC_AuditLoggingOptions_NONE, false, false, "NONE"},
		{rbacconfigv3.RBAC_AuditLoggingOptions_ON_DENY, false, true, "ON_DENY"},
		{rbacconfigv3.RBAC_AuditLoggingOptions_ON_ALLOW, true, false, "ON_ALLOW"},
		{rbacconfigv3.RBAC_AuditLoggingOptions_ON_DENY_AND_ALLOW, true, true, "ON_DENY_AND_ALLOW"},
	} {
		t.Run(tc.condition, func(t *testing.T) {
			cfg := rules(rbacconfigv3.RBAC_ALLOW, policies)
			cfg.Rules.AuditLoggingOptions = &rbacconfigv3.RBAC_AuditLoggingOptions{AuditCondition: tc.cond, LoggerConfigs: []*rbacconfigv3.RBAC_AuditLoggingOptions_AuditLoggerConfig{stdoutLogger}}
			e := &env{}
			in := interceptor(t, cfg, nil, e.serverEnv())
			var wantLines []map[string]any
			for _, c := range calls {
				r := defaultRPC()
				r.method = c.method
				if c.conn != nil {
					r.conn = c.conn
				}
				if got := allowed(t, in, r); got != c.allowed {
					t.Errorf("%s: allowed = %v, want %v", c.method, got, c.allowed)
				}
				if (c.allowed && tc.onAllow) || (!c.allowed && tc.onDeny) {
					principal := ""
					if c.conn != nil {
						principal = "spiffe://td/ns/a/sa/b"
					}
					wantLines = append(wantLines, map[string]any{"rpc_method": c.method, "principal": principal,
						"policy_name": "authz", "matched_rule": c.policy, "authorized": c.allowed})
				}
			}
			for i, c := range calls {
				want := httpfilter.AuthzDecision{FilterName: "authz", Method: c.method, Allowed: c.allowed, Policy: c.policy}
				if i >= len(e.decisions) || e.decisions[i] != want {
					t.Errorf("decision %d = %+v, want %+v", i, e.decisions[i:min(i+1, len(e.decisions))], want)
				}
			}
			lines := e.lines()
			if len(wantLines) == 0 {
				if lines[0] != "" {
					t.Errorf("audit lines %q, want none", lines)
				}
				return
			}
			if len(lines) != len(wantLines) {
				t.Fatalf("audit lines %q, want %d", lines, len(wantLines))
			}
			for i, line := range lines {
				var got struct {
					Event map[string]any `json:"grpc_audit_log"`
				}
				if err := json.Unmarshal([]byte(line), &got); err != nil {
					t.Fatalf("line %q: %v", line, err)
				}
				if !strings.HasPrefix(line, `{"grpc_audit_log":{"timestamp":"`) {
					t.Errorf("line %q does not start with the timestamp", line)
				}
				ts, _ := got.Event["timestamp"].(string)
				delete(got.Event, "timestamp")
				if ts == "" || len(got.Event) != len(wantLines[i]) {
					t.Errorf("line %q: want a timestamp and %v", line, wantLines[i])
				}
				for k, v := range wantLines[i] {
					if got.Event[k] != v {
						t.Errorf("line %d %q = %v, want %v", i, k, got.Event[k], v)
					}
				}
			}
		})
	}
}

func TestRBACDenyAction(t *testing.T) {
	e := &env{}
	in := interceptor(t, rules(rbacconfigv3.RBAC_DENY, map[string]*rbacconfigv3.Policy{
		"no-admin": {Permissions: perms(pathPerm(prefix("/pkg.Admin/"))), Principals: ids(anyID)},
	}), nil, e.serverEnv())
	r := defaultRPC()
	r.method = "/pkg.Admin/Reset"
	ctx := metadata.NewIncomingContext(context.Background(), r.md)
	_, err := in.Intercept(ctx, httpfilter.ServerCall{Method: r.method, Conn: r.conn})
	if status.Code(err) != codes.PermissionDenied || strings.Contains(status.Convert(err).Message(), "no-admin") {
		t.Errorf("denied RPC: %v, want PERMISSION_DENIED that names no policy", err)
	}
	if !allowed(t, in, defaultRPC()) {
		t.Error("an RPC no DENY policy matches was denied")
	}
	want := []httpfilter.AuthzDecision{
		{FilterName: "authz", Method: "/pkg.Admin/Reset", Allowed: false, Policy: "no-admin", Deny: true},
		{FilterName: "authz", Method: "/pkg.Svc/Method", Allowed: true, Deny: true},
	}
	if len(e.decisions) != 2 || e.decisions[0] != want[0] || e.decisions[1] != want[1] {
		t.Errorf("decisions = %+v, want %+v", e.decisions, want)
	}
}

func TestRBACNotEnforced(t *testing.T) {
	denyAll := rules(rbacconfigv3.RBAC_DENY, map[string]*rbacconfigv3.Policy{"all": {Permissions: perms(anyPerm), Principals: ids(anyID)}})
	for _, tc := range []struct {
		name     string
		cfg      *rbacv3.RBAC
		override *rbacv3.RBACPerRoute
	}{
		{"no rules", &rbacv3.RBAC{}, nil},
		{"LOG", rules(rbacconfigv3.RBAC_LOG, denyAll.Rules.Policies), nil},
		{"RBACPerRoute without rbac", denyAll, &rbacv3.RBACPerRoute{}},
		{"RBACPerRoute without rules", denyAll, &rbacv3.RBACPerRoute{Rbac: &rbacv3.RBAC{}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if in := interceptor(t, tc.cfg, tc.override, httpfilter.ServerEnv{}); in != nil {
				t.Errorf("interceptor = %T, want nil: nothing is enforced", in)
			}
		})
	}
	// An override with rules replaces the filter's.
	allowAll := &rbacv3.RBACPerRoute{Rbac: rules(rbacconfigv3.RBAC_ALLOW, denyAll.Rules.Policies)}
	if !allowed(t, interceptor(t, denyAll, allowAll, httpfilter.ServerEnv{}), defaultRPC()) {
		t.Error("an ALLOW override did not replace the filter's DENY rules")
	}
	if allowed(t, interceptor(t, denyAll, nil, httpfilter.ServerEnv{}), defaultRPC()) {
		t.Error("DENY all allowed an RPC")
	}
}

func TestRBACParseErrors(t *testing.T) {
	f := httpfilter.Get(httpfilter.RBACTypeURL)
	ts, err := anypb.New(&xdstypev3.TypedStruct{TypeUrl: httpfilter.RBACTypeURL})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.ParseConfig(ts); err == nil {
		t.Error("ParseConfig of a TypedStruct succeeded")
	}
	bad, err := anypb.New(&rbacv3.RBACPerRoute{Rbac: rules(rbacconfigv3.RBAC_ALLOW, map[string]*rbacconfigv3.Policy{
		"p": {Permissions: perms(headerPerm(exactHeader("grpc-timeout", "1S"))), Principals: ids(anyID)},
	})})
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.ParseOverride(bad)
	if want := `rbac.rules.policies["p"].permissions[0].header.name: "grpc-timeout": names starting with "grpc-" are not allowed in RBAC`; err == nil || err.Error() != want {
		t.Errorf("ParseOverride = %v, want %q", err, want)
	}
	if _, err := f.ParseOverride(&anypb.Any{TypeUrl: httpfilter.RBACTypeURL}); err == nil {
		t.Error("ParseOverride of an RBAC (not RBACPerRoute) succeeded")
	}
}

// recordingLogger is an audit logger registered with grpc-go's authz/audit
// registry, as a user's would be; it records events with its config's
// "tag".
type recordingLogger struct {
	mu     sync.Mutex
	events []string
}

type recordingBuilder struct{ l *recordingLogger }

type recordingConfig struct {
	audit.LoggerConfig
	tag string
}

func (recordingBuilder) Name() string { return "xdslens_recording_logger" }

func (recordingBuilder) ParseLoggerConfig(js json.RawMessage) (audit.LoggerConfig, error) {
	var c struct{ Tag string }
	if err := json.Unmarshal(js, &c); err != nil {
		return nil, err
	}
	return &recordingConfig{tag: c.Tag}, nil
}

func (b recordingBuilder) Build(c audit.LoggerConfig) audit.Logger {
	return loggerFunc(func(e *audit.Event) {
		b.l.mu.Lock()
		defer b.l.mu.Unlock()
		b.l.events = append(b.l.events, fmt.Sprintf("%s %s %s %s %s %v", c.(*recordingConfig).tag, e.FullMethodName, e.Principal, e.PolicyName, e.MatchedRule, e.Authorized))
	})
}

type loggerFunc func(*audit.Event)

func (f loggerFunc) Log(e *audit.Event) { f(e) }

func TestRBACCustomAuditLogger(t *testing.T) {
	rec := &recordingLogger{}
	audit.RegisterLoggerBuilder(recordingBuilder{rec})
	v, err := structpb.NewStruct(map[string]any{"tag": "T"})
	if err != nil {
		t.Fatal(err)
	}
	ts, err := anypb.New(&xdstypev3.TypedStruct{TypeUrl: "type.googleapis.com/xdslens_recording_logger", Value: v})
	if err != nil {
		t.Fatal(err)
	}
	cfg := rules(rbacconfigv3.RBAC_DENY, map[string]*rbacconfigv3.Policy{"deny-write": {Permissions: perms(pathPerm(exact("/pkg.Svc/Write"))), Principals: ids(anyID)}})
	cfg.Rules.AuditLoggingOptions = &rbacconfigv3.RBAC_AuditLoggingOptions{
		AuditCondition: rbacconfigv3.RBAC_AuditLoggingOptions_ON_DENY_AND_ALLOW,
		LoggerConfigs: []*rbacconfigv3.RBAC_AuditLoggingOptions_AuditLoggerConfig{
			{AuditLogger: &corev3.TypedExtensionConfig{Name: "rec", TypedConfig: ts}},
			{AuditLogger: &corev3.TypedExtensionConfig{Name: "unknown", TypedConfig: &anypb.Any{TypeUrl: "type.googleapis.com/no.Such"}}, IsOptional: true},
		},
	}
	in := interceptor(t, cfg, nil, httpfilter.ServerEnv{FilterName: "authz"})
	r := defaultRPC()
	allowed(t, in, r)
	r.method = "/pkg.Svc/Write"
	allowed(t, in, r)
	want := []string{"T /pkg.Svc/Method  authz  true", "T /pkg.Svc/Write  authz deny-write false"}
	if !slices.Equal(rec.events, want) {
		t.Errorf("events = %q, want %q", rec.events, want)
	}
}
