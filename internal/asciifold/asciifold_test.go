package asciifold

import (
	"strings"
	"testing"

	"github.com/xdslens/xdslens/internal/testing/testmain"
)

func TestMain(m *testing.M) { testmain.Run(m) }

// Only ASCII letters fold: a non-ASCII letter matches only itself (C-core
// compares without case with absl's ASCII functions), where Go's Unicode
// folding would also take the Kelvin sign for k, or é for É.
func TestFoldsASCIIOnly(t *testing.T) {
	for _, c := range []struct {
		s, pattern string
		equal      bool
	}{
		{"Content-Type", "content-type", true},
		{"ABC", "abc", true},
		{"abc", "ABC", true},
		{"É", "É", true},
		{"É", "é", false},
		{"\u212a", "k", false}, // the Kelvin sign
		{"ſ", "s", false},      // long s
		{"a", "ab", false},
		{"", "", true},
		{"x-1", "x-1", true},
		{"[", "{", false}, // 0x5b and 0x7b differ by the case bit, but are not letters
	} {
		if got := Equal(c.s, Lower(c.pattern)); got != c.equal {
			t.Errorf("Equal(%q, Lower(%q)) = %v, want %v", c.s, c.pattern, got, c.equal)
		}
	}
}

func TestPrefixSuffixContains(t *testing.T) {
	for _, c := range []struct {
		s, pattern               string
		prefix, suffix, contains bool
	}{
		{"/Pkg.Service/Method", "/pkg.", true, false, true},
		{"/Pkg.Service/Method", "METHOD", false, true, true},
		{"/Pkg.Service/Method", "SERVICE/", false, false, true},
		{"/Pkg.Service/Method", "", true, true, true},
		{"ab", "abc", false, false, false},
		{"Éa", "éa", false, false, false},
	} {
		p := Lower(c.pattern)
		if got := HasPrefix(c.s, p); got != c.prefix {
			t.Errorf("HasPrefix(%q, %q) = %v", c.s, p, got)
		}
		if got := HasSuffix(c.s, p); got != c.suffix {
			t.Errorf("HasSuffix(%q, %q) = %v", c.s, p, got)
		}
		if got := Contains(c.s, p); got != c.contains {
			t.Errorf("Contains(%q, %q) = %v", c.s, p, got)
		}
	}
}

// Lower changes only A–Z, and gives back the string it was given when it
// has none.
func TestLower(t *testing.T) {
	if got := Lower("ÀBC-É"); got != "Àbc-É" {
		t.Errorf("Lower = %q", got)
	}
	s := strings.Repeat("x", 10)
	if n := testing.AllocsPerRun(10, func() { _ = Lower(s) }); n != 0 {
		t.Errorf("Lower of a lower-case string allocates %v times", n)
	}
	if n := testing.AllocsPerRun(10, func() { _ = Contains("/Pkg.Service/Method", "service") }); n != 0 {
		t.Errorf("Contains allocates %v times", n)
	}
}
