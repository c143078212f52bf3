package matcher_test

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	xdscorev3 "github.com/cncf/xds/go/xds/core/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"

	"github.com/xdslens/xdslens/internal/testing/testmain"
	"github.com/xdslens/xdslens/xdsclient/xdsresource/matcher"
)

func TestMain(m *testing.M) { testmain.Run(m) }

func TestKindString(t *testing.T) {
	for k, want := range map[matcher.Kind]string{
		matcher.Exact: "exact", matcher.Prefix: "prefix", matcher.Suffix: "suffix", matcher.Contains: "contains",
		matcher.Regex: "safe_regex", matcher.Present: "present", matcher.Range: "range", matcher.Kind(0): "Kind(0)",
	} {
		if got := k.String(); got != want {
			t.Errorf("Kind(%d).String() = %q, want %q", int(k), got, want)
		}
	}
}

// stringMatcher returns a StringMatcher with pattern p.
func stringMatcher(p any, ignoreCase bool) *matcherv3.StringMatcher {
	m := &matcherv3.StringMatcher{IgnoreCase: ignoreCase}
	switch v := p.(type) {
	case *matcherv3.StringMatcher_Exact:
		m.MatchPattern = v
	case *matcherv3.StringMatcher_Prefix:
		m.MatchPattern = v
	case *matcherv3.StringMatcher_Suffix:
		m.MatchPattern = v
	case *matcherv3.StringMatcher_Contains:
		m.MatchPattern = v
	case *matcherv3.StringMatcher_SafeRegex:
		m.MatchPattern = v
	}
	return m
}

// check fails t when got and err are not want, or the error wantErr.
func check[T comparable](t *testing.T, name string, got T, err error, want T, wantErr string) {
	t.Helper()
	switch {
	case wantErr != "" && (err == nil || err.Error() != wantErr):
		t.Errorf("%s: error %v, want %q", name, err, wantErr)
	case wantErr == "" && err != nil:
		t.Errorf("%s: %v", name, err)
	case wantErr == "" && got != want:
		t.Errorf("%s: %+v, want %+v", name, got, want)
	}
}

// TestValidateHeader: each match specifier, as gRPC reads it: the name
// lower-cased, a string_match taken apart, and the values gRPC rejects.
func TestValidateHeader(t *testing.T) {
	regex := func(re string) *matcherv3.RegexMatcher { return &matcherv3.RegexMatcher{Regex: re} }
	for _, tc := range []struct {
		name string
		in   *routev3.HeaderMatcher
		want matcher.Header
		err  string
	}{
		{"exact", &routev3.HeaderMatcher{Name: "X-Env", HeaderMatchSpecifier: &routev3.HeaderMatcher_ExactMatch{ExactMatch: "prod"}},
			matcher.Header{Name: "x-env", Kind: matcher.Exact, Value: "prod"}, ""},
		{"inverted present", &routev3.HeaderMatcher{Name: "a", InvertMatch: true, HeaderMatchSpecifier: &routev3.HeaderMatcher_PresentMatch{PresentMatch: true}},
			matcher.Header{Name: "a", Kind: matcher.Present, Present: true, Invert: true}, ""},
		{"range", &routev3.HeaderMatcher{Name: "a", HeaderMatchSpecifier: &routev3.HeaderMatcher_RangeMatch{RangeMatch: &typev3.Int64Range{Start: 1, End: 5}}},
			matcher.Header{Name: "a", Kind: matcher.Range, RangeStart: 1, RangeEnd: 5}, ""},
		{"string_match prefix ignoring case", &routev3.HeaderMatcher{Name: "a", HeaderMatchSpecifier: &routev3.HeaderMatcher_StringMatch{
			StringMatch: stringMatcher(&matcherv3.StringMatcher_Prefix{Prefix: "v"}, true)}},
			matcher.Header{Name: "a", Kind: matcher.Prefix, Value: "v", IgnoreCase: true}, ""},
		{"string_match regex ignores ignore_case", &routev3.HeaderMatcher{Name: "a", HeaderMatchSpecifier: &routev3.HeaderMatcher_StringMatch{
			StringMatch: stringMatcher(&matcherv3.StringMatcher_SafeRegex{SafeRegex: regex("v.*")}, true)}},
			matcher.Header{Name: "a", Kind: matcher.Regex, Value: "v.*"}, ""},
		{"reversed range", &routev3.HeaderMatcher{Name: "a", HeaderMatchSpecifier: &routev3.HeaderMatcher_RangeMatch{RangeMatch: &typev3.Int64Range{Start: 5, End: 1}}},
			matcher.Header{}, "range_match end 1 is less than start 5"},
		// Empty values are valid, as in C-core.
		{"empty suffix", &routev3.HeaderMatcher{Name: "a", HeaderMatchSpecifier: &routev3.HeaderMatcher_SuffixMatch{}},
			matcher.Header{Name: "a", Kind: matcher.Suffix}, ""},
		{"empty string_match contains", &routev3.HeaderMatcher{Name: "a", HeaderMatchSpecifier: &routev3.HeaderMatcher_StringMatch{
			StringMatch: stringMatcher(&matcherv3.StringMatcher_Contains{}, true)}},
			matcher.Header{Name: "a", Kind: matcher.Contains, IgnoreCase: true}, ""},
		{"bad regex", &routev3.HeaderMatcher{Name: "a", HeaderMatchSpecifier: &routev3.HeaderMatcher_SafeRegexMatch{SafeRegexMatch: regex("(")}},
			matcher.Header{}, "invalid regex \"(\": error parsing regexp: missing closing ): `(`"},
		{"no specifier", &routev3.HeaderMatcher{Name: "a"}, matcher.Header{}, "no header match specifier is set"},
		{"string_match without pattern", &routev3.HeaderMatcher{Name: "a", HeaderMatchSpecifier: &routev3.HeaderMatcher_StringMatch{StringMatch: &matcherv3.StringMatcher{}}},
			matcher.Header{}, "string_match: no match pattern is set"},
	} {
		got, err := matcher.ValidateHeader(tc.in)
		check(t, tc.name, got, err, tc.want, tc.err)
	}
}

