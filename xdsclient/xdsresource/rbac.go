package xdsresource

import (
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
)

// validateRBAC checks an RBAC filter config as an xDS-enabled gRPC server
// does (gRFC A41, A59). at is the path of the config, "" or ending in a
// dot. Without rules, or with the action LOG, gRPC enforces nothing and
// reads nothing further; shadow_rules and matcher are ignored.
func validateRBAC(m *rbacv3.RBAC, at string) error {
	rules := m.GetRules()
	if rules == nil {
		return nil
	}
	switch a := rules.GetAction(); a {
	case rbacconfigv3.RBAC_ALLOW, rbacconfigv3.RBAC_DENY:
	case rbacconfigv3.RBAC_LOG:
		return nil
	default:
		return fmt.Errorf("%srules.action: %d is not ALLOW, DENY or LOG", at, int32(a))
	}
	policies := rules.GetPolicies()
	names := make([]string, 0, len(policies))
	for name := range policies {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		if err := validateRBACPolicy(policies[name], fmt.Sprintf("%srules.policies[%q]", at, name)); err != nil {
			return err
		}
	}
	return validateAuditLogging(rules.GetAuditLoggingOptions(), at+"rules.audit_logging_options")
}

// validateRBACPolicy checks one policy, found at at.
func validateRBACPolicy(p *rbacconfigv3.Policy, at string) error {
	if p.GetCondition() != nil {
		return fmt.Errorf("%s.condition: not supported", at)
	}
	if p.GetCheckedCondition() != nil {
		return fmt.Errorf("%s.checked_condition: not supported", at)
	}
	if err := validateEach(p.GetPermissions(), at+".permissions", validatePermission); err != nil {
		return err
	}
	return validateEach(p.GetPrincipals(), at+".principals", validatePrincipal)
}

// validateEach runs validate on each element of xs, found at at[i].
func validateEach[T any](xs []T, at string, validate func(T, string) error) error {
	for i, x := range xs {
		if err := validate(x, fmt.Sprintf("%s[%d]", at, i)); err != nil {
			return err
		}
	}
	return nil
}

// validatePermission checks a permission and the permissions inside it.
func validatePermission(p *rbacconfigv3.Permission, at string) error {
	switch r := p.GetRule().(type) {
	case *rbacconfigv3.Permission_AndRules:
		return validateEach(r.AndRules.GetRules(), at+".and_rules.rules", validatePermission)
	case *rbacconfigv3.Permission_OrRules:
		return validateEach(r.OrRules.GetRules(), at+".or_rules.rules", validatePermission)
	case *rbacconfigv3.Permission_NotRule:
		return validatePermission(r.NotRule, at+".not_rule")
	case *rbacconfigv3.Permission_Any, *rbacconfigv3.Permission_DestinationPort, *rbacconfigv3.Permission_Metadata:
		return nil // metadata never matches in gRPC, or always when inverted
	case *rbacconfigv3.Permission_Header, *rbacconfigv3.Permission_UrlPath,
		*rbacconfigv3.Permission_DestinationIp, *rbacconfigv3.Permission_RequestedServerName:
		return validateRBACMatcher(p, "rule", at)
	case nil:
		return fmt.Errorf("%s: no rule is set", at)
	}
	return fmt.Errorf("%s: rule %s is not supported", at, setOneof(p, "rule").Name())
}

// validatePrincipal checks a principal and the principals inside it.
// source_ip, direct_remote_ip and remote_ip all match the peer's address.
func validatePrincipal(p *rbacconfigv3.Principal, at string) error {
	switch id := p.GetIdentifier().(type) {
	case *rbacconfigv3.Principal_AndIds:
		return validateEach(id.AndIds.GetIds(), at+".and_ids.ids", validatePrincipal)
	case *rbacconfigv3.Principal_OrIds:
		return validateEach(id.OrIds.GetIds(), at+".or_ids.ids", validatePrincipal)
	case *rbacconfigv3.Principal_NotId:
		return validatePrincipal(id.NotId, at+".not_id")
	case *rbacconfigv3.Principal_Any, *rbacconfigv3.Principal_Metadata:
		return nil
	case *rbacconfigv3.Principal_Authenticated_:
		if name := id.Authenticated.GetPrincipalName(); name != nil {
			return validateRBACString(name, at+".authenticated.principal_name")
		}
		return nil // any authenticated peer
	case *rbacconfigv3.Principal_SourceIp, *rbacconfigv3.Principal_DirectRemoteIp, *rbacconfigv3.Principal_RemoteIp,
		*rbacconfigv3.Principal_Header, *rbacconfigv3.Principal_UrlPath:
		return validateRBACMatcher(p, "identifier", at)
	case nil:
		return fmt.Errorf("%s: no identifier is set", at)
	}
	return fmt.Errorf("%s: identifier %s is not supported", at, setOneof(p, "identifier").Name())
}

