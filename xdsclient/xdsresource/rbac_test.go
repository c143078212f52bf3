package xdsresource

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/xdslens/xdslens/xdsclient/xdsresource/filterconfig"

	udpatypev1 "github.com/cncf/xds/go/udpa/type/v1"
	xdscorev3 "github.com/cncf/xds/go/xds/core/v3"
	xdsmatcherv3 "github.com/cncf/xds/go/xds/type/matcher/v3"
	xdstypev3 "github.com/cncf/xds/go/xds/type/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	rbacconfigv3 "github.com/envoyproxy/go-control-plane/envoy/config/rbac/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	rbacv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/rbac/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"google.golang.org/grpc/authz/audit"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/structpb"
)

// rbacServer returns a server listener whose only chain runs the filter
// "rbac" with cfg, then the router.
func rbacServer(t testing.TB, cfg proto.Message) *listenerv3.Listener {
	hcm := rdsHCM(t)
	hcm.HttpFilters = []*hcmv3.HttpFilter{httpFilter(t, "rbac", cfg), routerFilter(t)}
	c := chain(t, "c", nil)
	c.Filters = []*listenerv3.Filter{hcmFilter(t, hcm)}
	return serverLis(c)
}

// rbacRules returns an RBAC config with action and one policy "p".
func rbacRules(action rbacconfigv3.RBAC_Action, p *rbacconfigv3.Policy) *rbacv3.RBAC {
	return &rbacv3.RBAC{Rules: &rbacconfigv3.RBAC{Action: action, Policies: map[string]*rbacconfigv3.Policy{"p": p}}}
}

// allowPerm is an ALLOW config whose policy "p" has the permission perm and
// any principal.
func allowPerm(perm *rbacconfigv3.Permission) *rbacv3.RBAC {
	return rbacRules(rbacconfigv3.RBAC_ALLOW, &rbacconfigv3.Policy{Permissions: []*rbacconfigv3.Permission{perm}, Principals: []*rbacconfigv3.Principal{anyID}})
}

// denyID is a DENY config whose policy "p" has any permission and the
// principal id.
func denyID(id *rbacconfigv3.Principal) *rbacv3.RBAC {
	return rbacRules(rbacconfigv3.RBAC_DENY, &rbacconfigv3.Policy{Permissions: []*rbacconfigv3.Permission{anyPerm}, Principals: []*rbacconfigv3.Principal{id}})
}

var (
	anyPerm = &rbacconfigv3.Permission{Rule: &rbacconfigv3.Permission_Any{Any: true}}
	anyID   = &rbacconfigv3.Principal{Identifier: &rbacconfigv3.Principal_Any{Any: true}}
)

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

func dstIPPerm(r *corev3.CidrRange) *rbacconfigv3.Permission {
	return &rbacconfigv3.Permission{Rule: &rbacconfigv3.Permission_DestinationIp{DestinationIp: r}}
}

func andIDs(ids ...*rbacconfigv3.Principal) *rbacconfigv3.Principal {
	return &rbacconfigv3.Principal{Identifier: &rbacconfigv3.Principal_AndIds{AndIds: &rbacconfigv3.Principal_Set{Ids: ids}}}
}

func orIDs(ids ...*rbacconfigv3.Principal) *rbacconfigv3.Principal {
	return &rbacconfigv3.Principal{Identifier: &rbacconfigv3.Principal_OrIds{OrIds: &rbacconfigv3.Principal_Set{Ids: ids}}}
}

func headerID(h *routev3.HeaderMatcher) *rbacconfigv3.Principal {
	return &rbacconfigv3.Principal{Identifier: &rbacconfigv3.Principal_Header{Header: h}}
}

func authID(name *matcherv3.StringMatcher) *rbacconfigv3.Principal {
	return &rbacconfigv3.Principal{Identifier: &rbacconfigv3.Principal_Authenticated_{Authenticated: &rbacconfigv3.Principal_Authenticated{PrincipalName: name}}}
}

func exactHeader(name, v string) *routev3.HeaderMatcher {
	return &routev3.HeaderMatcher{Name: name, HeaderMatchSpecifier: &routev3.HeaderMatcher_ExactMatch{ExactMatch: v}}
}

func exactStr(s string) *matcherv3.StringMatcher {
	return &matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_Exact{Exact: s}}
}

