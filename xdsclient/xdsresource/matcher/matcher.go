// Package matcher holds the string and header matchers of xDS resources,
// validated as gRPC C-core validates them: the header matchers of routes
// (gRFC A28), the string and header matchers of RBAC policies (A41) and
// the subject alternative name matchers of TLS contexts (A29). A regular
// expression must be valid RE2 as written, and once anchored to match
// whole values, as it is run (CheckWholeRegex); every other value is
// valid, the empty one included, as C-core's StringMatcher::Create has it
// (src/core/util/matchers.cc), where grpc-go rejects an empty prefix,
// suffix or contains. Their rules are rows of the table in package
// xdsresource; xdslens's data plane runs them as package internal/xdsmatch
// compiles them.
package matcher

import (
	"errors"
	"fmt"
	"regexp/syntax"
	"strings"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
)

// Kind says how a matcher compares a value.
type Kind int

// Matcher kinds: a String has one of the first five.
const (
	Exact    Kind = iota + 1 // value equals Value
	Prefix                   // value starts with Value
	Suffix                   // value ends with Value
	Contains                 // value contains Value
	Regex                    // Value, an RE2 expression, matches the whole value
	Present                  // the header is present iff Present
	Range                    // value is an integer in [RangeStart, RangeEnd)
)

// Header is one header condition of a route, a validated
// envoy.config.route.v3.HeaderMatcher.
type Header struct {
	// Name is the header name, lower-cased.
	Name string
	Kind Kind
	// Value is the string, prefix, suffix, substring or regular
	// expression to compare with.
	Value string
	// IgnoreCase makes exact, prefix, suffix and contains matching
	// case-insensitive.
	IgnoreCase bool
	// Present is set for Present.
	Present bool
	// RangeStart and RangeEnd are set for Range.
	RangeStart, RangeEnd int64
	// Invert negates the result.
	Invert bool
}

// ValidateHeader validates h as gRPC C-core does: a match specifier is
// required, a regex must be valid and a range must not end before it
// starts; the value of an exact, prefix, suffix or contains match may be
// empty. The name is lower-cased.
func ValidateHeader(h *routev3.HeaderMatcher) (Header, error) {
	hm := Header{Name: strings.ToLower(h.GetName()), Invert: h.GetInvertMatch()}
	switch s := h.GetHeaderMatchSpecifier().(type) {
	case *routev3.HeaderMatcher_ExactMatch:
		hm.Kind, hm.Value = Exact, s.ExactMatch
	case *routev3.HeaderMatcher_PrefixMatch:
		hm.Kind, hm.Value = Prefix, s.PrefixMatch
	case *routev3.HeaderMatcher_SuffixMatch:
		hm.Kind, hm.Value = Suffix, s.SuffixMatch
	case *routev3.HeaderMatcher_ContainsMatch:
		hm.Kind, hm.Value = Contains, s.ContainsMatch
	case *routev3.HeaderMatcher_SafeRegexMatch:
		hm.Kind, hm.Value = Regex, s.SafeRegexMatch.GetRegex()
	case *routev3.HeaderMatcher_PresentMatch:
		hm.Kind, hm.Present = Present, s.PresentMatch
	case *routev3.HeaderMatcher_RangeMatch:
		hm.Kind, hm.RangeStart, hm.RangeEnd = Range, s.RangeMatch.GetStart(), s.RangeMatch.GetEnd()
		if hm.RangeEnd < hm.RangeStart {
			return hm, fmt.Errorf("range_match end %d is less than start %d", hm.RangeEnd, hm.RangeStart)
		}
	case *routev3.HeaderMatcher_StringMatch:
		if err := fromStringMatcher(s.StringMatch, &hm); err != nil {
			return hm, fmt.Errorf("string_match: %v", err)
		}
	default:
		return hm, errors.New("no header match specifier is set")
	}
	return hm, checkRegexOf(hm.Kind, hm.Value)
}

// checkRegexOf checks value when k is Regex: the value of every other
// string match is valid, the empty one included, as C-core's
// StringMatcher::Create has it (src/core/util/matchers.cc).
func checkRegexOf(k Kind, value string) error {
	if k == Regex {
		return CheckWholeRegex(value)
	}
	return nil
}

