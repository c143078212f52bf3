package routeconfig

import (
	"errors"
	"fmt"
	"time"

	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"

	"github.com/xdslens/xdslens/internal/xdsduration"
	"github.com/xdslens/xdslens/xdsclient/xdsresource/filterconfig"
	"github.com/xdslens/xdslens/xdsclient/xdsresource/internal/decoding"
)

// ConnectionManagerTypeURL is the type URL that a client-side
// Listener's api_listener must hold.
const ConnectionManagerTypeURL = decoding.TypeURLPrefix + "envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager"

// ConnectionManager is a validated HttpConnectionManager, of a client's
// api_listener or of a server's filter chain: exactly one of
// RouteConfigName and InlineRouteConfig is set.
type ConnectionManager struct {
	// RouteConfigName is the RouteConfiguration to fetch with RDS, set
	// when rds is used (with config_source ads, or self on clients).
	RouteConfigName string
	// InlineRouteConfig is route_config, when carried inline.
	InlineRouteConfig *Config
	// HTTPFilters is the filter chain in order, without the optional
	// filters whose type is not understood. The last one is always the
	// router.
	HTTPFilters []filterconfig.Filter
	// MaxStreamDuration is common_http_protocol_options.max_stream_duration,
	// zero when unset, never negative (package xdsduration).
	MaxStreamDuration time.Duration
}

// ValidateConnectionManager validates the HttpConnectionManager of a
// client's api_listener or, with server, of a server's filter chain, from
// a trusted server (gRFC A81) or not. A server's rds must use ads: gRPC
// servers do not accept self. Errors start with the field path inside it.
func ValidateConnectionManager(hcm *hcmv3.HttpConnectionManager, server, trustedServer bool) (*ConnectionManager, error) {
	c := new(ConnectionManager)
	if n := hcm.GetXffNumTrustedHops(); n != 0 {
		return nil, fmt.Errorf("xff_num_trusted_hops is %d, must be 0", n)
	}
	if len(hcm.GetOriginalIpDetectionExtensions()) != 0 {
		return nil, errors.New("original_ip_detection_extensions must be empty")
	}
	msd, err := xdsduration.Parse(hcm.GetCommonHttpProtocolOptions().GetMaxStreamDuration())
	if err != nil {
		return nil, fmt.Errorf("common_http_protocol_options.max_stream_duration: %v", err)
	}
	c.MaxStreamDuration = msd
	switch spec := hcm.GetRouteSpecifier().(type) {
	case *hcmv3.HttpConnectionManager_Rds:
		src := spec.Rds.GetConfigSource()
		switch {
		case server && src.GetAds() == nil:
			return nil, errors.New("rds.config_source must be ads")
		case !server && src.GetAds() == nil && src.GetSelf() == nil:
			return nil, errors.New("rds.config_source must be ads or self")
		}
		if spec.Rds.GetRouteConfigName() == "" {
			return nil, errors.New("rds.route_config_name is empty")
		}
		c.RouteConfigName = spec.Rds.GetRouteConfigName()
	case *hcmv3.HttpConnectionManager_RouteConfig:
		rc, err := Validate(spec.RouteConfig, trustedServer)
		if err != nil {
			return nil, fmt.Errorf("route_config: %v", err)
		}
		c.InlineRouteConfig = rc
	case nil:
		return nil, errors.New("neither rds nor route_config is set")
	default:
		return nil, errors.New("scoped_routes is not supported, use rds or route_config")
	}

	filters, err := filterconfig.ValidateFilters(hcm.GetHttpFilters(), server)
	if err != nil {
		return nil, err
	}
	c.HTTPFilters = filters
	return c, nil
}
