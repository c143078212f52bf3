package xdsresource

import (
	"reflect"
	"testing"
	"time"

	"github.com/xdslens/xdslens/xdsclient/xdsresource/routeconfig"

	"github.com/xdslens/xdslens/xdsclient/xdsresource/filterconfig"

	udpatypev1 "github.com/cncf/xds/go/udpa/type/v1"
	xdstypev3 "github.com/cncf/xds/go/xds/type/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	faultv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/fault/v3"
	rbacv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/rbac/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/structpb"
)

func TestListenerRDS(t *testing.T) {
	hcm := rdsHCM(t)
	fault := httpFilter(t, "fault", &faultv3.HTTPFault{})
	hcm.HttpFilters = append([]*hcmv3.HttpFilter{fault}, hcm.HttpFilters...)
	hcm.CommonHttpProtocolOptions = &corev3.HttpProtocolOptions{MaxStreamDuration: durationpb.New(30 * time.Second)}

	name, v, err := decode(t, ListenerType, apiListener(t, hcm))
	if err != nil {
		t.Fatalf("Decode: %v", err)
	}
	want := &Listener{
		Name:            "l1",
		RouteConfigName: "r1",
		HTTPFilters: []filterconfig.Filter{
			{Name: "fault", TypeURL: filterconfig.FaultTypeURL, Config: hcm.HttpFilters[0].GetTypedConfig()},
			{Name: "router", TypeURL: filterconfig.RouterTypeURL, Config: hcm.HttpFilters[1].GetTypedConfig()},
		},
		MaxStreamDuration: 30 * time.Second,
	}
	got := v.(*Listener)
	if name != "l1" {
		t.Errorf("name = %q, want l1", name)
	}
	if len(got.HTTPFilters) != 2 || !proto.Equal(got.HTTPFilters[0].Config, want.HTTPFilters[0].Config) ||
		!proto.Equal(got.HTTPFilters[1].Config, want.HTTPFilters[1].Config) {
		t.Fatalf("HTTPFilters = %+v", got.HTTPFilters)
	}
	for i := range want.HTTPFilters {
		got.HTTPFilters[i].Config, want.HTTPFilters[i].Config = nil, nil
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Decode =\n%+v\nwant\n%+v", got, want)
	}
	if s, want := got.Summary(), `listener l1: RDS "r1", 2 HTTP filters, max_stream_duration 30s`; s != want {
		t.Errorf("Summary() = %q, want %q", s, want)
	}
}

func TestListenerInlineRouteConfig(t *testing.T) {
	hcm := &hcmv3.HttpConnectionManager{
		RouteSpecifier: &hcmv3.HttpConnectionManager_RouteConfig{RouteConfig: &routev3.RouteConfiguration{
			VirtualHosts: []*routev3.VirtualHost{{Name: "vh", Domains: []string{"*"}, Routes: []*routev3.Route{prefixRoute("/", "c1")}}},
		}},
		HttpFilters: []*hcmv3.HttpFilter{routerFilter(t)},
	}
	_, v, err := decode(t, ListenerType, apiListener(t, hcm))
	if err != nil {
		t.Fatalf("Decode: %v", err)
	}
	l := v.(*Listener)
	wantRC := &routeconfig.Config{VirtualHosts: []routeconfig.VirtualHost{{
		Name: "vh", Domains: []string{"*"},
		Routes: []routeconfig.Route{{PathMatch: routeconfig.PathPrefix, Prefix: "/", Action: routeconfig.Action{Kind: routeconfig.ActionCluster, Cluster: "c1"}}},
	}}}
	if l.RouteConfigName != "" || !reflect.DeepEqual(l.InlineRouteConfig, wantRC) {
		t.Errorf("Decode = %+v, want inline %+v", l, wantRC)
	}
	if s, want := l.Summary(), "listener l1: inline route config, 1 virtual host, 1 route, 1 HTTP filter"; s != want {
		t.Errorf("Summary() = %q, want %q", s, want)
	}
}

