package xdsresource

import (
	"errors"
	"fmt"
	"strings"
	"time"

	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"

	"github.com/xdslens/xdslens/xdsclient/xdsresource/filterconfig"
	"github.com/xdslens/xdslens/xdsclient/xdsresource/internal/decoding"
	"github.com/xdslens/xdslens/xdsclient/xdsresource/routeconfig"
	"github.com/xdslens/xdslens/xdsclient/xdsresource/serverlistener"
)

// Listener is a validated Listener: either a client-side Listener, an
// api_listener holding an HttpConnectionManager, or a server-side Listener
// (gRFC A36), which has no api_listener and is described by Server.
//
// For a client-side Listener, Server is nil and exactly one of
// RouteConfigName and InlineRouteConfig is set. For a server-side one,
// Server is set and the other fields but Name are zero.
type Listener struct {
	// Name is the Listener's name.
	Name string
	// Server is set for a server-side Listener.
	Server *serverlistener.Listener
	// RouteConfigName is the RouteConfiguration to fetch with RDS, set when
	// the HttpConnectionManager uses rds (with config_source ads or self).
	RouteConfigName string
	// InlineRouteConfig is set when the HttpConnectionManager carries its
	// route_config inline.
	InlineRouteConfig *routeconfig.Config
	// HTTPFilters is the filter chain in order, without the optional filters
	// whose type is not understood. The last one is always the router.
	HTTPFilters []filterconfig.Filter
	// MaxStreamDuration is common_http_protocol_options.max_stream_duration,
	// zero when unset.
	MaxStreamDuration time.Duration
}

// Summary returns a one-line description of l, for example
// `listener l1: RDS "r1", 2 HTTP filters` or, for a server listener,
// `server listener s1: 0.0.0.0:8443, 2 filter chains and a default`.
func (l *Listener) Summary() string {
	if l.Server != nil {
		return l.Server.Summary(l.Name)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "listener %s: ", l.Name)
	if l.InlineRouteConfig != nil {
		vhosts, routes := l.InlineRouteConfig.Counts()
		fmt.Fprintf(&b, "inline route config, %s, %s", decoding.Plural(vhosts, "virtual host", "virtual hosts"), decoding.Plural(routes, "route", "routes"))
	} else {
		fmt.Fprintf(&b, "RDS %q", l.RouteConfigName)
	}
	fmt.Fprintf(&b, ", %s", decoding.Plural(len(l.HTTPFilters), "HTTP filter", "HTTP filters"))
	if l.MaxStreamDuration > 0 {
		fmt.Fprintf(&b, ", max_stream_duration %v", l.MaxStreamDuration)
	}
	return b.String()
}

func decodeListener(opts DecodeOptions, b []byte) (string, any, error) {
	m := new(listenerv3.Listener)
	if err := decoding.Unmarshal(b, m); err != nil {
		return "", nil, err
	}
	if m.GetName() == "" {
		return "", nil, errNoName
	}
	l, err := validateListener(opts, m)
	if err != nil {
		return m.GetName(), nil, err
	}
	return m.GetName(), l, nil
}

func validateListener(opts DecodeOptions, m *listenerv3.Listener) (*Listener, error) {
	if m.GetApiListener() == nil {
		srv, err := serverlistener.Validate(m, opts.TrustedServer, opts.HasCertificateProvider)
		if err != nil {
			return nil, err
		}
		return &Listener{Name: m.GetName(), Server: srv}, nil
	}
	api := m.GetApiListener().GetApiListener()
	if api == nil {
		return nil, errors.New("api_listener.api_listener: missing")
	}
	// Its type URL names the type that follows its last "/", as in gRPC
	// C-core: the part before is not read.
	url, err := decoding.CanonicalTypeURL(api.GetTypeUrl())
	if err != nil {
		return nil, fmt.Errorf("api_listener.api_listener: %v", err)
	}
	if url != routeconfig.ConnectionManagerTypeURL {
		return nil, fmt.Errorf("api_listener holds %q, want %q", api.GetTypeUrl(), routeconfig.ConnectionManagerTypeURL)
	}
	hcm := new(hcmv3.HttpConnectionManager)
	if err := decoding.Unmarshal(api.GetValue(), hcm); err != nil {
		return nil, fmt.Errorf("api_listener: %v", err)
	}
	c, err := routeconfig.ValidateConnectionManager(hcm, false, opts.TrustedServer)
	if err != nil {
		return nil, err
	}
	return &Listener{
		Name:              m.GetName(),
		RouteConfigName:   c.RouteConfigName,
		InlineRouteConfig: c.InlineRouteConfig,
		HTTPFilters:       c.HTTPFilters,
		MaxStreamDuration: c.MaxStreamDuration,
	}, nil
}
