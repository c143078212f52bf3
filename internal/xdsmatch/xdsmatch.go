package xdsmatch

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/xdslens/xdslens/internal/asciifold"
	"github.com/xdslens/xdslens/xdsclient/xdsresource/matcher"
)

// String is a compiled string matcher. The zero String matches nothing.
type String struct {
	kind  matcher.Kind // Exact, Prefix, Suffix, Contains or Regex; 0 for the zero String
	fold  bool         // ignore_case: value is lower-cased
	value string       // not for Regex
	re    *regexp.Regexp
}

// CompileString compiles m. It fails on a kind that is not a string
// match's and on a regular expression that is not valid as written.
func CompileString(m matcher.String) (String, error) {
	switch m.Kind {
	case matcher.Exact, matcher.Prefix, matcher.Suffix, matcher.Contains:
		if m.IgnoreCase {
			return String{kind: m.Kind, fold: true, value: asciifold.Lower(m.Value)}, nil
		}
		return String{kind: m.Kind, value: m.Value}, nil
	case matcher.Regex:
		re, err := compileRegex(m.Value)
		if err != nil {
			return String{}, err
		}
		return String{kind: matcher.Regex, re: re}, nil
	}
	return String{}, fmt.Errorf("%v is not a string match", m.Kind)
}

// compileRegex compiles expr to match whole values (matcher.WholeRegex).
// expr must be valid as written, and anchored (matcher.CheckWholeRegex).
func compileRegex(expr string) (*regexp.Regexp, error) {
	if err := matcher.CheckWholeRegex(expr); err != nil {
		return nil, err
	}
	return regexp.Compile(matcher.WholeRegex(expr))
}

// Match reports whether v matches.
func (s *String) Match(v string) bool {
	n, w := len(v), len(s.value)
	switch s.kind {
	case matcher.Exact:
		return s.equal(v)
	case matcher.Prefix:
		return n >= w && s.equal(v[:w])
	case matcher.Suffix:
		return n >= w && s.equal(v[n-w:])
	case matcher.Contains:
		if s.fold {
			return asciifold.Contains(v, s.value)
		}
		return strings.Contains(v, s.value)
	case matcher.Regex:
		return s.re.MatchString(v)
	}
	return false
}

// equal reports whether v equals the value, folding ASCII case with
// ignore_case.
func (s *String) equal(v string) bool {
	if s.fold {
		return asciifold.Equal(v, s.value)
	}
	return v == s.value
}

// Header is a compiled header matcher, without its header's name. The
// zero Header matches nothing.
type Header struct {
	kind       matcher.Kind
	str        String // the string kinds
	present    bool   // Present
	start, end int64  // Range: [start, end)
	invert     bool
}

// CompileHeader compiles h. It fails as CompileString does, on a kind it
// does not know, and on a range that ends before it starts.
func CompileHeader(h matcher.Header) (Header, error) {
	c := Header{kind: h.Kind, invert: h.Invert}
	switch h.Kind {
	case matcher.Present:
		c.present = h.Present
	case matcher.Range:
		if h.RangeEnd < h.RangeStart {
			return Header{}, fmt.Errorf("range_match end %d is less than start %d", h.RangeEnd, h.RangeStart)
		}
		c.start, c.end = h.RangeStart, h.RangeEnd
	default:
		s, err := CompileString(matcher.String{Kind: h.Kind, Value: h.Value, IgnoreCase: h.IgnoreCase})
		if err != nil {
			return Header{}, err
		}
		c.str = s
	}
	return c, nil
}

// asciiSpace is the whitespace absl::SimpleAtoi allows around a number.
const asciiSpace = " \t\n\v\f\r"

// Match reports whether a header matches whose value is value, when
// present says it was sent. A present_match matcher compares presence;
// every other matcher fails on an absent header, inverted or not; a
// range matcher needs a decimal integer in its range, as C-core reads
// one.
func (h *Header) Match(value string, present bool) bool {
	var m bool
	switch {
	case h.kind == matcher.Present:
		m = present == h.present
	case !present:
		return false
	case h.kind == matcher.Range:
		// As C-core reads it (absl::SimpleAtoi): a decimal integer with
		// an optional sign, ASCII whitespace around it allowed.
		n, err := strconv.ParseInt(strings.Trim(value, asciiSpace), 10, 64)
		m = err == nil && n >= h.start && n < h.end
	default:
		m = h.str.Match(value)
	}
	return m != h.invert
}
