package rbac

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	rbacconfigv3 "github.com/envoyproxy/go-control-plane/envoy/config/rbac/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	rbacv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/rbac/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/xdslens/xdslens/internal/xdsmatch"
	"github.com/xdslens/xdslens/xdsclient/xdsresource/matcher"
)

// Rules are the compiled rules of one RBAC config: immutable, shared by
// the engines built from them.
type Rules struct {
	// deny is true for the action DENY, false for ALLOW.
	deny bool
	// policies in the order of their names.
	policies []policy
	audit    auditOptions
	// enforced is false when the config has no rules or the action LOG:
	// gRPC then enforces nothing.
	enforced bool
	// matchesPath is true when a url_path matcher is among the rules: the
	// request's canonical path is then worked out once per decision.
	matchesPath bool
}

type policy struct {
	name        string
	permissions []node // one must match
	principals  []node // one must match
}

// Enforced reports whether r decides anything: false for a config without
// rules or with the action LOG, which gRPC ignores.
func (r *Rules) Enforced() bool { return r.enforced }

// Compile checks and compiles the rules of an RBAC filter config, as an
// xDS-enabled gRPC server uses them. Errors name the field and the value.
func Compile(m *rbacv3.RBAC) (*Rules, error) {
	rules := m.GetRules()
	if rules == nil {
		return &Rules{}, nil
	}
	r := &Rules{}
	switch a := rules.GetAction(); a {
	case rbacconfigv3.RBAC_ALLOW:
	case rbacconfigv3.RBAC_DENY:
		r.deny = true
	case rbacconfigv3.RBAC_LOG:
		return &Rules{}, nil
	default:
		return nil, fmt.Errorf("rules.action: %d is not ALLOW, DENY or LOG", int32(a))
	}
	r.enforced = true
	names := make([]string, 0, len(rules.GetPolicies()))
	for name := range rules.GetPolicies() {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		p, err := compilePolicy(rules.GetPolicies()[name])
		if err != nil {
			return nil, fmt.Errorf("rules.policies[%q]%v", name, err)
		}
		p.name = name
		r.policies = append(r.policies, p)
		r.matchesPath = r.matchesPath || anyPath(p.permissions) || anyPath(p.principals)
	}
	var err error
	if r.audit, err = parseAuditOptions(rules.GetAuditLoggingOptions()); err != nil {
		return nil, fmt.Errorf("rules.audit_logging_options%v", err)
	}
	return r, nil
}

// anyPath reports whether a url_path matcher is among ns or below them.
func anyPath(ns []node) bool {
	for i := range ns {
		if ns[i].kind == nodePath || anyPath(ns[i].children) {
			return true
		}
	}
	return false
}

// compilePolicy compiles one policy; errors start with the field path
// inside it, after a dot.
func compilePolicy(p *rbacconfigv3.Policy) (policy, error) {
	var out policy
	if p.GetCondition() != nil {
		return out, errors.New(".condition: not supported")
	}
	if p.GetCheckedCondition() != nil {
		return out, errors.New(".checked_condition: not supported")
	}
	for i, perm := range p.GetPermissions() {
		m, err := compilePermission(perm)
		if err != nil {
			return out, fmt.Errorf(".permissions[%d]%v", i, err)
		}
		out.permissions = append(out.permissions, m)
	}
	for i, id := range p.GetPrincipals() {
		m, err := compilePrincipal(id)
		if err != nil {
			return out, fmt.Errorf(".principals[%d]%v", i, err)
		}
		out.principals = append(out.principals, m)
	}
	return out, nil
}

// compileEach compiles xs with compile into the nodes of a set.
func compileEach[T any](xs []T, at string, compile func(T) (node, error)) ([]node, error) {
	out := make([]node, 0, len(xs))
	for i, x := range xs {
		m, err := compile(x)
		if err != nil {
			return nil, fmt.Errorf("%s[%d]%v", at, i, err)
		}
		out = append(out, m)
	}
	return out, nil
}

func compilePermission(p *rbacconfigv3.Permission) (node, error) {
	switch r := p.GetRule().(type) {
	case *rbacconfigv3.Permission_AndRules:
		ms, err := compileEach(r.AndRules.GetRules(), ".and_rules.rules", compilePermission)
		return node{kind: nodeAnd, children: ms}, err
	case *rbacconfigv3.Permission_OrRules:
		ms, err := compileEach(r.OrRules.GetRules(), ".or_rules.rules", compilePermission)
		return node{kind: nodeOr, children: ms}, err
	case *rbacconfigv3.Permission_NotRule:
		m, err := compilePermission(r.NotRule)
		if err != nil {
			return node{}, fmt.Errorf(".not_rule%v", err)
		}
		return node{kind: nodeNot, children: []node{m}}, nil
	case *rbacconfigv3.Permission_Any:
		return node{kind: nodeAny}, nil
	case *rbacconfigv3.Permission_Header:
		return compileHeader(r.Header)
	case *rbacconfigv3.Permission_UrlPath:
		s, err := compilePath(r.UrlPath)
		if err != nil {
			return node{}, fmt.Errorf(".url_path%v", err)
		}
		return node{kind: nodePath, str: s}, nil
	case *rbacconfigv3.Permission_DestinationIp:
		return compileCIDR(r.DestinationIp, true, ".destination_ip")
	case *rbacconfigv3.Permission_DestinationPort:
		return node{kind: nodePort, port: r.DestinationPort}, nil
	case *rbacconfigv3.Permission_Metadata:
		return node{kind: nodeConst, b: r.Metadata.GetInvert()}, nil
	case *rbacconfigv3.Permission_RequestedServerName:
		s, err := compileString(r.RequestedServerName)
		if err != nil {
			return node{}, fmt.Errorf(".requested_server_name%v", err)
		}
		return node{kind: nodeServerName, str: s}, nil
	case nil:
		return node{}, errors.New(": no rule is set")
	}
	return node{}, fmt.Errorf(": rule %s is not supported", setOneof(p, "rule"))
}

