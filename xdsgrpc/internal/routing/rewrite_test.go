package routing

import (
	"context"
	"regexp"
	"runtime"
	"strings"
	"testing"

	"github.com/cespare/xxhash/v2"
	"google.golang.org/grpc/metadata"

	"github.com/xdslens/xdslens/xdsclient/xdsresource/routeconfig"
)

// TestRewrite checks regex_rewrite as RE2::GlobalReplace reads it: "\N"
// groups, "\\", "$" literal, unmatched groups empty, a group the pattern
// lacks replacing nothing, an invalid escape ending the substitution, and
// empty matches.
func TestRewrite(t *testing.T) {
	for _, tc := range []struct {
		name, pattern, subst, value, want string
	}{
		{"group", `^user-(\d+)$`, `id-\1`, "user-42", "id-42"},
		{"whole match", `\d+`, `<\0>`, "a1b22", "a<1>b<22>"},
		{"groups swapped", `(\w+)@(\w+)`, `\2.\1`, "alice@example", "example.alice"},
		{"dollar is literal", `^user-(\d+)$`, `$1`, "user-42", "$1"},
		{"escaped backslash", `-`, `\\`, "a-b", `a\b`},
		{"group that took no part", `(a)|(b)`, `[\1\2]`, "b", "[b]"},
		{"group the pattern lacks", `x`, `\1`, "axb", "axb"},
		{"group the pattern lacks, after an invalid escape", `x`, `\q\5`, "axb", "axb"},
		{"invalid escape", `b`, `X\qY`, "abc", "aXc"},
		{"trailing backslash", `b`, `X\`, "abc", "aXc"},
		{"empty matches", `a*`, `-`, "baaac", "-b-c-"},
		{"no match", `z`, `-`, "abc", "abc"},
		{"every match", `o`, `0`, "foo boo", "f00 b00"},
		{"multibyte around empty matches", `x*`, `.`, "é", ".é."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := rewritten(t, tc.pattern, tc.subst, tc.value); got != xxhash.Sum64String(tc.want) {
				t.Errorf("rewriting %q with %q -> %q: hash %#x, want that of %q, %#x", tc.value, tc.pattern, tc.subst, got, tc.want, xxhash.Sum64String(tc.want))
			}
		})
	}
}

func rewritten(t *testing.T, pattern, subst, value string) uint64 {
	t.Helper()
	rw := newRewrite(regexp.MustCompile(pattern), subst)
	var d xxhash.Digest
	d.Reset()
	rw.writeTo(&d, value)
	return d.Sum64()
}

// TestRewriteBounded: a pattern that matches at every byte of a 511-byte
// header (512 matches), with a substitution of 128 KiB, would make a value
// of 64 MiB; the hash is computed without it. (What the matching itself
// allocates grows with the header's length squared under the race
// detector, which keeps regexp's machines from being reused: about 4 MiB
// here, and 40 KiB without it.)
func TestRewriteBounded(t *testing.T) {
	subst := strings.Repeat("s", 128<<10)
	tbl := &Table{actions: []action{{hashes: mustHashes(t, routeconfig.HashPolicy{
		Kind: routeconfig.HashHeader, HeaderName: "h", Regex: "x*", Substitution: subst,
	})}}}
	ctx := metadata.NewOutgoingContext(context.Background(), metadata.Pairs("h", strings.Repeat("v", 511)))
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	if _, ok := tbl.Hash(ctx, 0, 0); !ok {
		t.Fatal("no hash")
	}
	runtime.ReadMemStats(&after)
	if n := after.TotalAlloc - before.TotalAlloc; n > 16<<20 {
		t.Errorf("hashing allocated %d bytes, want under 16 MiB (the rewritten value is 64 MiB)", n)
	}
}

func mustHashes(t *testing.T, ps ...routeconfig.HashPolicy) []hashPolicy {
	t.Helper()
	hs, err := compileHashPolicies(ps)
	if err != nil {
		t.Fatal(err)
	}
	return hs
}