func regexStr(re string) *matcherv3.StringMatcher {
	return &matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_SafeRegex{SafeRegex: &matcherv3.RegexMatcher{Regex: re}}}
}

// policyWith returns a policy with any permission and principal, unmarshalled
// over raw, the wire bytes of further fields.
func policyWith(t testing.TB, raw []byte) *rbacconfigv3.Policy {
	p := &rbacconfigv3.Policy{Permissions: []*rbacconfigv3.Permission{anyPerm}, Principals: []*rbacconfigv3.Principal{anyID}}
	opts := proto.UnmarshalOptions{Merge: true}
	if err := opts.Unmarshal(raw, p); err != nil {
		t.Fatalf("Unmarshal policy: %v", err)
	}
	return p
}

// Wire bytes of a Policy with an empty condition (field 3) or
// checked_condition (field 4): the CEL types are not imported here.
var (
	rawCondition        = []byte{0x1a, 0x00}
	rawCheckedCondition = []byte{0x22, 0x00}
)

func TestRBACAccepted(t *testing.T) {
	everyPermission := allowPerm(orPerms(
		anyPerm,
		andPerms(),
		notPerm(andPerms(anyPerm, notPerm(anyPerm))),
		headerPerm(exactHeader(":path", "/svc/M")),
		headerPerm(&routev3.HeaderMatcher{Name: "x-prefix", HeaderMatchSpecifier: &routev3.HeaderMatcher_PrefixMatch{}}),
		headerPerm(&routev3.HeaderMatcher{Name: "x-re", HeaderMatchSpecifier: &routev3.HeaderMatcher_SafeRegexMatch{SafeRegexMatch: &matcherv3.RegexMatcher{Regex: "a+b*"}}}),
		headerPerm(&routev3.HeaderMatcher{Name: "x-range", HeaderMatchSpecifier: &routev3.HeaderMatcher_RangeMatch{RangeMatch: &typev3.Int64Range{Start: 5, End: 5}}}),
		headerPerm(&routev3.HeaderMatcher{Name: "x-present", HeaderMatchSpecifier: &routev3.HeaderMatcher_PresentMatch{PresentMatch: true}}),
		headerPerm(&routev3.HeaderMatcher{Name: "x-str", HeaderMatchSpecifier: &routev3.HeaderMatcher_StringMatch{StringMatch: regexStr("[a-z]+")}}),
		pathPerm(&matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_Contains{}, IgnoreCase: true}),
		headerPerm(&routev3.HeaderMatcher{Name: "x-empty", HeaderMatchSpecifier: &routev3.HeaderMatcher_StringMatch{StringMatch: &matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_Prefix{}}}}),
		&rbacconfigv3.Permission{Rule: &rbacconfigv3.Permission_RequestedServerName{RequestedServerName: &matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_Exact{}}}},
		dstIPPerm(cidr("10.0.0.0", 8)),
		dstIPPerm(&corev3.CidrRange{AddressPrefix: "2001:db8::"}),
		dstIPPerm(cidr("::ffff:10.0.0.1", 128)),
		&rbacconfigv3.Permission{Rule: &rbacconfigv3.Permission_DestinationPort{DestinationPort: 70000}},
		&rbacconfigv3.Permission{Rule: &rbacconfigv3.Permission_Metadata{Metadata: &matcherv3.MetadataMatcher{Invert: true}}},
		&rbacconfigv3.Permission{Rule: &rbacconfigv3.Permission_RequestedServerName{RequestedServerName: &matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_Suffix{Suffix: ".example.com"}}}},
	))
	everyPrincipal := denyID(orIDs(
		anyID,
		andIDs(),
		&rbacconfigv3.Principal{Identifier: &rbacconfigv3.Principal_NotId{NotId: andIDs(anyID)}},
		authID(nil),
		authID(regexStr("spiffe://[^/]+/ns/.*")),
		authID(&matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_Suffix{}}),
		&rbacconfigv3.Principal{Identifier: &rbacconfigv3.Principal_SourceIp{SourceIp: cidr("192.168.0.0", 16)}},
		&rbacconfigv3.Principal{Identifier: &rbacconfigv3.Principal_DirectRemoteIp{DirectRemoteIp: cidr("0.0.0.0", 0)}},
		&rbacconfigv3.Principal{Identifier: &rbacconfigv3.Principal_RemoteIp{RemoteIp: cidr("fe80::", 10)}},
		headerID(exactHeader("host", "example.com")),
		headerID(exactHeader(":authority", "example.com")),
		headerID(exactHeader("Host", "example.com")),
		headerID(exactHeader("x-grpc-trace", "1")),
		&rbacconfigv3.Principal{Identifier: &rbacconfigv3.Principal_UrlPath{UrlPath: &matcherv3.PathMatcher{Rule: &matcherv3.PathMatcher_Path{Path: exactStr("/svc/M")}}}},
		&rbacconfigv3.Principal{Identifier: &rbacconfigv3.Principal_Metadata{Metadata: &matcherv3.MetadataMatcher{}}},
	))
	// Ignored: LOG rules are not read, nor their audit_logging_options;
	// shadow_rules and matcher are never read.
	logRules := rbacRules(rbacconfigv3.RBAC_LOG, policyWith(t, rawCondition))
	logRules.Rules.Policies["q"] = &rbacconfigv3.Policy{Permissions: []*rbacconfigv3.Permission{headerPerm(exactHeader("grpc-x", ""))}}
	logRules.Rules.AuditLoggingOptions = &rbacconfigv3.RBAC_AuditLoggingOptions{
		AuditCondition: 7,
		LoggerConfigs:  []*rbacconfigv3.RBAC_AuditLoggingOptions_AuditLoggerConfig{{AuditLogger: &corev3.TypedExtensionConfig{Name: "unknown"}}},
	}
	shadow := &rbacv3.RBAC{
		ShadowRules: &rbacconfigv3.RBAC{Action: 9, Policies: map[string]*rbacconfigv3.Policy{"bad": policyWith(t, rawCondition)}},
		Matcher:     &xdsmatcherv3.Matcher{},
	}
	for _, tc := range []struct {
		name string
		cfg  *rbacv3.RBAC
	}{
		{"no rules", &rbacv3.RBAC{}},
		{"no policies", &rbacv3.RBAC{Rules: &rbacconfigv3.RBAC{Action: rbacconfigv3.RBAC_DENY}}},
		{"empty policy", rbacRules(rbacconfigv3.RBAC_ALLOW, &rbacconfigv3.Policy{})},
		{"every permission", everyPermission},
		{"every principal", everyPrincipal},
		{"LOG rules are not validated", logRules},
		{"shadow_rules and matcher ignored", shadow},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := decodeServer(t, rbacServer(t, tc.cfg))
			f := s.FilterChains[0].HTTPFilters[0]
			got := new(rbacv3.RBAC)
			if err := f.Config.UnmarshalTo(got); err != nil || f.TypeURL != filterconfig.RBACTypeURL || !proto.Equal(got, tc.cfg) {
				t.Errorf("HTTPFilters[0] = %+v (%v), want the RBAC config as received", f, err)
			}
		})
	}
}

