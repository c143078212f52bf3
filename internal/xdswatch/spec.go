package xdswatch

import (
	"fmt"
	"strings"

	"github.com/xdslens/xdslens/internal/xdswatch/demo"
	"github.com/xdslens/xdslens/xdsclient/xdsresource"
)

// spec is one resource to watch, from a TYPE:NAME argument or command.
type spec struct {
	// typ is the resource type.
	typ xdsresource.Type
	// name is the resource name.
	name string
}

// key identifies the resource s names, whichever spelling of the type was
// used.
func (s spec) key() resourceKey { return resourceKey{typeURL: s.typ.TypeURL(), name: s.name} }

// String returns s as TYPE:NAME with the type's display name.
func (s spec) String() string { return typeLabel(s.typ) + ":" + s.name }

// resourceKey identifies one resource: its type URL and name.
type resourceKey struct {
	typeURL string
	name    string
}

// parseSpec parses TYPE:NAME. The type ends at the first colon, since
// neither short names nor type URLs contain one, so a name may hold colons
// (xdstp://authority/...).
func parseSpec(arg string) (spec, error) {
	typeStr, name, ok := strings.Cut(arg, ":")
	if !ok {
		return spec{}, fmt.Errorf("%q: want TYPE:NAME, for example cds:backend", arg)
	}
	typ, err := resolveType(typeStr)
	if err != nil && strings.EqualFold(typeStr, "xds") {
		return spec{}, fmt.Errorf("%q: %w (for a channel's config, write xds:///LISTENER)", arg, err)
	}
	if err != nil {
		return spec{}, fmt.Errorf("%q: %w", arg, err)
	}
	if name == "" {
		return spec{}, fmt.Errorf("%q: empty resource name", arg)
	}
	return spec{typ: typ, name: name}, nil
}

// resolveType returns the resource type that s names: a short name (lds,
// rds, cds, eds; any case) or the full type URL of one of the types the
// client decodes.
func resolveType(s string) (xdsresource.Type, error) {
	if t := xdsresource.ByShortName(strings.ToLower(s)); t != nil {
		return t, nil
	}
	for _, t := range xdsresource.Builtin() {
		if t.TypeURL() == s {
			return t, nil
		}
	}
	if strings.Contains(s, "/") {
		return nil, fmt.Errorf("resource type %q is not supported: want one of the type URLs of lds, rds, cds or eds", s)
	}
	return nil, fmt.Errorf("unknown resource type %q: want lds, rds, cds, eds or a full type URL", s)
}

// typeLabel is how output names a type: its short name, or its type URL when
// it has none.
func typeLabel(t xdsresource.Type) string {
	if s := t.ShortName(); s != "" {
		return s
	}
	return t.TypeURL()
}

// demoSpecs returns a spec for each resource the demo d serves.
func demoSpecs(d *demo.Demo) []spec {
	res := d.Resources()
	specs := make([]spec, len(res))
	for i, r := range res {
		specs[i] = spec{typ: r.Type, name: r.Name}
	}
	return specs
}
