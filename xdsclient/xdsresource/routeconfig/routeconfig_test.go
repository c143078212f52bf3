package routeconfig_test

import (
	"reflect"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	routerv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/xdslens/xdslens/internal/testing/testmain"
	"github.com/xdslens/xdslens/xdsclient/xdsresource/filterconfig"
	"github.com/xdslens/xdslens/xdsclient/xdsresource/matcher"
	"github.com/xdslens/xdslens/xdsclient/xdsresource/routeconfig"
)

func TestMain(m *testing.M) { testmain.Run(m) }

// config is a RouteConfiguration "r1" with one virtual host of routes.
func config(domains []string, routes ...*routev3.Route) *routev3.RouteConfiguration {
	return &routev3.RouteConfiguration{Name: "r1", VirtualHosts: []*routev3.VirtualHost{{Name: "vh", Domains: domains, Routes: routes}}}
}

// toCluster is a route action to cluster c.
func toCluster(c string) *routev3.Route_Route {
	return &routev3.Route_Route{Route: &routev3.RouteAction{ClusterSpecifier: &routev3.RouteAction_Cluster{Cluster: c}}}
}

// TestValidate: a route configuration as the data plane reads it; routes
// gRPC ignores left out, their index kept; auto_host_rewrite only from a
// trusted server.
func TestValidate(t *testing.T) {
	rewrite := &routev3.Route{Name: "rewrite", Match: &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Path{Path: "/svc/M"}},
		Action: &routev3.Route_Route{Route: &routev3.RouteAction{
			ClusterSpecifier:     &routev3.RouteAction_Cluster{Cluster: "c1"},
			HostRewriteSpecifier: &routev3.RouteAction_AutoHostRewrite{AutoHostRewrite: wrapperspb.Bool(true)},
			MaxStreamDuration:    &routev3.RouteAction_MaxStreamDuration{GrpcTimeoutHeaderMax: durationpb.New(time.Second)},
		}}}
	query := &routev3.Route{Match: &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: "/"},
		QueryParameters: []*routev3.QueryParameterMatcher{{Name: "q"}}}, Action: toCluster("c2")}
	headers := &routev3.Route{Match: &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: "/"},
		Headers: []*routev3.HeaderMatcher{{Name: "X-Env", HeaderMatchSpecifier: &routev3.HeaderMatcher_ExactMatch{ExactMatch: "canary"}}}},
		Action: toCluster("c3")}
	m := config([]string{"*.example.com"}, rewrite, query, headers)
	for _, trusted := range []bool{false, true} {
		got, err := routeconfig.Validate(m, trusted)
		if err != nil {
			t.Fatal(err)
		}
		second := time.Second
		want := &routeconfig.Config{Name: "r1", VirtualHosts: []routeconfig.VirtualHost{{Name: "vh", Domains: []string{"*.example.com"}, Routes: []routeconfig.Route{
			{Name: "rewrite", Index: 0, PathMatch: routeconfig.PathExact, Path: "/svc/M", Action: routeconfig.Action{Kind: routeconfig.ActionCluster, Cluster: "c1"},
				MaxStreamDuration: &second, AutoHostRewrite: trusted},
			{Index: 2, PathMatch: routeconfig.PathPrefix, Prefix: "/", Headers: []matcher.Header{{Name: "x-env", Kind: matcher.Exact, Value: "canary"}},
				Action: routeconfig.Action{Kind: routeconfig.ActionCluster, Cluster: "c3"}},
		}}}}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("trusted %v: Validate =\n%+v\nwant\n%+v", trusted, got, want)
		}
		if s := got.Summary(); s != "route config r1: 1 virtual host, 2 routes" {
			t.Errorf("Summary = %q", s)
		}
	}
	for _, tc := range []struct {
		name string
		m    *routev3.RouteConfiguration
		want string
	}{
		{"no domains", config(nil), "virtual_hosts[0]: domains is empty"},
		{"a wildcard inside", config([]string{"a*b"}), `virtual_hosts[0].domains[0]: invalid domain pattern "a*b"`},
		{"no match", config([]string{"*"}, &routev3.Route{Action: toCluster("c")}), "virtual_hosts[0].routes[0]: match missing"},
	} {
		if _, err := routeconfig.Validate(tc.m, false); err == nil || err.Error() != tc.want {
			t.Errorf("%s: error %v, want %q", tc.name, err, tc.want)
		}
	}
}

// TestValidateConnectionManager: RDS or an inline route configuration, the
// HTTP filters of the side, and the config sources each side accepts.
func TestValidateConnectionManager(t *testing.T) {
	router, err := anypb.New(&routerv3.Router{})
	if err != nil {
		t.Fatal(err)
	}
	filters := []*hcmv3.HttpFilter{{Name: "router", ConfigType: &hcmv3.HttpFilter_TypedConfig{TypedConfig: router}}}
	rds := func(src *corev3.ConfigSource) *hcmv3.HttpConnectionManager {
		return &hcmv3.HttpConnectionManager{HttpFilters: filters, RouteSpecifier: &hcmv3.HttpConnectionManager_Rds{Rds: &hcmv3.Rds{ConfigSource: src, RouteConfigName: "r1"}}}
	}
	ads := &corev3.ConfigSource{ConfigSourceSpecifier: &corev3.ConfigSource_Ads{Ads: &corev3.AggregatedConfigSource{}}}
	self := &corev3.ConfigSource{ConfigSourceSpecifier: &corev3.ConfigSource_Self{Self: &corev3.SelfConfigSource{}}}
	for _, server := range []bool{false, true} {
		c, err := routeconfig.ValidateConnectionManager(rds(ads), server, false)
		if err != nil || c.RouteConfigName != "r1" || c.InlineRouteConfig != nil || len(c.HTTPFilters) != 1 || c.HTTPFilters[0].TypeURL != filterconfig.RouterTypeURL {
			t.Errorf("server %v, RDS over ADS: %+v, %v", server, c, err)
		}
	}
	if _, err := routeconfig.ValidateConnectionManager(rds(self), false, false); err != nil {
		t.Errorf("a client's RDS from self: %v", err)
	}
	if _, err := routeconfig.ValidateConnectionManager(rds(self), true, false); err == nil || err.Error() != "rds.config_source must be ads" {
		t.Errorf("a server's RDS from self: %v, want rds.config_source must be ads", err)
	}
	inline := &hcmv3.HttpConnectionManager{HttpFilters: filters,
		RouteSpecifier:            &hcmv3.HttpConnectionManager_RouteConfig{RouteConfig: config([]string{"*"}, &routev3.Route{Match: &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Prefix{}}, Action: toCluster("c")})},
		CommonHttpProtocolOptions: &corev3.HttpProtocolOptions{MaxStreamDuration: durationpb.New(2 * time.Second)},
	}
	c, err := routeconfig.ValidateConnectionManager(inline, false, false)
	if err != nil || c.RouteConfigName != "" || c.InlineRouteConfig == nil || c.InlineRouteConfig.Name != "r1" || c.MaxStreamDuration != 2*time.Second {
		t.Errorf("inline: %+v, %v", c, err)
	}
	if _, err := routeconfig.ValidateConnectionManager(&hcmv3.HttpConnectionManager{HttpFilters: filters}, false, false); err == nil || err.Error() != "neither rds nor route_config is set" {
		t.Errorf("no route specifier: %v", err)
	}
}