func TestRBACErrors(t *testing.T) {
	const at = `lds "` + serverName + `": filter_chains[0].filters[0] "hcm": http_filters[0] "rbac": `
	const p = at + `rules.policies["p"]`
	const perm0 = p + `.permissions[0]`
	const id0 = p + `.principals[0]`
	cfg := func(c proto.Message) func() proto.Message {
		return func() proto.Message { return rbacServer(t, c) }
	}
	cases := []errorCase{
		{name: "unknown action", build: cfg(&rbacv3.RBAC{Rules: &rbacconfigv3.RBAC{Action: 3}}),
			want: at + `rules.action: 3 is not ALLOW, DENY or LOG`},
		{name: "condition", build: cfg(rbacRules(rbacconfigv3.RBAC_ALLOW, policyWith(t, rawCondition))),
			want: p + `.condition: not supported`},
		{name: "checked_condition", build: cfg(rbacRules(rbacconfigv3.RBAC_DENY, policyWith(t, rawCheckedCondition))),
			want: p + `.checked_condition: not supported`},
		{name: "permission without rule", build: cfg(allowPerm(&rbacconfigv3.Permission{})),
			want: perm0 + `: no rule is set`},
		{name: "permission destination_port_range", build: cfg(allowPerm(&rbacconfigv3.Permission{Rule: &rbacconfigv3.Permission_DestinationPortRange{DestinationPortRange: &typev3.Int32Range{Start: 1, End: 2}}})),
			want: perm0 + `: rule destination_port_range is not supported`},
		{name: "permission uri_template", build: cfg(allowPerm(&rbacconfigv3.Permission{Rule: &rbacconfigv3.Permission_UriTemplate{UriTemplate: &corev3.TypedExtensionConfig{Name: "t"}}})),
			want: perm0 + `: rule uri_template is not supported`},
		{name: "nested permission without rule", build: cfg(allowPerm(orPerms(anyPerm, andPerms(anyPerm, notPerm(&rbacconfigv3.Permission{}))))),
			want: perm0 + `.or_rules.rules[1].and_rules.rules[1].not_rule: no rule is set`},
		{name: ":scheme header", build: cfg(allowPerm(headerPerm(exactHeader(":scheme", "https")))),
			want: perm0 + `.header.name: ":scheme" is not allowed in RBAC`},
		{name: "grpc- header", build: cfg(allowPerm(andPerms(headerPerm(exactHeader("grpc-timeout", "1S"))))),
			want: perm0 + `.and_rules.rules[0].header.name: "grpc-timeout": names starting with "grpc-" are not allowed in RBAC`},
		{name: "grpc- header in principal", build: cfg(denyID(&rbacconfigv3.Principal{Identifier: &rbacconfigv3.Principal_NotId{NotId: headerID(exactHeader("grpc-status", "0"))}})),
			want: id0 + `.not_id.header.name: "grpc-status": names starting with "grpc-" are not allowed in RBAC`},
		{name: ":scheme header in capitals", build: cfg(allowPerm(orPerms(anyPerm, headerPerm(exactHeader(":SCHEME", "https"))))),
			want: perm0 + `.or_rules.rules[1].header.name: ":SCHEME" is not allowed in RBAC`},
		{name: "grpc- header in mixed case", build: cfg(denyID(headerID(exactHeader("GRPC-Foo", "x")))),
			want: id0 + `.header.name: "GRPC-Foo": names starting with "grpc-" are not allowed in RBAC`},
		{name: "header without specifier", build: cfg(allowPerm(headerPerm(&routev3.HeaderMatcher{Name: "x"}))),
			want: perm0 + `.header: no header match specifier is set`},
		{name: "header bad regex", build: cfg(allowPerm(headerPerm(&routev3.HeaderMatcher{Name: "x", HeaderMatchSpecifier: &routev3.HeaderMatcher_SafeRegexMatch{SafeRegexMatch: &matcherv3.RegexMatcher{Regex: "a("}}}))),
			want: perm0 + `.header: invalid regex "a(": `, prefix: true},
		{name: "header range end before start", build: cfg(allowPerm(headerPerm(&routev3.HeaderMatcher{Name: "x", HeaderMatchSpecifier: &routev3.HeaderMatcher_RangeMatch{RangeMatch: &typev3.Int64Range{Start: 10, End: 9}}}))),
			want: perm0 + `.header: range_match end 9 is less than start 10`},
		{name: "header string_match without pattern", build: cfg(denyID(headerID(&routev3.HeaderMatcher{Name: "x", HeaderMatchSpecifier: &routev3.HeaderMatcher_StringMatch{StringMatch: &matcherv3.StringMatcher{}}}))),
			want: id0 + `.header: string_match: no match pattern is set`},
		{name: "url_path without path", build: cfg(allowPerm(&rbacconfigv3.Permission{Rule: &rbacconfigv3.Permission_UrlPath{UrlPath: &matcherv3.PathMatcher{}}})),
			want: perm0 + `.url_path.path: missing`},
		{name: "url_path bad regex", build: cfg(allowPerm(pathPerm(regexStr("[z-a]")))),
			want: perm0 + `.url_path.path: invalid regex "[z-a]": `, prefix: true},
		// Anchored as ^(?:a)|(b)$, the expression would compile, and match
		// the methods that start with "a" or end with "b".
		{name: "url_path regex valid only anchored", build: cfg(allowPerm(pathPerm(regexStr("a)|(b")))),
			want: perm0 + ".url_path.path: invalid regex \"a)|(b\": error parsing regexp: unexpected ): `a)|(b`"},
		{name: "header regex valid only anchored", build: cfg(denyID(headerID(&routev3.HeaderMatcher{Name: "x", HeaderMatchSpecifier: &routev3.HeaderMatcher_SafeRegexMatch{SafeRegexMatch: &matcherv3.RegexMatcher{Regex: ".*)|(x"}}}))),
			want: id0 + ".header: invalid regex \".*)|(x\": error parsing regexp: unexpected ): `.*)|(x`"},
		{name: "url_path custom", build: cfg(allowPerm(pathPerm(&matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_Custom{Custom: &xdscorev3.TypedExtensionConfig{Name: "c"}}}))),
			want: perm0 + `.url_path.path: match pattern custom is not supported`},
		{name: "requested_server_name without pattern", build: cfg(allowPerm(&rbacconfigv3.Permission{Rule: &rbacconfigv3.Permission_RequestedServerName{RequestedServerName: &matcherv3.StringMatcher{}}})),
			want: perm0 + `.requested_server_name: no match pattern is set`},
		{name: "destination_ip not an address", build: cfg(allowPerm(dstIPPerm(cidr("10.0.0.0/8", 8)))),
			want: perm0 + `.destination_ip.address_prefix: "10.0.0.0/8" is not an IP address`},
		{name: "destination_ip with zone", build: cfg(allowPerm(dstIPPerm(cidr("fe80::1%eth0", 64)))),
			want: perm0 + `.destination_ip.address_prefix: "fe80::1%eth0" is not an IP address`},
		{name: "destination_ip prefix_len too long", build: cfg(allowPerm(dstIPPerm(cidr("10.0.0.0", 33)))),
			want: perm0 + `.destination_ip.prefix_len: 33 is longer than the 32 bits of "10.0.0.0"`},
		{name: "principal without identifier", build: cfg(denyID(andIDs(anyID, &rbacconfigv3.Principal{}))),
			want: id0 + `.and_ids.ids[1]: no identifier is set`},
		{name: "principal filter_state", build: cfg(denyID(orIDs(&rbacconfigv3.Principal{Identifier: &rbacconfigv3.Principal_FilterState{FilterState: &matcherv3.FilterStateMatcher{Key: "k"}}}))),
			want: id0 + `.or_ids.ids[0]: identifier filter_state is not supported`},
		{name: "principal_name bad regex", build: cfg(denyID(authID(regexStr("spiffe://(")))),
			want: id0 + `.authenticated.principal_name: invalid regex "spiffe://(": `, prefix: true},
		{name: "principal_name without pattern", build: cfg(denyID(authID(&matcherv3.StringMatcher{IgnoreCase: true}))),
			want: id0 + `.authenticated.principal_name: no match pattern is set`},
		{name: "source_ip", build: cfg(denyID(&rbacconfigv3.Principal{Identifier: &rbacconfigv3.Principal_SourceIp{SourceIp: cidr("host.example", 0)}})),
			want: id0 + `.source_ip.address_prefix: "host.example" is not an IP address`},
		{name: "direct_remote_ip", build: cfg(denyID(&rbacconfigv3.Principal{Identifier: &rbacconfigv3.Principal_DirectRemoteIp{DirectRemoteIp: cidr("2001:db8::", 129)}})),
			want: id0 + `.direct_remote_ip.prefix_len: 129 is longer than the 128 bits of "2001:db8::"`},
		{name: "remote_ip", build: cfg(denyID(&rbacconfigv3.Principal{Identifier: &rbacconfigv3.Principal_RemoteIp{RemoteIp: &corev3.CidrRange{}}})),
			want: id0 + `.remote_ip.address_prefix: "" is not an IP address`},
		{name: "url_path principal", build: cfg(denyID(&rbacconfigv3.Principal{Identifier: &rbacconfigv3.Principal_UrlPath{UrlPath: &matcherv3.PathMatcher{}}})),
			want: id0 + `.url_path.path: missing`},
		{name: "in a TypedStruct", build: cfg(&xdstypev3.TypedStruct{TypeUrl: filterconfig.RBACTypeURL}),
			want: at + `a config of type "` + filterconfig.RBACTypeURL + `" in a TypedStruct is not supported`},
		{name: "first bad policy by name", build: func() proto.Message {
			c := rbacRules(rbacconfigv3.RBAC_ALLOW, policyWith(t, rawCheckedCondition))
			c.Rules.Policies["a"] = policyWith(t, rawCondition)
			return rbacServer(t, c)
		}, want: at + `rules.policies["a"].condition: not supported`},
	}
	runErrorCases(t, ListenerType, serverName, cases)
}

