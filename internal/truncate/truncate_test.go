package truncate_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/xdslens/xdslens/internal/truncate"
)

func TestString(t *testing.T) {
	for _, tc := range []struct {
		s    string
		max  int
		want string
	}{
		{"short", 16, "short"},
		{"", 0, ""},
		{strings.Repeat("a", 100), 100, strings.Repeat("a", 100)},
		{strings.Repeat("a", 101), 100, strings.Repeat("a", 64) + "...[37 more bytes]"},
	} {
		if got := truncate.String(tc.s, tc.max); got != tc.want {
			t.Errorf("String(%d bytes, %d) = %q, want %q", len(tc.s), tc.max, got, tc.want)
		}
	}
}

// A cut never splits a character, and the result, marker included, is
// never longer than max (when max can hold the marker).
func TestStringBounds(t *testing.T) {
	s := strings.Repeat("é€😀", 10_000)
	for max := 36; max < 300; max++ {
		got := truncate.String(s, max)
		if len(got) > max {
			t.Fatalf("max %d: %d bytes", max, len(got))
		}
		if !utf8.ValidString(got) {
			t.Fatalf("max %d: %q is not valid UTF-8", max, got)
		}
		if !strings.HasSuffix(got, " more bytes]") {
			t.Fatalf("max %d: %q has no marker", max, got)
		}
	}
	if got := truncate.String(strings.Repeat("x", 3<<20), 16<<10); len(got) > 16<<10 || !strings.HasSuffix(got, "...[3129380 more bytes]") {
		t.Fatalf("3 MiB cut at 16 KiB: %d bytes ending %q", len(got), got[len(got)-30:])
	}
}