func TestListenerSelfConfigSource(t *testing.T) {
	hcm := rdsHCM(t)
	hcm.GetRds().ConfigSource = selfSource
	if _, _, err := decode(t, ListenerType, apiListener(t, hcm)); err != nil {
		t.Fatalf("Decode: %v", err)
	}
}

func TestListenerOptionalFilters(t *testing.T) {
	hcm := rdsHCM(t)
	unknown := httpFilter(t, "unknown", &structpb.Struct{})
	unknown.IsOptional = true
	fault := httpFilter(t, "fault", &faultv3.HTTPFault{})
	serverOnly := httpFilter(t, "rbac", &rbacv3.RBAC{})
	serverOnly.IsOptional = true
	hcm.HttpFilters = []*hcmv3.HttpFilter{unknown, fault, serverOnly, routerFilter(t)}
	_, v, err := decode(t, ListenerType, apiListener(t, hcm))
	if err != nil {
		t.Fatalf("Decode: %v", err)
	}
	fs := v.(*Listener).HTTPFilters
	if len(fs) != 2 || fs[0].Name != "fault" || fs[0].TypeURL != filterconfig.FaultTypeURL || fs[1].Name != "router" || fs[1].TypeURL != filterconfig.RouterTypeURL {
		t.Errorf("HTTPFilters = %+v, want fault and router", fs)
	}
}

// As in gRPC, the configs of the router and fault filters are read only
// from their own messages: one in a TypedStruct, of either kind, is
// rejected even when the filter is optional, on the side that runs the
// filter. On the other side the side check comes first, as in C-core.
func TestFilterConfigInTypedStruct(t *testing.T) {
	xdsTS := func(url string) proto.Message { return &xdstypev3.TypedStruct{TypeUrl: url} }
	udpaTS := func(url string) proto.Message { return &udpatypev1.TypedStruct{TypeUrl: url} }
	optional := func(f *hcmv3.HttpFilter) *hcmv3.HttpFilter {
		f.IsOptional = true
		return f
	}
	withFilters := func(fs ...*hcmv3.HttpFilter) func() proto.Message {
		return func() proto.Message {
			hcm := rdsHCM(t)
			hcm.HttpFilters = fs
			return apiListener(t, hcm)
		}
	}
	override := func(cfg *anypb.Any) func() proto.Message {
		return func() proto.Message {
			m := routeConfig(prefixRoute("/", "c1"))
			m.VirtualHosts[0].Routes[0].TypedPerFilterConfig = map[string]*anypb.Any{"fault": cfg}
			return m
		}
	}
	const lds = `lds "l1": `
	const notSupported = ` in a TypedStruct is not supported`
	runErrorCases(t, ListenerType, "l1", []errorCase{
		{name: "router in an xds TypedStruct", build: withFilters(httpFilter(t, "router", xdsTS(filterconfig.RouterTypeURL))),
			want: lds + `http_filters[0] "router": a config of type "` + filterconfig.RouterTypeURL + `"` + notSupported},
		{name: "router in a udpa TypedStruct", build: withFilters(httpFilter(t, "router", udpaTS(filterconfig.RouterTypeURL))),
			want: lds + `http_filters[0] "router": a config of type "` + filterconfig.RouterTypeURL + `"` + notSupported},
		{name: "fault in a TypedStruct", build: withFilters(httpFilter(t, "fault", xdsTS(filterconfig.FaultTypeURL)), routerFilter(t)),
			want: lds + `http_filters[0] "fault": a config of type "` + filterconfig.FaultTypeURL + `"` + notSupported},
		{name: "optional fault in a TypedStruct", build: withFilters(optional(httpFilter(t, "fault", udpaTS(filterconfig.FaultTypeURL))), routerFilter(t)),
			want: lds + `http_filters[0] "fault": a config of type "` + filterconfig.FaultTypeURL + `"` + notSupported},
	})
	const rds = `rds "r1": virtual_hosts[0].routes[0]: typed_per_filter_config["fault"]: `
	runErrorCases(t, RouteConfigType, "r1", []errorCase{
		{name: "fault override in a TypedStruct", build: override(toAny(t, xdsTS(filterconfig.FaultTypeURL))),
			want: rds + `a config of type "` + filterconfig.FaultTypeURL + `"` + notSupported},
		{name: "optional fault override in a TypedStruct", build: override(toAny(t, &routev3.FilterConfig{Config: toAny(t, udpaTS(filterconfig.FaultTypeURL)), IsOptional: true})),
			want: rds + `a config of type "` + filterconfig.FaultTypeURL + `"` + notSupported},
	})

	// A server does not run the fault filter: an optional one is left
	// out before its config is looked at.
	hcm := rdsHCM(t)
	hcm.HttpFilters = []*hcmv3.HttpFilter{optional(httpFilter(t, "fault", xdsTS(filterconfig.FaultTypeURL))), routerFilter(t)}
	c := chain(t, "c", nil)
	c.Filters = []*listenerv3.Filter{hcmFilter(t, hcm)}
	if fs := decodeServer(t, serverLis(c)).FilterChains[0].HTTPFilters; len(fs) != 1 || fs[0].TypeURL != filterconfig.RouterTypeURL {
		t.Errorf("HTTPFilters = %+v, want only the router", fs)
	}
}

