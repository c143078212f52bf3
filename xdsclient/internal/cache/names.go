package cache

import (
	"fmt"

	"github.com/xdslens/xdslens/xdsclient/internal/xdstp"
	"github.com/xdslens/xdslens/xdsclient/xdsresource"
)

// CanonicalName returns the canonical form of a resource name (see package
// xdstp) and checks that the type segment of an xdstp:// name names typ.
// Old-style names are returned as they are.
func CanonicalName(typ xdsresource.Type, name string) (string, error) {
	if !xdstp.Is(name) {
		return name, nil
	}
	n, err := xdstp.Parse(name)
	if err != nil {
		return "", err
	}
	if n.Type != xdsresource.TypeName(typ) {
		return "", fmt.Errorf("resource name %q names type %q, watched as %q", name, n.Type, xdsresource.TypeName(typ))
	}
	return n.String(), nil
}

// canonicalReceived is CanonicalName for a name a server sent: a name that
// is already canonical costs no allocation, and one that cannot be
// canonicalised is kept as it is (no watch can match it).
func canonicalReceived(typ xdsresource.Type, name string) string {
	if xdstp.IsCanonical(name) {
		return name
	}
	if n, err := CanonicalName(typ, name); err == nil {
		return n
	}
	return name
}
