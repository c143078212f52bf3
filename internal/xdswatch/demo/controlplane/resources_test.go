package controlplane_test

import (
	"net"
	"slices"
	"strconv"
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	aggregatev3 "github.com/envoyproxy/go-control-plane/envoy/extensions/clusters/aggregate/v3"
	routerv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"google.golang.org/protobuf/proto"

	"github.com/xdslens/xdslens/internal/xdswatch/demo/controlplane"
)

func hcmOf(t *testing.T, l *listenerv3.Listener) *hcmv3.HttpConnectionManager {
	t.Helper()
	var hcm hcmv3.HttpConnectionManager
	if err := l.GetApiListener().GetApiListener().UnmarshalTo(&hcm); err != nil {
		t.Fatalf("listener %q api_listener: %v", l.GetName(), err)
	}
	filters := hcm.GetHttpFilters()
	if len(filters) == 0 {
		t.Fatalf("listener %q has no http_filters", l.GetName())
	}
	last := filters[len(filters)-1]
	if !last.GetTypedConfig().MessageIs(&routerv3.Router{}) {
		t.Errorf("listener %q: last filter %q holds %s, want the router", l.GetName(), last.GetName(), last.GetTypedConfig().GetTypeUrl())
	}
	return &hcm
}

func TestListenerUsesRDSOverADS(t *testing.T) {
	hcm := hcmOf(t, controlplane.Listener("l", "r"))
	rds := hcm.GetRds()
	if rds.GetRouteConfigName() != "r" {
		t.Errorf("route_config_name = %q, want %q", rds.GetRouteConfigName(), "r")
	}
	if rds.GetConfigSource().GetAds() == nil {
		t.Errorf("rds config_source = %v, want ads", rds.GetConfigSource())
	}
}

func TestListenerInlineRoute(t *testing.T) {
	rc := controlplane.RouteConfig("r", []string{"a.example"}, "c")
	hcm := hcmOf(t, controlplane.ListenerInlineRoute("l", rc))
	if !proto.Equal(hcm.GetRouteConfig(), rc) {
		t.Errorf("inline route_config = %v, want %v", hcm.GetRouteConfig(), rc)
	}
}

func TestRouteConfig(t *testing.T) {
	rc := controlplane.RouteConfig("r", []string{"a.example", "*"}, "c")
	vhs := rc.GetVirtualHosts()
	if len(vhs) != 1 || len(vhs[0].GetRoutes()) != 1 {
		t.Fatalf("route config = %v, want one vhost with one route", rc)
	}
	if got := vhs[0].GetDomains(); len(got) != 2 || got[0] != "a.example" || got[1] != "*" {
		t.Errorf("domains = %q", got)
	}
	r := vhs[0].GetRoutes()[0]
	if r.GetMatch().GetPrefix() != "/" || r.GetRoute().GetCluster() != "c" {
		t.Errorf("route = %v, want prefix / to cluster c", r)
	}
}

func TestCluster(t *testing.T) {
	tests := []struct{ name, service string }{{"c", ""}, {"c", "svc"}}
	for _, tt := range tests {
		c := controlplane.Cluster(tt.name, tt.service)
		if c.GetName() != tt.name || c.GetType().String() != "EDS" || c.GetLbPolicy().String() != "ROUND_ROBIN" {
			t.Errorf("Cluster(%q, %q) = %v", tt.name, tt.service, c)
		}
		eds := c.GetEdsClusterConfig()
		if eds.GetEdsConfig().GetAds() == nil || eds.GetServiceName() != tt.service {
			t.Errorf("Cluster(%q, %q).eds_cluster_config = %v", tt.name, tt.service, eds)
		}
		if c.GetConnectTimeout().AsDuration().Seconds() != 5 {
			t.Errorf("connect_timeout = %v, want 5s", c.GetConnectTimeout().AsDuration())
		}
	}
}