// TestValidateString: the kinds of a StringMatcher, and the values gRPC
// rejects.
func TestValidateString(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   *matcherv3.StringMatcher
		want matcher.String
		err  string
	}{
		{"exact", stringMatcher(&matcherv3.StringMatcher_Exact{Exact: "a"}, true), matcher.String{Kind: matcher.Exact, Value: "a", IgnoreCase: true}, ""},
		{"empty exact", stringMatcher(&matcherv3.StringMatcher_Exact{}, false), matcher.String{Kind: matcher.Exact}, ""},
		{"contains", stringMatcher(&matcherv3.StringMatcher_Contains{Contains: "b"}, false), matcher.String{Kind: matcher.Contains, Value: "b"}, ""},
		{"empty prefix", stringMatcher(&matcherv3.StringMatcher_Prefix{}, false), matcher.String{Kind: matcher.Prefix}, ""},
		{"empty suffix", stringMatcher(&matcherv3.StringMatcher_Suffix{}, true), matcher.String{Kind: matcher.Suffix, IgnoreCase: true}, ""},
		{"empty contains", stringMatcher(&matcherv3.StringMatcher_Contains{}, false), matcher.String{Kind: matcher.Contains}, ""},
		{"bad regex", stringMatcher(&matcherv3.StringMatcher_SafeRegex{SafeRegex: &matcherv3.RegexMatcher{Regex: "["}}, false), matcher.String{},
			"invalid regex \"[\": error parsing regexp: missing closing ]: `[`"},
		{"no pattern", &matcherv3.StringMatcher{}, matcher.String{}, "no match pattern is set"},
		{"custom pattern", &matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_Custom{Custom: &xdscorev3.TypedExtensionConfig{Name: "c"}}}, matcher.String{},
			"match pattern custom is not supported"},
	} {
		got, err := matcher.ValidateString(tc.in)
		check(t, tc.name, got, err, tc.want, tc.err)
	}
}

// TestCheckWholeRegex: an expression must be valid as written, and once
// anchored as WholeRegex anchors it to match whole values.
func TestCheckWholeRegex(t *testing.T) {
	nested := func(n int) string { return strings.Repeat("(", n) + "a" + strings.Repeat(")", n) }
	for _, tc := range []struct {
		re, err string
	}{
		{"spiffe://example\\.org/.*", ""},
		{nested(998), ""},
		{"a)|(b", "invalid regex \"a)|(b\": error parsing regexp: unexpected ): `a)|(b`"}, // valid only anchored
		{nested(999), "invalid regex " + strconv.Quote(nested(999)) + ": anchored to match whole values: expression nests too deeply"},
		{nested(1000), "invalid regex " + strconv.Quote(nested(1000)) + ": error parsing regexp: expression nests too deeply: `" + nested(1000) + "`"},
	} {
		err := matcher.CheckWholeRegex(tc.re)
		if got := fmt.Sprint(err); (err == nil) != (tc.err == "") || err != nil && got != tc.err {
			t.Errorf("CheckWholeRegex(%.20q...) = %.200v, want %.200q", tc.re, err, tc.err)
		}
		if err := matcher.CheckRegex(tc.re); tc.re == nested(999) && err != nil {
			t.Errorf("CheckRegex(%.20q...) = %v, want nil: it is valid as written", tc.re, err)
		}
	}
	if got, want := matcher.WholeRegex("a|b"), "^(?:a|b)$"; got != want {
		t.Errorf("WholeRegex(%q) = %q, want %q", "a|b", got, want)
	}
}