// A filter that clients do not run is dropped, when optional, without
// reading its config.
func TestRBACOptionalOnClient(t *testing.T) {
	bad := httpFilter(t, "rbac", allowPerm(&rbacconfigv3.Permission{}))
	bad.IsOptional = true
	hcm := rdsHCM(t)
	hcm.HttpFilters = []*hcmv3.HttpFilter{bad, routerFilter(t)}
	_, v, err := decode(t, ListenerType, apiListener(t, hcm))
	if err != nil {
		t.Fatalf("Decode: %v", err)
	}
	if fs := v.(*Listener).HTTPFilters; len(fs) != 1 || fs[0].TypeURL != filterconfig.RouterTypeURL {
		t.Errorf("HTTPFilters = %+v, want only the router", fs)
	}
}

func TestRBACPerRoute(t *testing.T) {
	withOverride := func(cfg proto.Message) *routev3.RouteConfiguration {
		m := routeConfig(prefixRoute("/", "c1"))
		m.VirtualHosts[0].Routes[0].TypedPerFilterConfig = map[string]*anypb.Any{"rbac": toAny(t, cfg)}
		return m
	}
	for _, tc := range []struct {
		name string
		cfg  proto.Message
	}{
		{"without rbac", &rbacv3.RBACPerRoute{}},
		{"without rules", &rbacv3.RBACPerRoute{Rbac: &rbacv3.RBAC{}}},
		{"valid rules", &rbacv3.RBACPerRoute{Rbac: denyID(authID(regexStr(".*")))}},
		{"LOG rules", &rbacv3.RBACPerRoute{Rbac: rbacRules(rbacconfigv3.RBAC_LOG, policyWith(t, rawCondition))}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, _, err := decode(t, RouteConfigType, withOverride(tc.cfg)); err != nil {
				t.Errorf("Decode: %v", err)
			}
		})
	}

	const at = `rds "r1": virtual_hosts[0].routes[0]: typed_per_filter_config["rbac"]: `
	build := func(cfg proto.Message) func() proto.Message {
		return func() proto.Message { return withOverride(cfg) }
	}
	runErrorCases(t, RouteConfigType, "r1", []errorCase{
		{name: "bad rules", build: build(&rbacv3.RBACPerRoute{Rbac: allowPerm(headerPerm(exactHeader(":scheme", "http")))}),
			want: at + `rbac.rules.policies["p"].permissions[0].header.name: ":scheme" is not allowed in RBAC`},
		{name: "optional does not excuse bad rules", build: build(&routev3.FilterConfig{Config: toAny(t, &rbacv3.RBACPerRoute{Rbac: &rbacv3.RBAC{Rules: &rbacconfigv3.RBAC{Action: 5}}}), IsOptional: true}),
			want: at + `rbac.rules.action: 5 is not ALLOW, DENY or LOG`},
		{name: "optional and disabled do not excuse bad rules", build: build(&routev3.FilterConfig{Config: toAny(t, &rbacv3.RBACPerRoute{Rbac: &rbacv3.RBAC{Rules: &rbacconfigv3.RBAC{Action: 5}}}), IsOptional: true, Disabled: true}),
			want: at + `rbac.rules.action: 5 is not ALLOW, DENY or LOG`},
		{name: "in a TypedStruct", build: build(&xdstypev3.TypedStruct{TypeUrl: filterconfig.RBACPerRouteTypeURL}),
			want: at + `a config of type "` + filterconfig.RBACPerRouteTypeURL + `" in a TypedStruct is not supported`},
	})

	// The override is checked on every level that carries one.
	vh := routeConfig(prefixRoute("/", "c1"))
	vh.VirtualHosts[0].TypedPerFilterConfig = map[string]*anypb.Any{"rbac": toAny(t, &rbacv3.RBACPerRoute{Rbac: denyID(&rbacconfigv3.Principal{})})}
	_, _, err := decode(t, RouteConfigType, vh)
	if want := `rds "r1": virtual_hosts[0].typed_per_filter_config["rbac"]: rbac.rules.policies["p"].principals[0]: no identifier is set`; err == nil || err.Error() != want {
		t.Errorf("Decode error = %v, want %s", err, want)
	}
}