// fromStringMatcher reads the pattern of m into hm.
func fromStringMatcher(m *matcherv3.StringMatcher, hm *Header) error {
	hm.IgnoreCase = m.GetIgnoreCase()
	switch p := m.GetMatchPattern().(type) {
	case *matcherv3.StringMatcher_Exact:
		hm.Kind, hm.Value = Exact, p.Exact
	case *matcherv3.StringMatcher_Prefix:
		hm.Kind, hm.Value = Prefix, p.Prefix
	case *matcherv3.StringMatcher_Suffix:
		hm.Kind, hm.Value = Suffix, p.Suffix
	case *matcherv3.StringMatcher_Contains:
		hm.Kind, hm.Value = Contains, p.Contains
	case *matcherv3.StringMatcher_SafeRegex:
		hm.Kind, hm.Value, hm.IgnoreCase = Regex, p.SafeRegex.GetRegex(), false
	case nil:
		return errors.New("no match pattern is set")
	default:
		r := m.ProtoReflect()
		return fmt.Errorf("match pattern %s is not supported", r.WhichOneof(r.Descriptor().Oneofs().ByName("match_pattern")).Name())
	}
	return nil
}

// String returns "exact", "prefix", "suffix", "contains", "safe_regex",
// "present" or "range".
func (k Kind) String() string {
	switch k {
	case Exact:
		return "exact"
	case Prefix:
		return "prefix"
	case Suffix:
		return "suffix"
	case Contains:
		return "contains"
	case Regex:
		return "safe_regex"
	case Present:
		return "present"
	case Range:
		return "range"
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// CheckRegex reports whether re is a valid RE2 expression, as written:
// it is parsed as regexp.Compile parses it, and not compiled, so that
// those who compile it once validated pay for one compilation.
func CheckRegex(re string) error {
	if _, err := syntax.Parse(re, syntax.Perl); err != nil {
		return fmt.Errorf("invalid regex %q: %v", re, err)
	}
	return nil
}

// CheckWholeRegex reports whether re is valid as CheckRegex says and
// can also be compiled as WholeRegex writes it, the form in which the
// regex of a matcher or of a route's path is run. Anchoring nests re one
// level deeper and makes it a little larger, so that an expression nested
// 999 levels deep, valid as written, is past Go's limit of 1000 once
// anchored: it is rejected here, when the resource is parsed, rather than
// failing where it is compiled.
func CheckWholeRegex(re string) error {
	if err := CheckRegex(re); err != nil {
		return err
	}
	if _, err := syntax.Parse(WholeRegex(re), syntax.Perl); err != nil {
		var se *syntax.Error
		if errors.As(err, &se) { // its Expr is the anchored expression: not quoted twice
			return fmt.Errorf("invalid regex %q: anchored to match whole values: %v", re, se.Code)
		}
		return fmt.Errorf("invalid regex %q: anchored to match whole values: %v", re, err)
	}
	return nil
}

// WholeRegex returns the expression that matches exactly the values re
// matches whole: re anchored at both ends. It must be valid as written
// (CheckRegex): anchored, an expression such as "a)|(b" would parse, as one
// that matches what starts with "a" or ends with "b".
func WholeRegex(re string) string { return `^(?:` + re + `)$` }

// String is a validated envoy.type.matcher.v3.StringMatcher. Kind is
// Exact, Prefix, Suffix, Contains or Regex.
type String struct {
	// Kind says how Value is compared.
	Kind Kind
	// Value is the string, prefix, suffix or substring to compare with, or
	// the RE2 expression that must match the whole value.
	Value string
	// IgnoreCase makes all but Regex compare without case.
	IgnoreCase bool
}

// ValidateString validates m as gRPC C-core does: a regex must be valid;
// the value of an exact, prefix, suffix or contains match may be empty.
func ValidateString(m *matcherv3.StringMatcher) (String, error) {
	var hm Header
	if err := fromStringMatcher(m, &hm); err != nil {
		return String{}, err
	}
	sm := String{Kind: hm.Kind, Value: hm.Value, IgnoreCase: hm.IgnoreCase}
	return sm, checkRegexOf(sm.Kind, sm.Value)
}
