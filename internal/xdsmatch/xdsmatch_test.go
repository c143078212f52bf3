package xdsmatch_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/xdslens/xdslens/internal/testing/testmain"
	"github.com/xdslens/xdslens/internal/xdsmatch"
	"github.com/xdslens/xdslens/xdsclient/xdsresource/matcher"
)

func TestMain(m *testing.M) { testmain.Run(m) }

func compile(t testing.TB, m matcher.String) xdsmatch.String {
	t.Helper()
	s, err := xdsmatch.CompileString(m)
	if err != nil {
		t.Fatalf("CompileString(%+v): %v", m, err)
	}
	return s
}

// TestString: each kind, with and without ignore_case, on the values
// C-core's StringMatcher::Match decides.
func TestString(t *testing.T) {
	type s = matcher.String
	const (
		ex, pre, suf, con, re = matcher.Exact, matcher.Prefix, matcher.Suffix, matcher.Contains, matcher.Regex
	)
	for _, tc := range []struct {
		m    s
		v    string
		want bool
	}{
		{s{Kind: ex, Value: "Abc"}, "Abc", true},
		{s{Kind: ex, Value: "Abc"}, "abc", false},
		{s{Kind: ex, Value: "Abc"}, "Abcd", false},
		{s{Kind: ex, Value: "Abc", IgnoreCase: true}, "aBC", true},
		{s{Kind: ex, Value: "Abc", IgnoreCase: true}, "aBCd", false},
		{s{Kind: pre, Value: "/pkg."}, "/pkg.S/M", true},
		{s{Kind: pre, Value: "/pkg."}, "/PKG.S/M", false},
		{s{Kind: pre, Value: "/PKG.", IgnoreCase: true}, "/pkg.S/M", true},
		{s{Kind: pre, Value: "/PKG.", IgnoreCase: true}, "/pk", false},
		{s{Kind: suf, Value: "/M"}, "/pkg.S/M", true},
		{s{Kind: suf, Value: "/m"}, "/pkg.S/M", false},
		{s{Kind: suf, Value: "/m", IgnoreCase: true}, "/pkg.S/M", true},
		{s{Kind: con, Value: ".S/"}, "/pkg.S/M", true},
		{s{Kind: con, Value: ".s/"}, "/pkg.S/M", false},
		{s{Kind: con, Value: "S/m", IgnoreCase: true}, "/pkg.S/M", true},
		{s{Kind: con, Value: "s/x", IgnoreCase: true}, "/pkg.S/M", false},
		// ignore_case folds ASCII letters only: a non-ASCII letter
		// matches itself, and only itself.
		{s{Kind: ex, Value: "CAFÉ", IgnoreCase: true}, "cafÉ", true},
		{s{Kind: ex, Value: "CAFÉ", IgnoreCase: true}, "café", false},
		{s{Kind: pre, Value: "k", IgnoreCase: true}, "\u212a", false}, // the Kelvin sign
		{s{Kind: con, Value: "S", IgnoreCase: true}, "ſ", false},      // long s
		// safe_regex matches the whole value, with case, whatever
		// ignore_case says.
		{s{Kind: re, Value: "/pkg\\..*"}, "/pkg.S/M", true},
		{s{Kind: re, Value: "pkg"}, "/pkg.S/M", false},
		{s{Kind: re, Value: "a|ab"}, "ab", true}, // a full match, not the leftmost one
		{s{Kind: re, Value: "/PKG\\..*", IgnoreCase: true}, "/pkg.S/M", false},
		// Empty values are allowed, as in C-core: an empty exact matches
		// the empty string only; an empty prefix, suffix or contains
		// matches every value, the empty one included.
		{s{Kind: ex}, "", true},
		{s{Kind: ex}, "a", false},
		{s{Kind: ex, IgnoreCase: true}, "", true},
		{s{Kind: pre}, "anything", true},
		{s{Kind: pre}, "", true},
		{s{Kind: suf}, "anything", true},
		{s{Kind: suf, IgnoreCase: true}, "", true},
		{s{Kind: con}, "anything", true},
		{s{Kind: con, IgnoreCase: true}, "", true},
		{s{Kind: re}, "", true},
		{s{Kind: re}, "a", false},
	} {
		m := compile(t, tc.m)
		if got := m.Match(tc.v); got != tc.want {
			t.Errorf("%v %q ignore_case=%v: Match(%q) = %v, want %v", tc.m.Kind, tc.m.Value, tc.m.IgnoreCase, tc.v, got, tc.want)
		}
	}
}

