package xdsresource

import (
	"errors"
	"fmt"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/xdslens/xdslens/xdsclient/xdsresource/internal/decoding"
	"github.com/xdslens/xdslens/xdsclient/xdsresource/routeconfig"
)

// The four resource types a gRPC client uses. Decode returns, on success, a
// *Listener, *routeconfig.Config, *Cluster or *ClusterLoadAssignment
// respectively.
var (
	// ListenerType decodes envoy.config.listener.v3.Listener ("lds").
	ListenerType Type = &builtinType{
		url:       TypeURLPrefix + "envoy.config.listener.v3.Listener",
		short:     "lds",
		fullState: true,
		decode:    decodeListener,
	}
	// RouteConfigType decodes envoy.config.route.v3.RouteConfiguration
	// ("rds").
	RouteConfigType Type = &builtinType{
		url:    TypeURLPrefix + "envoy.config.route.v3.RouteConfiguration",
		short:  "rds",
		decode: decodeRouteConfig,
	}
	// ClusterType decodes envoy.config.cluster.v3.Cluster ("cds").
	ClusterType Type = &builtinType{
		url:       TypeURLPrefix + "envoy.config.cluster.v3.Cluster",
		short:     "cds",
		fullState: true,
		decode:    decodeCluster,
	}
	// EndpointsType decodes envoy.config.endpoint.v3.ClusterLoadAssignment
	// ("eds").
	EndpointsType Type = &builtinType{
		url:    TypeURLPrefix + "envoy.config.endpoint.v3.ClusterLoadAssignment",
		short:  "eds",
		decode: decodeEndpoints,
	}
)

// Builtin returns the four resource types a gRPC client uses, in the order
// LDS, RDS, CDS, EDS.
func Builtin() []Type {
	return []Type{ListenerType, RouteConfigType, ClusterType, EndpointsType}
}

// ByShortName returns the built-in type whose ShortName is s ("lds", "rds",
// "cds" or "eds"), or nil if there is none.
func ByShortName(s string) Type {
	for _, t := range Builtin() {
		if t.ShortName() == s {
			return t
		}
	}
	return nil
}

// ByTypeURL returns the built-in type with that type URL, or nil.
func ByTypeURL(url string) Type {
	for _, t := range Builtin() {
		if t.TypeURL() == url {
			return t
		}
	}
	return nil
}

// Summarizer is implemented by decoded values that can describe themselves
// in one line for people, as the four built-in values do.
type Summarizer interface {
	Summary() string
}

// builtinType implements Type for the four gRPC resource types. decode gets
// the serialized message and returns the rule broken, without the
// "<short> "<name>": " prefix, which Decode adds.
type builtinType struct {
	url       string
	short     string
	fullState bool
	decode    func(opts DecodeOptions, b []byte) (name string, value any, err error)
}

func (t *builtinType) TypeURL() string   { return t.url }
func (t *builtinType) ShortName() string { return t.short }
func (t *builtinType) FullState() bool   { return t.fullState }

// ReadName reads the name of a built-in resource: field 1 (name, or
// cluster_name for a ClusterLoadAssignment) of each of the four messages.
func (t *builtinType) ReadName(b []byte) ([]byte, bool) { return ReadStringField(b, 1) }

func (t *builtinType) Decode(opts DecodeOptions, r *anypb.Any) (string, any, error) {
	if got := r.GetTypeUrl(); got != t.url {
		return "", nil, fmt.Errorf("%s: resource has type URL %q, want %q", t.short, got, t.url)
	}
	name, v, err := t.decode(opts, r.GetValue())
	if err != nil {
		if name == "" {
			return "", nil, fmt.Errorf("%s: %v", t.short, err)
		}
		return name, nil, fmt.Errorf("%s %q: %v", t.short, name, err)
	}
	return name, v, nil
}

// errNoName is returned for a resource whose name field is empty.
var errNoName = errors.New("resource has no name")

func decodeRouteConfig(opts DecodeOptions, b []byte) (string, any, error) {
	m := new(routev3.RouteConfiguration)
	if err := decoding.Unmarshal(b, m); err != nil {
		return "", nil, err
	}
	if m.GetName() == "" {
		return "", nil, errNoName
	}
	rc, err := routeconfig.Validate(m, opts.TrustedServer)
	if err != nil {
		return m.GetName(), nil, err
	}
	return m.GetName(), rc, nil
}