func TestListenerErrors(t *testing.T) {
	withHCM := func(edit func(*hcmv3.HttpConnectionManager)) func() proto.Message {
		return func() proto.Message {
			hcm := rdsHCM(t)
			edit(hcm)
			return apiListener(t, hcm)
		}
	}
	runErrorCases(t, ListenerType, "l1", []errorCase{
		{
			name:  "neither api_listener nor address",
			build: func() proto.Message { return &listenerv3.Listener{Name: "l1"} },
			want:  `lds "l1": address: missing, a listener without api_listener is a server listener and needs one`,
		},
		{
			name: "api_listener not an HttpConnectionManager",
			build: func() proto.Message {
				return &listenerv3.Listener{Name: "l1", ApiListener: &listenerv3.ApiListener{ApiListener: toAny(t, &routev3.Route{})}}
			},
			want: `lds "l1": api_listener holds "type.googleapis.com/envoy.config.route.v3.Route", want "type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager"`,
		},
		{
			name: "api_listener bytes invalid",
			build: func() proto.Message {
				a := &anypb.Any{TypeUrl: routeconfig.ConnectionManagerTypeURL, Value: []byte{0xff}}
				return &listenerv3.Listener{Name: "l1", ApiListener: &listenerv3.ApiListener{ApiListener: a}}
			},
			want:   `lds "l1": api_listener: cannot unmarshal envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager: proto:`,
			prefix: true,
		},
		{
			name: "fault abort with a code gRPC does not have",
			build: withHCM(func(h *hcmv3.HttpConnectionManager) {
				h.HttpFilters = []*hcmv3.HttpFilter{httpFilter(t, "fault", &faultv3.HTTPFault{Abort: &faultv3.FaultAbort{
					ErrorType: &faultv3.FaultAbort_GrpcStatus{GrpcStatus: 17},
				}}), routerFilter(t)}
			}),
			want: `lds "l1": http_filters[0] "fault": fault: abort.grpc_status 17 is not a gRPC status code (0 to 16)`,
		},
		{
			name: "max_stream_duration negative",
			build: withHCM(func(h *hcmv3.HttpConnectionManager) {
				h.CommonHttpProtocolOptions = &corev3.HttpProtocolOptions{MaxStreamDuration: &durationpb.Duration{Seconds: -60}}
			}),
			want: `lds "l1": common_http_protocol_options.max_stream_duration: seconds -60 is not in [0, 315576000000]`,
		},
		{
			name:  "xff_num_trusted_hops",
			build: withHCM(func(h *hcmv3.HttpConnectionManager) { h.XffNumTrustedHops = 2 }),
			want:  `lds "l1": xff_num_trusted_hops is 2, must be 0`,
		},
		{
			name: "original_ip_detection_extensions",
			build: withHCM(func(h *hcmv3.HttpConnectionManager) {
				h.OriginalIpDetectionExtensions = []*corev3.TypedExtensionConfig{{Name: "x"}}
			}),
			want: `lds "l1": original_ip_detection_extensions must be empty`,
		},
		{
			name:  "rds config_source not ads or self",
			build: withHCM(func(h *hcmv3.HttpConnectionManager) { h.GetRds().ConfigSource = pathSource }),
			want:  `lds "l1": rds.config_source must be ads or self`,
		},
		{
			name:  "rds config_source missing",
			build: withHCM(func(h *hcmv3.HttpConnectionManager) { h.GetRds().ConfigSource = nil }),
			want:  `lds "l1": rds.config_source must be ads or self`,
		},
		{
			name:  "rds route_config_name empty",
			build: withHCM(func(h *hcmv3.HttpConnectionManager) { h.GetRds().RouteConfigName = "" }),
			want:  `lds "l1": rds.route_config_name is empty`,
		},
		{
			name:  "no route specifier",
			build: withHCM(func(h *hcmv3.HttpConnectionManager) { h.RouteSpecifier = nil }),
			want:  `lds "l1": neither rds nor route_config is set`,
		},
		{
			name: "scoped_routes",
			build: withHCM(func(h *hcmv3.HttpConnectionManager) {
				h.RouteSpecifier = &hcmv3.HttpConnectionManager_ScopedRoutes{ScopedRoutes: &hcmv3.ScopedRoutes{}}
			}),
			want: `lds "l1": scoped_routes is not supported, use rds or route_config`,
		},
		{
			name: "invalid inline route_config",
			build: withHCM(func(h *hcmv3.HttpConnectionManager) {
				h.RouteSpecifier = &hcmv3.HttpConnectionManager_RouteConfig{RouteConfig: &routev3.RouteConfiguration{
					VirtualHosts: []*routev3.VirtualHost{{Name: "vh"}},
				}}
			}),
			want: `lds "l1": route_config: virtual_hosts[0]: domains is empty`,
		},
		{
			name:  "no http_filters",
			build: withHCM(func(h *hcmv3.HttpConnectionManager) { h.HttpFilters = nil }),
			want:  `lds "l1": http_filters is empty: the router filter is required`,
		},
		{
			name: "only optional unknown filters",
			build: withHCM(func(h *hcmv3.HttpConnectionManager) {
				f := httpFilter(t, "x", &structpb.Struct{})
				f.IsOptional = true
				h.HttpFilters = []*hcmv3.HttpFilter{f}
			}),
			want: `lds "l1": http_filters is empty: the router filter is required`,
		},
		{
			name: "filter without name",
			build: withHCM(func(h *hcmv3.HttpConnectionManager) {
				h.HttpFilters = []*hcmv3.HttpFilter{httpFilter(t, "", &faultv3.HTTPFault{}), routerFilter(t)}
			}),
			want: `lds "l1": http_filters[0]: name is empty`,
		},
		{
			name: "duplicate filter name",
			build: withHCM(func(h *hcmv3.HttpConnectionManager) {
				h.HttpFilters = []*hcmv3.HttpFilter{httpFilter(t, "router", &faultv3.HTTPFault{}), routerFilter(t)}
			}),
			want: `lds "l1": http_filters[1]: duplicate name "router"`,
		},
		{
			name: "filter without typed_config",
			build: withHCM(func(h *hcmv3.HttpConnectionManager) {
				h.HttpFilters = []*hcmv3.HttpFilter{{Name: "bare"}, routerFilter(t)}
			}),
			want: `lds "l1": http_filters[0] "bare": typed_config missing`,
		},
		{
			// As in gRPC C-core: is_optional excuses a type gRPC does
			// not know, not a filter without a type (grpc-go skips it).
			name: "optional filter without typed_config",
			build: withHCM(func(h *hcmv3.HttpConnectionManager) {
				h.HttpFilters = []*hcmv3.HttpFilter{{Name: "bare", IsOptional: true}, routerFilter(t)}
			}),
			want: `lds "l1": http_filters[0] "bare": typed_config missing`,
		},
		{
			name: "unknown required filter",
			build: withHCM(func(h *hcmv3.HttpConnectionManager) {
				h.HttpFilters = []*hcmv3.HttpFilter{httpFilter(t, "s", &structpb.Struct{}), routerFilter(t)}
			}),
			want: `lds "l1": http_filters[0] "s": unsupported filter type "type.googleapis.com/google.protobuf.Struct"`,
		},
		{
			name: "unknown type inside TypedStruct",
			build: withHCM(func(h *hcmv3.HttpConnectionManager) {
				h.HttpFilters = []*hcmv3.HttpFilter{httpFilter(t, "ts", &xdstypev3.TypedStruct{TypeUrl: "type.googleapis.com/foo.Bar"}), routerFilter(t)}
			}),
			want: `lds "l1": http_filters[0] "ts": unsupported filter type "type.googleapis.com/foo.Bar"`,
		},
		{
			name: "router not last",
			build: withHCM(func(h *hcmv3.HttpConnectionManager) {
				h.HttpFilters = []*hcmv3.HttpFilter{routerFilter(t), httpFilter(t, "fault", &faultv3.HTTPFault{})}
			}),
			want: `lds "l1": http_filters[0] "router": the router must be the last filter`,
		},
		{
			name: "last filter is not the router",
			build: withHCM(func(h *hcmv3.HttpConnectionManager) {
				h.HttpFilters = []*hcmv3.HttpFilter{httpFilter(t, "fault", &faultv3.HTTPFault{})}
			}),
			want: `lds "l1": http_filters: last filter "fault" is not the router`,
		},
		{
			name: "server-only filter on a client",
			build: withHCM(func(h *hcmv3.HttpConnectionManager) {
				h.HttpFilters = []*hcmv3.HttpFilter{httpFilter(t, "rbac", &rbacv3.RBAC{}), routerFilter(t)}
			}),
			want: `lds "l1": http_filters[0] "rbac": filter type "type.googleapis.com/envoy.extensions.filters.http.rbac.v3.RBAC" is not supported on clients`,
		},
		{
			name: "server-only filter in a TypedStruct on a client",
			build: withHCM(func(h *hcmv3.HttpConnectionManager) {
				h.HttpFilters = []*hcmv3.HttpFilter{httpFilter(t, "rbac", &xdstypev3.TypedStruct{TypeUrl: filterconfig.RBACTypeURL}), routerFilter(t)}
			}),
			want: `lds "l1": http_filters[0] "rbac": filter type "type.googleapis.com/envoy.extensions.filters.http.rbac.v3.RBAC" is not supported on clients`,
		},
		{
			name: "filter config bytes invalid",
			build: withHCM(func(h *hcmv3.HttpConnectionManager) {
				bad := &hcmv3.HttpFilter{Name: "fault", ConfigType: &hcmv3.HttpFilter_TypedConfig{
					TypedConfig: &anypb.Any{TypeUrl: filterconfig.FaultTypeURL, Value: []byte{0xff}},
				}}
				h.HttpFilters = []*hcmv3.HttpFilter{bad, routerFilter(t)}
			}),
			want:   `lds "l1": http_filters[0] "fault": cannot unmarshal envoy.extensions.filters.http.fault.v3.HTTPFault: proto:`,
			prefix: true,
		},
	})
}