// TestCompileStringErrors: what is not a string match, and regular
// expressions that are invalid as written, anchored or not.
func TestCompileStringErrors(t *testing.T) {
	for _, tc := range []struct {
		m    matcher.String
		want string
	}{
		{matcher.String{Kind: matcher.Regex, Value: "a("}, "invalid regex \"a(\": error parsing regexp: missing closing ): `a(`"},
		// Anchored as ^(?:a)|(b)$, it would compile, and match what
		// starts with "a" or ends with "b".
		{matcher.String{Kind: matcher.Regex, Value: "a)|(b"}, "invalid regex \"a)|(b\": error parsing regexp: unexpected ): `a)|(b`"},
		{matcher.String{Kind: matcher.Regex, Value: ")(?:"}, "invalid regex \")(?:\": error parsing regexp: unexpected ): `)(?:`"},
		// Valid as written, but past Go's nesting limit once anchored.
		{matcher.String{Kind: matcher.Regex, Value: nested(999)}, "invalid regex " + strconv.Quote(nested(999)) + ": anchored to match whole values: expression nests too deeply"},
		{matcher.String{Kind: matcher.Present}, "present is not a string match"},
		{matcher.String{}, "Kind(0) is not a string match"},
	} {
		if _, err := xdsmatch.CompileString(tc.m); err == nil || err.Error() != tc.want {
			t.Errorf("CompileString(%+v) = %v, want %q", tc.m, err, tc.want)
		}
	}
}

// nested returns "a" in n nested groups.
func nested(n int) string { return strings.Repeat("(", n) + "a" + strings.Repeat(")", n) }

// TestDeepestRegex: the deepest expression accepted compiles and matches
// whole values.
func TestDeepestRegex(t *testing.T) {
	s := compile(t, matcher.String{Kind: matcher.Regex, Value: nested(998)})
	if !s.Match("a") || s.Match("aa") || s.Match("") {
		t.Error(`a regex nested 998 levels deep around "a" does not match exactly "a"`)
	}
}

// The zero String and the zero Header match nothing.
func TestZeroValuesMatchNothing(t *testing.T) {
	var s xdsmatch.String
	var h xdsmatch.Header
	for _, v := range []string{"", "a"} {
		if s.Match(v) {
			t.Errorf("zero String matches %q", v)
		}
		if h.Match(v, true) || h.Match(v, false) {
			t.Errorf("zero Header matches %q", v)
		}
	}
}

// TestHeader: presence, ranges, strings and inversion, as C-core's
// HeaderMatcher::Match decides them.
func TestHeader(t *testing.T) {
	type h = matcher.Header
	const absent = "\x00absent"
	for _, tc := range []struct {
		m    h
		v    string // absent for a header not sent
		want bool
	}{
		{h{Kind: matcher.Present, Present: true}, "", true},
		{h{Kind: matcher.Present, Present: true}, absent, false},
		{h{Kind: matcher.Present, Present: false}, absent, true},
		{h{Kind: matcher.Present, Present: false}, "x", false},
		{h{Kind: matcher.Present, Present: true, Invert: true}, absent, true},
		{h{Kind: matcher.Range, RangeStart: 10, RangeEnd: 20}, "10", true},
		{h{Kind: matcher.Range, RangeStart: 10, RangeEnd: 20}, "19", true},
		{h{Kind: matcher.Range, RangeStart: 10, RangeEnd: 20}, "20", false},
		{h{Kind: matcher.Range, RangeStart: 10, RangeEnd: 20}, "15x", false},
		{h{Kind: matcher.Range, RangeStart: -5, RangeEnd: 0}, "-5", true},
		{h{Kind: matcher.Range, RangeStart: 10, RangeEnd: 20}, "99999999999999999999", false},
		{h{Kind: matcher.Range, RangeStart: 10, RangeEnd: 20, Invert: true}, "5", true},
		{h{Kind: matcher.Range, RangeStart: 10, RangeEnd: 20, Invert: true}, absent, false},
		{h{Kind: matcher.Range, RangeStart: 5, RangeEnd: 5}, "5", false}, // empty, and valid
		// C-core reads the value with absl::SimpleAtoi: ASCII whitespace
		// around it and a plus sign are allowed, nothing else.
		{h{Kind: matcher.Range, RangeStart: 10, RangeEnd: 20}, " 15 ", true},
		{h{Kind: matcher.Range, RangeStart: 10, RangeEnd: 20}, "\t15\r", true},
		{h{Kind: matcher.Range, RangeStart: 10, RangeEnd: 20}, "+15", true},
		{h{Kind: matcher.Range, RangeStart: 10, RangeEnd: 20}, "1 5", false},
		{h{Kind: matcher.Range, RangeStart: 10, RangeEnd: 20}, "\u00a015", false},
		{h{Kind: matcher.Range, RangeStart: 10, RangeEnd: 20}, " ", false},
		{h{Kind: matcher.Exact, Value: "canary"}, "canary", true},
		{h{Kind: matcher.Exact, Value: "canary"}, absent, false},
		{h{Kind: matcher.Exact, Value: "canary", Invert: true}, "prod", true},
		{h{Kind: matcher.Exact, Value: "canary", Invert: true}, absent, false}, // absent fails, inverted or not
		{h{Kind: matcher.Exact, Value: "Canary", IgnoreCase: true}, "CANARY", true},
		{h{Kind: matcher.Exact}, "", true},
		{h{Kind: matcher.Prefix}, "", true},
		{h{Kind: matcher.Prefix}, absent, false},
		{h{Kind: matcher.Suffix}, "any", true},
		{h{Kind: matcher.Contains, Invert: true}, "any", false},
		{h{Kind: matcher.Regex, Value: "a.c"}, "abc", true},
		{h{Kind: matcher.Regex, Value: "b"}, "abc", false},
	} {
		c, err := xdsmatch.CompileHeader(tc.m)
		if err != nil {
			t.Fatalf("CompileHeader(%+v): %v", tc.m, err)
		}
		if got := c.Match(tc.v, tc.v != absent); got != tc.want {
			t.Errorf("%+v: Match(%q) = %v, want %v", tc.m, tc.v, got, tc.want)
		}
	}
}

