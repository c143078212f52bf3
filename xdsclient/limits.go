package xdsclient

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/xdslens/xdslens/xdsclient/internal/xdstp"
	"github.com/xdslens/xdslens/xdsclient/xdsresource"
)

// MaxResourceNameSize is the longest resource name, in bytes, that Watch
// takes, before and after an xdstp:// name is put in its canonical form.
// A name must also be valid UTF-8. Real names (a DNS name, a service and
// port, an xdstp:// name with a few context parameters) are a few hundred
// bytes at most; the bound keeps one caller's name from making a request
// that the server refuses (gRPC servers take 4 MiB by default), which would
// fail the stream of every resource on that server.
const MaxResourceNameSize = 4 << 10

// checkName returns why name cannot be watched, or nil.
func checkName(name string) error {
	if len(name) > MaxResourceNameSize {
		return fmt.Errorf("%d bytes, more than the %d a resource name may have", len(name), MaxResourceNameSize)
	}
	if !utf8.ValidString(name) {
		return fmt.Errorf("not valid UTF-8 (byte %d)", invalidAt(name))
	}
	return nil
}

// invalidAt returns the offset of the first byte of s that is not part of
// a valid UTF-8 encoding.
func invalidAt(s string) int {
	for i, r := range s {
		if r == utf8.RuneError {
			if _, n := utf8.DecodeRuneInString(s[i:]); n == 1 {
				return i
			}
		}
	}
	return len(s)
}

// canonicalName returns the canonical form of a resource name (see package
// xdstp) and checks that the type segment of an xdstp:// name names the
// type of typeURL. Old-style names are returned as they are.
func canonicalName(typeURL, name string) (string, error) {
	if !xdstp.Is(name) {
		return name, nil
	}
	n, err := xdstp.Parse(name)
	if err != nil {
		return "", err
	}
	if want := strings.TrimPrefix(typeURL, xdsresource.TypeURLPrefix); n.Type != want {
		return "", fmt.Errorf("resource name %q names type %q, watched as %q", name, n.Type, want)
	}
	return n.String(), nil
}
