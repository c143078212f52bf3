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

// Contains finds a lowered pattern anywhere in a string, but for ASCII
// case, and the empty pattern in every string.
func TestContains(t *testing.T) {
	const s = "/Pkg.Service/Éa"
	for pattern, want := range map[string]bool{"/pkg.": true, "ÉA": true, "SERVICE/": true, "": true, "éa": false, "service/éa/": false} {
		if got := Contains(s, Lower(pattern)); got != want {
			t.Errorf("Contains(%q, Lower(%q)) = %v, want %v", s, pattern, got, want)
		}
	}
	if !Contains("", "") || Contains("ab", "abc") {
		t.Error("Contains of the empty string, or of a pattern longer than the string, is wrong")
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