func TestCompileHeaderErrors(t *testing.T) {
	for _, tc := range []struct {
		m    matcher.Header
		want string
	}{
		{matcher.Header{Kind: matcher.Range, RangeStart: 5, RangeEnd: 1}, "range_match end 1 is less than start 5"},
		{matcher.Header{Kind: matcher.Regex, Value: "("}, "invalid regex \"(\": error parsing regexp: missing closing ): `(`"},
		{matcher.Header{}, "Kind(0) is not a string match"},
	} {
		if _, err := xdsmatch.CompileHeader(tc.m); err == nil || err.Error() != tc.want {
			t.Errorf("CompileHeader(%+v) = %v, want %q", tc.m, err, tc.want)
		}
	}
}

// Matching allocates nothing, for any kind, with or without case.
func TestMatchAllocatesNothing(t *testing.T) {
	const v = "/Pkg.Service/Method"
	for _, m := range []matcher.String{
		{Kind: matcher.Exact, Value: v}, {Kind: matcher.Exact, Value: v, IgnoreCase: true},
		{Kind: matcher.Prefix, Value: "/PKG."}, {Kind: matcher.Prefix, Value: "/PKG.", IgnoreCase: true},
		{Kind: matcher.Suffix, Value: "method"}, {Kind: matcher.Suffix, Value: "method", IgnoreCase: true},
		{Kind: matcher.Contains, Value: "service/"}, {Kind: matcher.Contains, Value: "service/", IgnoreCase: true},
		{Kind: matcher.Regex, Value: "/[A-Za-z.]+/Method"},
	} {
		s := compile(t, m)
		if n := testing.AllocsPerRun(100, func() { s.Match(v) }); n != 0 {
			t.Errorf("%v ignore_case=%v: %v allocations per match", m.Kind, m.IgnoreCase, n)
		}
	}
	h, err := xdsmatch.CompileHeader(matcher.Header{Kind: matcher.Range, RangeStart: 0, RangeEnd: 100})
	if err != nil {
		t.Fatal(err)
	}
	if n := testing.AllocsPerRun(100, func() { h.Match("42", true) }); n != 0 {
		t.Errorf("range: %v allocations per match", n)
	}
}

// asciiLower lowers the ASCII letters of s byte by byte, the reference
// of the fuzz target (strings.Map would turn invalid UTF-8 into U+FFFD).
func asciiLower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// FuzzString checks every kind but safe_regex, with and without case,
// against the strings package on ASCII-lowered strings, on any bytes,
// invalid UTF-8 included.
func FuzzString(f *testing.F) {
	f.Add("Abc", "xABCy", true)
	f.Add("", "", false)
	f.Add("\u212a", "k", true)
	f.Add("\xff", "a\xffb", true)
	f.Add("\xe2", "\xd1", true) // two invalid UTF-8 bytes: unequal
	f.Fuzz(func(t *testing.T, value, v string, fold bool) {
		lv, lvalue := v, value
		if fold {
			lv, lvalue = asciiLower(v), asciiLower(value)
		}
		for kind, want := range map[matcher.Kind]bool{
			matcher.Exact:    lv == lvalue,
			matcher.Prefix:   strings.HasPrefix(lv, lvalue),
			matcher.Suffix:   strings.HasSuffix(lv, lvalue),
			matcher.Contains: strings.Contains(lv, lvalue),
		} {
			s := compile(t, matcher.String{Kind: kind, Value: value, IgnoreCase: fold})
			if got := s.Match(v); got != want {
				t.Errorf("%v %q ignore_case=%v: Match(%q) = %v, want %v", kind, value, fold, v, got, want)
			}
		}
	})
}