func TestEndpoints(t *testing.T) {
	cla := controlplane.Endpoints("c", "127.0.0.1:8080", "[::1]:9090")
	if cla.GetClusterName() != "c" || len(cla.GetEndpoints()) != 1 {
		t.Fatalf("Endpoints = %v", cla)
	}
	loc := cla.GetEndpoints()[0]
	if loc.GetLoadBalancingWeight().GetValue() != 1 {
		t.Errorf("locality weight = %v, want 1", loc.GetLoadBalancingWeight())
	}
	want := []string{"127.0.0.1:8080", "[::1]:9090"}
	if len(loc.GetLbEndpoints()) != len(want) {
		t.Fatalf("got %d endpoints, want %d", len(loc.GetLbEndpoints()), len(want))
	}
	for i, e := range loc.GetLbEndpoints() {
		if got := addrOf(e); got != want[i] {
			t.Errorf("endpoint %d = %s, want %s", i, got, want[i])
		}
		if e.GetHealthStatus() != corev3.HealthStatus_HEALTHY {
			t.Errorf("endpoint %d health = %v, want HEALTHY", i, e.GetHealthStatus())
		}
	}
}

func TestEndpointsPanicsOnBadAddress(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("Endpoints with a bad address did not panic")
		}
	}()
	controlplane.Endpoints("c", "no-port")
}

func TestDemoResources(t *testing.T) {
	res := controlplane.DemoResources("demo")
	if len(res) != 4 {
		t.Fatalf("DemoResources returned %d resources, want 4", len(res))
	}
	l := res[0].(*listenerv3.Listener)
	if l.GetName() != "demo" || hcmOf(t, l).GetRds().GetRouteConfigName() != "demo-route" {
		t.Errorf("listener = %v", l)
	}
	rc := res[1].(*routev3.RouteConfiguration)
	if rc.GetName() != "demo-route" || rc.GetVirtualHosts()[0].GetRoutes()[0].GetRoute().GetCluster() != "demo-cluster" {
		t.Errorf("route = %v", rc)
	}
	cla := res[3].(*endpointv3.ClusterLoadAssignment)
	if cla.GetClusterName() != "demo-cluster" || len(cla.GetEndpoints()[0].GetLbEndpoints()) != 2 {
		t.Errorf("endpoints = %v", cla)
	}
	for _, e := range cla.GetEndpoints()[0].GetLbEndpoints() {
		addr := addrOf(e)
		host, port, _ := net.SplitHostPort(addr)
		if host != "127.0.0.1" || port == "0" {
			t.Errorf("demo endpoint %s, want 127.0.0.1 and a non-zero port", addr)
		}
	}
	if again := controlplane.DemoResources("demo"); !proto.Equal(again[3], res[3]) {
		t.Error("DemoResources differs between calls")
	}
}

func addrOf(e *endpointv3.LbEndpoint) string {
	sa := e.GetEndpoint().GetAddress().GetSocketAddress()
	return net.JoinHostPort(sa.GetAddress(), strconv.FormatUint(uint64(sa.GetPortValue()), 10))
}

func TestServerListener(t *testing.T) {
	l := controlplane.ServerListener("s", "127.0.0.1", 8443, "r")
	if l.GetApiListener() != nil {
		t.Fatalf("server listener has an api_listener: %v", l)
	}
	sa := l.GetAddress().GetSocketAddress()
	if sa.GetAddress() != "127.0.0.1" || sa.GetPortValue() != 8443 {
		t.Errorf("address = %v, want 127.0.0.1:8443", sa)
	}
	chains := l.GetFilterChains()
	if len(chains) != 1 || len(chains[0].GetFilters()) != 1 {
		t.Fatalf("filter_chains = %v, want one chain with one filter", chains)
	}
	var hcm hcmv3.HttpConnectionManager
	if err := chains[0].GetFilters()[0].GetTypedConfig().UnmarshalTo(&hcm); err != nil {
		t.Fatal(err)
	}
	if hcm.GetRds().GetRouteConfigName() != "r" || hcm.GetRds().GetConfigSource().GetAds() == nil {
		t.Errorf("rds = %v, want r over ads", hcm.GetRds())
	}
}

func TestAggregateCluster(t *testing.T) {
	c := controlplane.AggregateCluster("agg", "a", "b")
	ct := c.GetClusterType()
	var cfg aggregatev3.ClusterConfig
	if err := ct.GetTypedConfig().UnmarshalTo(&cfg); err != nil || c.GetName() != "agg" || ct.GetName() != controlplane.AggregateClusterType ||
		!slices.Equal(cfg.GetClusters(), []string{"a", "b"}) {
		t.Errorf("aggregate cluster = %v (%v), want agg of a, b", c, err)
	}
}
