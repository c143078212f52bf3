package xdsresource

import (
	"errors"
	"fmt"
	"strings"
	"time"

	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"github.com/xdslens/xdslens/xdsclient/xdsresource/internal/decoding"
	"google.golang.org/protobuf/types/known/anypb"
)

// HTTPConnectionManagerTypeURL is the type URL that a client-side
// Listener's api_listener must hold.
const HTTPConnectionManagerTypeURL = TypeURLPrefix + "envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager"

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
	Server *ServerListener
	// RouteConfigName is the RouteConfiguration to fetch with RDS, set when
	// the HttpConnectionManager uses rds (with config_source ads or self).
	RouteConfigName string
	// InlineRouteConfig is set when the HttpConnectionManager carries its
	// route_config inline.
	InlineRouteConfig *RouteConfiguration
	// HTTPFilters is the filter chain in order, without the optional filters
	// whose type is not understood. The last one is always the router.
	HTTPFilters []HTTPFilter
	// MaxStreamDuration is common_http_protocol_options.max_stream_duration,
	// zero when unset.
	MaxStreamDuration time.Duration
}

// HTTPFilter is one entry of a Listener's http_filters.
type HTTPFilter struct {
	// Name is the filter's instance name, unique within the Listener.
	Name string
	// TypeURL is the type of the filter's config, such as
	// RouterFilterTypeURL. For a config wrapped in a TypedStruct it is the
	// type URL inside the TypedStruct.
	TypeURL string
	// Config is typed_config as received.
	Config *anypb.Any
}

// Summary returns a one-line description of l, for example
// `listener l1: RDS "r1", 2 HTTP filters` or, for a server listener,
// `server listener s1: 0.0.0.0:8443, 2 filter chains and a default`.
func (l *Listener) Summary() string {
	if l.Server != nil {
		return l.Server.summary(l.Name)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "listener %s: ", l.Name)
	if l.InlineRouteConfig != nil {
		vhosts, routes := l.InlineRouteConfig.counts()
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
		srv, err := validateServerListener(opts, m)
		if err != nil {
			return nil, err
		}
		return &Listener{Name: m.GetName(), Server: srv}, nil
	}
	api := m.GetApiListener().GetApiListener()
	if api.GetTypeUrl() != HTTPConnectionManagerTypeURL {
		return nil, fmt.Errorf("api_listener holds %q, want %q", api.GetTypeUrl(), HTTPConnectionManagerTypeURL)
	}
	hcm := new(hcmv3.HttpConnectionManager)
	if err := decoding.Unmarshal(api.GetValue(), hcm); err != nil {
		return nil, fmt.Errorf("api_listener: %v", err)
	}
	c, err := validateHCM(opts, hcm, false)
	if err != nil {
		return nil, err
	}
	return &Listener{
		Name:              m.GetName(),
		RouteConfigName:   c.routeConfigName,
		InlineRouteConfig: c.inlineRouteConfig,
		HTTPFilters:       c.httpFilters,
		MaxStreamDuration: c.maxStreamDuration,
	}, nil
}

// hcmConfig is a validated HttpConnectionManager.
type hcmConfig struct {
	routeConfigName   string
	inlineRouteConfig *RouteConfiguration
	httpFilters       []HTTPFilter
	maxStreamDuration time.Duration
}

