package xdsresource

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
)

// HeaderMatchKind says how a HeaderMatcher compares a header's value.
type HeaderMatchKind int

// Header matcher kinds.
const (
	HeaderExact    HeaderMatchKind = iota + 1 // value equals Value
	HeaderPrefix                              // value starts with Value
	HeaderSuffix                              // value ends with Value
	HeaderContains                            // value contains Value
	HeaderRegex                               // Value, an RE2 expression, matches the whole value
	HeaderPresent                             // the header is present iff Present
	HeaderRange                               // value is an integer in [RangeStart, RangeEnd)
)

// HeaderMatcher is one header condition of a Route.
type HeaderMatcher struct {
	// Name is the header name, lower-cased.
	Name string
	Kind HeaderMatchKind
	// Value is the string, prefix, suffix, substring or regular
	// expression to compare with.
	Value string
	// IgnoreCase makes exact, prefix, suffix and contains matching
	// case-insensitive.
	IgnoreCase bool
	// Present is set for HeaderPresent.
	Present bool
	// RangeStart and RangeEnd are set for HeaderRange.
	RangeStart, RangeEnd int64
	// Invert negates the result.
	Invert bool
}

func validateHeaderMatcher(h *routev3.HeaderMatcher) (HeaderMatcher, error) {
	hm := HeaderMatcher{Name: strings.ToLower(h.GetName()), Invert: h.GetInvertMatch()}
	switch s := h.GetHeaderMatchSpecifier().(type) {
	case *routev3.HeaderMatcher_ExactMatch:
		hm.Kind, hm.Value = HeaderExact, s.ExactMatch
	case *routev3.HeaderMatcher_PrefixMatch:
		hm.Kind, hm.Value = HeaderPrefix, s.PrefixMatch
	case *routev3.HeaderMatcher_SuffixMatch:
		hm.Kind, hm.Value = HeaderSuffix, s.SuffixMatch
	case *routev3.HeaderMatcher_ContainsMatch:
		hm.Kind, hm.Value = HeaderContains, s.ContainsMatch
	case *routev3.HeaderMatcher_SafeRegexMatch:
		hm.Kind, hm.Value = HeaderRegex, s.SafeRegexMatch.GetRegex()
	case *routev3.HeaderMatcher_PresentMatch:
		hm.Kind, hm.Present = HeaderPresent, s.PresentMatch
	case *routev3.HeaderMatcher_RangeMatch:
		hm.Kind, hm.RangeStart, hm.RangeEnd = HeaderRange, s.RangeMatch.GetStart(), s.RangeMatch.GetEnd()
		if hm.RangeEnd < hm.RangeStart {
			return hm, fmt.Errorf("range_match end %d is less than start %d", hm.RangeEnd, hm.RangeStart)
		}
	case *routev3.HeaderMatcher_StringMatch:
		if err := fromStringMatcher(s.StringMatch, &hm); err != nil {
			return hm, fmt.Errorf("string_match: %v", err)
		}
	default:
		return hm, errors.New("no header match specifier")
	}
	switch hm.Kind {
	case HeaderPrefix, HeaderSuffix, HeaderContains:
		if hm.Value == "" {
			return hm, fmt.Errorf("empty %v match", hm.Kind)
		}
	case HeaderRegex:
		if err := checkRegex(hm.Value); err != nil {
			return hm, err
		}
	}
	return hm, nil
}

func fromStringMatcher(m *matcherv3.StringMatcher, hm *HeaderMatcher) error {
	hm.IgnoreCase = m.GetIgnoreCase()
	switch p := m.GetMatchPattern().(type) {
	case *matcherv3.StringMatcher_Exact:
		hm.Kind, hm.Value = HeaderExact, p.Exact
	case *matcherv3.StringMatcher_Prefix:
		hm.Kind, hm.Value = HeaderPrefix, p.Prefix
	case *matcherv3.StringMatcher_Suffix:
		hm.Kind, hm.Value = HeaderSuffix, p.Suffix
	case *matcherv3.StringMatcher_Contains:
		hm.Kind, hm.Value = HeaderContains, p.Contains
	case *matcherv3.StringMatcher_SafeRegex:
		hm.Kind, hm.Value, hm.IgnoreCase = HeaderRegex, p.SafeRegex.GetRegex(), false
	default:
		return errors.New("no match pattern")
	}
	return nil
}

// String returns "exact", "prefix", "suffix", "contains", "safe_regex",
// "present" or "range".
func (k HeaderMatchKind) String() string {
	switch k {
	case HeaderExact:
		return "exact"
	case HeaderPrefix:
		return "prefix"
	case HeaderSuffix:
		return "suffix"
	case HeaderContains:
		return "contains"
	case HeaderRegex:
		return "safe_regex"
	case HeaderPresent:
		return "present"
	case HeaderRange:
		return "range"
	}
	return fmt.Sprintf("HeaderMatchKind(%d)", int(k))
}

// checkRegex reports whether re is a valid RE2 expression.
func checkRegex(re string) error {
	if _, err := regexp.Compile(re); err != nil {
		return fmt.Errorf("invalid regex %q: %v", re, err)
	}
	return nil
}