// stdoutAuditLoggerTypeURL is the audit logger that gRPC always has.
const stdoutAuditLoggerTypeURL = TypeURLPrefix + "envoy.extensions.rbac.audit_loggers.stream.v3.StdoutAuditLog"

// testAuditLoggerName is an audit logger registered with gRPC, whose config
// parser accepts only an object without "bad".
const testAuditLoggerName = "xdslens_test_audit_logger"

type testAuditLoggerBuilder struct{}

func (testAuditLoggerBuilder) ParseLoggerConfig(config json.RawMessage) (audit.LoggerConfig, error) {
	var m map[string]any
	if err := json.Unmarshal(config, &m); err != nil {
		return nil, err
	}
	if _, bad := m["bad"]; bad {
		return nil, errors.New(`"bad" is set`)
	}
	return nil, nil
}

func (testAuditLoggerBuilder) Build(audit.LoggerConfig) audit.Logger { return nil }

func (testAuditLoggerBuilder) Name() string { return testAuditLoggerName }

func init() { audit.RegisterLoggerBuilder(testAuditLoggerBuilder{}) }

// withAudit returns an ALLOW config for any request with the given audit
// condition and loggers.
func withAudit(cond rbacconfigv3.RBAC_AuditLoggingOptions_AuditCondition, loggers ...*rbacconfigv3.RBAC_AuditLoggingOptions_AuditLoggerConfig) *rbacv3.RBAC {
	c := allowPerm(anyPerm)
	c.Rules.AuditLoggingOptions = &rbacconfigv3.RBAC_AuditLoggingOptions{AuditCondition: cond, LoggerConfigs: loggers}
	return c
}

