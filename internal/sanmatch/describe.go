package sanmatch

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/xdslens/xdslens/xdsclient/xdsresource/matcher"
)

// Bounds of what an error quotes of a certificate or of the matchers, so
// that a certificate of many or long SANs cannot make a huge status
// message.
const (
	maxListed      = 8
	maxQuotedBytes = 256
)

// quote quotes s, cut to maxQuotedBytes.
func quote(s string) string {
	if len(s) > maxQuotedBytes {
		return strconv.Quote(s[:maxQuotedBytes]) + fmt.Sprintf("...[%d more bytes]", len(s)-maxQuotedBytes)
	}
	return strconv.Quote(s)
}

// list quotes the first maxListed strings of ss, then says how many
// more there are.
func list(ss []string) string {
	return listed(len(ss), func(i int) string { return quote(ss[i]) })
}

// listed writes the first maxListed of n items, then how many more there
// are.
func listed(n int, item func(i int) string) string {
	var b strings.Builder
	b.WriteByte('[')
	for i := range min(n, maxListed) {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(item(i))
	}
	if n > maxListed {
		fmt.Fprintf(&b, " and %d more", n-maxListed)
	}
	b.WriteByte(']')
	return b.String()
}

// describe writes a matcher as its kind and value.
func describe(m matcher.String) string {
	s := m.Kind.String() + " " + quote(m.Value)
	if m.IgnoreCase {
		s += " ignore_case"
	}
	return s
}