func compilePrincipal(p *rbacconfigv3.Principal) (node, error) {
	switch id := p.GetIdentifier().(type) {
	case *rbacconfigv3.Principal_AndIds:
		ms, err := compileEach(id.AndIds.GetIds(), ".and_ids.ids", compilePrincipal)
		return node{kind: nodeAnd, children: ms}, err
	case *rbacconfigv3.Principal_OrIds:
		ms, err := compileEach(id.OrIds.GetIds(), ".or_ids.ids", compilePrincipal)
		return node{kind: nodeOr, children: ms}, err
	case *rbacconfigv3.Principal_NotId:
		m, err := compilePrincipal(id.NotId)
		if err != nil {
			return node{}, fmt.Errorf(".not_id%v", err)
		}
		return node{kind: nodeNot, children: []node{m}}, nil
	case *rbacconfigv3.Principal_Any:
		return node{kind: nodeAny}, nil
	case *rbacconfigv3.Principal_Authenticated_:
		n := node{kind: nodeAuthenticated}
		if name := id.Authenticated.GetPrincipalName(); name != nil {
			s, err := compileString(name)
			if err != nil {
				return node{}, fmt.Errorf(".authenticated.principal_name%v", err)
			}
			n.b, n.str = true, s
		}
		return n, nil
	case *rbacconfigv3.Principal_SourceIp:
		return compileCIDR(id.SourceIp, false, ".source_ip")
	case *rbacconfigv3.Principal_DirectRemoteIp:
		return compileCIDR(id.DirectRemoteIp, false, ".direct_remote_ip")
	case *rbacconfigv3.Principal_RemoteIp:
		return compileCIDR(id.RemoteIp, false, ".remote_ip")
	case *rbacconfigv3.Principal_Header:
		return compileHeader(id.Header)
	case *rbacconfigv3.Principal_UrlPath:
		s, err := compilePath(id.UrlPath)
		if err != nil {
			return node{}, fmt.Errorf(".url_path%v", err)
		}
		return node{kind: nodePath, str: s}, nil
	case *rbacconfigv3.Principal_Metadata:
		return node{kind: nodeConst, b: id.Metadata.GetInvert()}, nil
	case nil:
		return node{}, errors.New(": no identifier is set")
	}
	return node{}, fmt.Errorf(": identifier %s is not supported", setOneof(p, "identifier"))
}

func compilePath(p *matcherv3.PathMatcher) (xdsmatch.String, error) {
	if p.GetPath() == nil {
		return xdsmatch.String{}, errors.New(".path: missing")
	}
	s, err := compileString(p.GetPath())
	if err != nil {
		return s, fmt.Errorf(".path%v", err)
	}
	return s, nil
}

// compileString validates and compiles a string matcher as routes and
// SAN matchers are; errors start with ": ".
func compileString(m *matcherv3.StringMatcher) (xdsmatch.String, error) {
	v, err := matcher.ValidateString(m)
	if err == nil {
		var s xdsmatch.String
		if s, err = xdsmatch.CompileString(v); err == nil {
			return s, nil
		}
	}
	return xdsmatch.String{}, fmt.Errorf(": %v", err)
}

// setOneof returns the name of the field set in the oneof named oneof of
// m.
func setOneof(m proto.Message, oneof string) protoreflect.Name {
	r := m.ProtoReflect()
	return r.WhichOneof(r.Descriptor().Oneofs().ByName(protoreflect.Name(oneof))).Name()
}

// compileHeader compiles a header matcher; names are compared in lower
// case, and "host" stands for ":authority" (gRFC A41).
func compileHeader(h *routev3.HeaderMatcher) (node, error) {
	name := strings.ToLower(h.GetName())
	switch {
	case name == ":scheme":
		return node{}, fmt.Errorf(".header.name: %q is not allowed in RBAC", h.GetName())
	case strings.HasPrefix(name, "grpc-"):
		return node{}, fmt.Errorf(".header.name: %q: names starting with \"grpc-\" are not allowed in RBAC", h.GetName())
	case name == "host":
		name = ":authority"
	}
	v, err := matcher.ValidateHeader(h)
	if err != nil {
		return node{}, fmt.Errorf(".header: %v", err)
	}
	m, err := xdsmatch.CompileHeader(v)
	if err != nil {
		return node{}, fmt.Errorf(".header: %v", err)
	}
	return node{kind: nodeHeader, header: &headerMatcher{name: name, m: m}}, nil
}

// compileCIDR compiles a CIDR range of the server's address (local) or the
// peer's.
func compileCIDR(r *corev3.CidrRange, local bool, at string) (node, error) {
	addr, err := netip.ParseAddr(r.GetAddressPrefix())
	if err != nil || addr.Zone() != "" {
		return node{}, fmt.Errorf("%s.address_prefix: %q is not an IP address", at, r.GetAddressPrefix())
	}
	bits := r.GetPrefixLen().GetValue()
	if bits > uint32(addr.BitLen()) {
		return node{}, fmt.Errorf("%s.prefix_len: %d is longer than the %d bits of %q", at, bits, addr.BitLen(), r.GetAddressPrefix())
	}
	return node{kind: nodeIP, b: local, prefix: netip.PrefixFrom(addr, int(bits)).Masked()}, nil
}