// auditLogger is a logger config of type cfg.
func auditLogger(t testing.TB, cfg proto.Message, optional bool) *rbacconfigv3.RBAC_AuditLoggingOptions_AuditLoggerConfig {
	return &rbacconfigv3.RBAC_AuditLoggingOptions_AuditLoggerConfig{
		AuditLogger: &corev3.TypedExtensionConfig{Name: "l", TypedConfig: toAny(t, cfg)},
		IsOptional:  optional,
	}
}

// Audit loggers are checked as gRPC does when it runs them (gRFC A59): a
// logger gRPC does not know is an error unless it is optional.
func TestRBACAuditLogging(t *testing.T) {
	stdout := &rbacconfigv3.RBAC_AuditLoggingOptions_AuditLoggerConfig{AuditLogger: &corev3.TypedExtensionConfig{
		Name: "stdout", TypedConfig: &anypb.Any{TypeUrl: stdoutAuditLoggerTypeURL},
	}}
	registered := func(v map[string]any) proto.Message {
		s, err := structpb.NewStruct(v)
		if err != nil {
			t.Fatal(err)
		}
		return &xdstypev3.TypedStruct{TypeUrl: "type.googleapis.com/" + testAuditLoggerName, Value: s}
	}
	unknownTS := &xdstypev3.TypedStruct{TypeUrl: "type.googleapis.com/no_such_logger"}
	for _, tc := range []struct {
		name string
		cfg  *rbacv3.RBAC
	}{
		{"stdout logger", withAudit(rbacconfigv3.RBAC_AuditLoggingOptions_ON_DENY_AND_ALLOW, stdout)},
		{"registered logger", withAudit(rbacconfigv3.RBAC_AuditLoggingOptions_ON_DENY, auditLogger(t, registered(map[string]any{"ok": true}), false))},
		{"registered logger without value", withAudit(rbacconfigv3.RBAC_AuditLoggingOptions_ON_ALLOW,
			auditLogger(t, &udpatypev1.TypedStruct{TypeUrl: "example.com/x/" + testAuditLoggerName}, false))},
		{"optional unknown TypedStruct", withAudit(rbacconfigv3.RBAC_AuditLoggingOptions_NONE, auditLogger(t, unknownTS, true))},
		{"optional unknown type", withAudit(rbacconfigv3.RBAC_AuditLoggingOptions_NONE, auditLogger(t, &structpb.Struct{}, true), stdout)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			decodeServer(t, rbacServer(t, tc.cfg))
		})
	}

	const at = `lds "` + serverName + `": filter_chains[0].filters[0] "hcm": http_filters[0] "rbac": rules.audit_logging_options`
	cfg := func(c proto.Message) func() proto.Message {
		return func() proto.Message { return rbacServer(t, c) }
	}
	runErrorCases(t, ListenerType, serverName, []errorCase{
		{name: "unknown audit condition", build: cfg(withAudit(4, stdout)),
			want: at + `.audit_condition: 4 is not NONE, ON_DENY, ON_ALLOW or ON_DENY_AND_ALLOW`},
		{name: "unknown type", build: cfg(withAudit(rbacconfigv3.RBAC_AuditLoggingOptions_ON_DENY, stdout, auditLogger(t, &structpb.Struct{}, false))),
			want: at + `.logger_configs[1].audit_logger.typed_config: audit logger type "type.googleapis.com/google.protobuf.Struct" is not supported`},
		{name: "unknown TypedStruct", build: cfg(withAudit(rbacconfigv3.RBAC_AuditLoggingOptions_ON_DENY, auditLogger(t, unknownTS, false))),
			want: at + `.logger_configs[0].audit_logger.typed_config: audit logger type "type.googleapis.com/no_such_logger" is not supported`},
		{name: "no typed_config", build: cfg(withAudit(rbacconfigv3.RBAC_AuditLoggingOptions_ON_DENY,
			&rbacconfigv3.RBAC_AuditLoggingOptions_AuditLoggerConfig{AuditLogger: &corev3.TypedExtensionConfig{Name: "l"}})),
			want: at + `.logger_configs[0].audit_logger.typed_config: missing`},
		{name: "optional without typed_config", build: cfg(withAudit(rbacconfigv3.RBAC_AuditLoggingOptions_ON_DENY,
			&rbacconfigv3.RBAC_AuditLoggingOptions_AuditLoggerConfig{AuditLogger: &corev3.TypedExtensionConfig{Name: "l"}, IsOptional: true})),
			want: at + `.logger_configs[0].audit_logger.typed_config: missing`},
		{name: "no audit_logger", build: cfg(withAudit(rbacconfigv3.RBAC_AuditLoggingOptions_ON_DENY, &rbacconfigv3.RBAC_AuditLoggingOptions_AuditLoggerConfig{IsOptional: true})),
			want: at + `.logger_configs[0].audit_logger: missing`},
		{name: "TypedStruct naming nothing", build: cfg(withAudit(rbacconfigv3.RBAC_AuditLoggingOptions_ON_DENY, auditLogger(t, &xdstypev3.TypedStruct{TypeUrl: "example.com/"}, true))),
			want: at + `.logger_configs[0].audit_logger.typed_config: TypedStruct type_url "example.com/" names no logger`},
		{name: "config the registered logger refuses", build: cfg(withAudit(rbacconfigv3.RBAC_AuditLoggingOptions_ON_DENY, auditLogger(t, registered(map[string]any{"bad": 1}), true))),
			want: at + `.logger_configs[0].audit_logger.typed_config: audit logger "` + testAuditLoggerName + `": "bad" is set`},
	})

	// RBACPerRoute overrides are checked the same way.
	m := routeConfig(prefixRoute("/", "c1"))
	m.VirtualHosts[0].TypedPerFilterConfig = map[string]*anypb.Any{"rbac": toAny(t, &rbacv3.RBACPerRoute{
		Rbac: withAudit(rbacconfigv3.RBAC_AuditLoggingOptions_ON_DENY, auditLogger(t, unknownTS, false)),
	})}
	_, _, err := decode(t, RouteConfigType, m)
	if want := `rds "r1": virtual_hosts[0].typed_per_filter_config["rbac"]: rbac.rules.audit_logging_options.logger_configs[0].audit_logger.typed_config: audit logger type "type.googleapis.com/no_such_logger" is not supported`; err == nil || err.Error() != want {
		t.Errorf("Decode error = %v, want %s", err, want)
	}
}