// setOneof returns the field set in the oneof named oneof of m, which must
// be set.
func setOneof(m proto.Message, oneof string) protoreflect.FieldDescriptor {
	r := m.ProtoReflect()
	return r.WhichOneof(r.Descriptor().Oneofs().ByName(protoreflect.Name(oneof)))
}

// validateRBACMatcher checks the matcher set in the oneof named oneof of a
// permission or principal m: a header matcher, a path matcher, a string
// matcher or a CIDR range.
func validateRBACMatcher(m proto.Message, oneof, at string) error {
	fd := setOneof(m, oneof)
	at += "." + string(fd.Name())
	switch v := m.ProtoReflect().Get(fd).Message().Interface().(type) {
	case *routev3.HeaderMatcher:
		return validateRBACHeader(v, at)
	case *matcherv3.PathMatcher:
		return validateRBACPath(v, at)
	case *matcherv3.StringMatcher:
		return validateRBACString(v, at)
	case *corev3.CidrRange:
		return validateRBACCIDR(v, at)
	}
	return fmt.Errorf("%s: not supported", at)
}

// validateRBACHeader checks a header matcher of a policy. Header names do
// not depend on case, so the name is lower-cased before the checks:
// ":scheme" and names starting with "grpc-" are rejected; "host" is
// accepted and gRPC matches it against ":authority".
func validateRBACHeader(h *routev3.HeaderMatcher, at string) error {
	name := h.GetName()
	switch lower := strings.ToLower(name); {
	case lower == ":scheme":
		return fmt.Errorf("%s.name: %q is not allowed in RBAC", at, name)
	case strings.HasPrefix(lower, "grpc-"):
		return fmt.Errorf("%s.name: %q: names starting with \"grpc-\" are not allowed in RBAC", at, name)
	}
	switch s := h.GetHeaderMatchSpecifier().(type) {
	case *routev3.HeaderMatcher_ExactMatch, *routev3.HeaderMatcher_PrefixMatch,
		*routev3.HeaderMatcher_SuffixMatch, *routev3.HeaderMatcher_ContainsMatch,
		*routev3.HeaderMatcher_PresentMatch:
		return nil
	case *routev3.HeaderMatcher_SafeRegexMatch:
		if err := checkRegex(s.SafeRegexMatch.GetRegex()); err != nil {
			return fmt.Errorf("%s.safe_regex_match.regex: %v", at, err)
		}
		return nil
	case *routev3.HeaderMatcher_RangeMatch:
		if start, end := s.RangeMatch.GetStart(), s.RangeMatch.GetEnd(); end < start {
			return fmt.Errorf("%s.range_match: end %d is less than start %d", at, end, start)
		}
		return nil
	case *routev3.HeaderMatcher_StringMatch:
		return validateRBACString(s.StringMatch, at+".string_match")
	}
	return fmt.Errorf("%s: no header match specifier is set", at)
}

// validateRBACPath checks a url_path: its path must be set.
func validateRBACPath(p *matcherv3.PathMatcher, at string) error {
	if p.GetPath() == nil {
		return fmt.Errorf("%s.path: missing", at)
	}
	return validateRBACString(p.GetPath(), at+".path")
}

// validateRBACString checks a string matcher of a policy: one of exact,
// prefix, suffix, contains (which may be empty) and safe_regex, which must
// be valid RE2.
func validateRBACString(m *matcherv3.StringMatcher, at string) error {
	switch p := m.GetMatchPattern().(type) {
	case *matcherv3.StringMatcher_Exact, *matcherv3.StringMatcher_Prefix,
		*matcherv3.StringMatcher_Suffix, *matcherv3.StringMatcher_Contains:
		return nil
	case *matcherv3.StringMatcher_SafeRegex:
		if err := checkRegex(p.SafeRegex.GetRegex()); err != nil {
			return fmt.Errorf("%s.safe_regex.regex: %v", at, err)
		}
		return nil
	case nil:
		return fmt.Errorf("%s: no match pattern is set", at)
	}
	return fmt.Errorf("%s: match pattern %s is not supported", at, setOneof(m, "match_pattern").Name())
}

// validateRBACCIDR checks a CIDR range of a policy: an IP address without
// zone and a prefix_len at most its size. An IPv4-mapped IPv6 address is
// an IPv6 address of 128 bits here.
func validateRBACCIDR(r *corev3.CidrRange, at string) error {
	addr, err := netip.ParseAddr(r.GetAddressPrefix())
	if err != nil || addr.Zone() != "" {
		return fmt.Errorf("%s.address_prefix: %q is not an IP address", at, r.GetAddressPrefix())
	}
	if bits := r.GetPrefixLen().GetValue(); bits > uint32(addr.BitLen()) {
		return fmt.Errorf("%s.prefix_len: %d is longer than the %d bits of %q", at, bits, addr.BitLen(), r.GetAddressPrefix())
	}
	return nil
}
