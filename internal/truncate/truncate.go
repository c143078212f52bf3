// Package truncate shortens strings that come from outside the program (a
// server's version_info, a caller's resource name, a status message) before
// they are shown in an error, a log or a debugging view, so that none of
// those can be made arbitrarily large by the one who supplied the string.
package truncate

import (
	"strconv"
	"unicode/utf8"
)

// maxMarker is the longest marker String appends: "...[" and " more bytes]"
// around a decimal int.
const maxMarker = len("...[") + 20 + len(" more bytes]")

// String returns s if it is at most limit bytes long. Otherwise it returns
// the start of s, cut on a UTF-8 character boundary, followed by a marker
// that says how many bytes were left out, "...[N more bytes]", the whole
// at most limit bytes long. A limit too small to hold the marker is taken
// as large enough to hold it.
func String(s string, limit int) string {
	if len(s) <= limit {
		return s
	}
	cut := max(0, limit-maxMarker)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "...[" + strconv.Itoa(len(s)-cut) + " more bytes]"
}
