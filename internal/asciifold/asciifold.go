// Package asciifold compares strings without regard to ASCII case, as
// gRPC C-core's string matchers do when they ignore case (absl's
// EqualsIgnoreCase, StartsWithIgnoreCase, AsciiStrToLower): only A–Z and
// a–z are folded; every other byte, those of non-ASCII letters included,
// must be equal. A pattern is lowered once (Lower), where it is compiled;
// the comparisons then fold the other side byte by byte, without
// allocating, so that they can run on every RPC.
package asciifold

// Lower returns s with A–Z made a–z, and s itself when it has none.
func Lower(s string) string {
	i := 0
	for i < len(s) && !isUpper(s[i]) {
		i++
	}
	if i == len(s) {
		return s
	}
	b := []byte(s)
	for ; i < len(b); i++ {
		b[i] = lower(b[i])
	}
	return string(b)
}

// Equal reports whether s equals lowered (a string Lower returned) but
// for ASCII case.
func Equal(s, lowered string) bool {
	if len(s) != len(lowered) {
		return false
	}
	for i := 0; i < len(s); i++ {
		if lower(s[i]) != lowered[i] {
			return false
		}
	}
	return true
}

// Contains reports whether lowered is within s but for ASCII case.
func Contains(s, lowered string) bool {
	for i := 0; i+len(lowered) <= len(s); i++ {
		if Equal(s[i:i+len(lowered)], lowered) {
			return true
		}
	}
	return false
}

func isUpper(c byte) bool { return 'A' <= c && c <= 'Z' }

func lower(c byte) byte {
	if isUpper(c) {
		return c + 'a' - 'A'
	}
	return c
}