// validateHCM validates the HttpConnectionManager of a client's
// api_listener or of a server's filter chain. A server's rds must use ads:
// gRPC servers do not accept self.
func validateHCM(opts DecodeOptions, hcm *hcmv3.HttpConnectionManager, server bool) (hcmConfig, error) {
	var c hcmConfig
	if n := hcm.GetXffNumTrustedHops(); n != 0 {
		return c, fmt.Errorf("xff_num_trusted_hops is %d, must be 0", n)
	}
	if len(hcm.GetOriginalIpDetectionExtensions()) != 0 {
		return c, errors.New("original_ip_detection_extensions must be empty")
	}
	c.maxStreamDuration = hcm.GetCommonHttpProtocolOptions().GetMaxStreamDuration().AsDuration()
	switch spec := hcm.GetRouteSpecifier().(type) {
	case *hcmv3.HttpConnectionManager_Rds:
		src := spec.Rds.GetConfigSource()
		switch {
		case server && src.GetAds() == nil:
			return c, errors.New("rds.config_source must be ads")
		case !server && src.GetAds() == nil && src.GetSelf() == nil:
			return c, errors.New("rds.config_source must be ads or self")
		}
		if spec.Rds.GetRouteConfigName() == "" {
			return c, errors.New("rds.route_config_name is empty")
		}
		c.routeConfigName = spec.Rds.GetRouteConfigName()
	case *hcmv3.HttpConnectionManager_RouteConfig:
		rc, err := validateRouteConfig(opts, spec.RouteConfig)
		if err != nil {
			return c, fmt.Errorf("route_config: %v", err)
		}
		c.inlineRouteConfig = rc
	case nil:
		return c, errors.New("neither rds nor route_config is set")
	default:
		return c, errors.New("scoped_routes is not supported, use rds or route_config")
	}

	filters, err := validateHTTPFilters(hcm.GetHttpFilters(), server)
	if err != nil {
		return c, err
	}
	c.httpFilters = filters
	return c, nil
}

// validateHTTPFilters checks the filter chain of a client's or a server's
// HttpConnectionManager and returns the filters that are understood. The
// router must come last and only last. A filter that gRPC runs only on the
// other side is rejected, or left out when it is optional; the fields of
// its config are checked only when it is kept.
func validateHTTPFilters(filters []*hcmv3.HttpFilter, server bool) ([]HTTPFilter, error) {
	sideName := "clients"
	if server {
		sideName = "servers"
	}
	var out []HTTPFilter
	var index []int // index[i] is the position in filters of out[i]
	seen := make(map[string]bool, len(filters))
	for i, f := range filters {
		name := f.GetName()
		if name == "" {
			return nil, fmt.Errorf("http_filters[%d]: name is empty", i)
		}
		if seen[name] {
			return nil, fmt.Errorf("http_filters[%d]: duplicate name %q", i, name)
		}
		seen[name] = true
		cfg := f.GetTypedConfig()
		if cfg == nil {
			if f.GetIsOptional() {
				continue
			}
			return nil, fmt.Errorf("http_filters[%d] %q: typed_config missing", i, name)
		}
		ft, ok, err := checkFilterConfig(cfg, httpFilters)
		if err != nil {
			return nil, fmt.Errorf("http_filters[%d] %q: %v", i, name, err)
		}
		if !ok {
			if f.GetIsOptional() {
				continue
			}
			return nil, fmt.Errorf("http_filters[%d] %q: unsupported filter type %q", i, name, ft.url)
		}
		if !ft.runsOn(server) {
			if f.GetIsOptional() {
				continue
			}
			return nil, fmt.Errorf("http_filters[%d] %q: filter type %q is not supported on %s", i, name, ft.url, sideName)
		}
		if err := validateFilterConfig(ft, cfg, false); err != nil {
			return nil, fmt.Errorf("http_filters[%d] %q: %v", i, name, err)
		}
		out = append(out, HTTPFilter{Name: name, TypeURL: ft.url, Config: cfg})
		index = append(index, i)
	}
	if len(out) == 0 {
		return nil, errors.New("http_filters is empty: the router filter is required")
	}
	last := len(out) - 1
	for i, f := range out[:last] {
		if f.TypeURL == RouterFilterTypeURL {
			return nil, fmt.Errorf("http_filters[%d] %q: the router must be the last filter", index[i], f.Name)
		}
	}
	if out[last].TypeURL != RouterFilterTypeURL {
		return nil, fmt.Errorf("http_filters: last filter %q is not the router", out[last].Name)
	}
	return out, nil
}
