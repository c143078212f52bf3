package xdsresource

import (
	"errors"
	"strings"
	"testing"

	"github.com/xdslens/xdslens/xdsclient/xdsresource/routeconfig"

	"github.com/xdslens/xdslens/xdsclient/xdsresource/filterconfig"

	xdstypev3 "github.com/cncf/xds/go/xds/type/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	faultv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/fault/v3"
	rbacv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/rbac/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/xdslens/xdslens/httpfilter"
	"github.com/xdslens/xdslens/xdsclient/xdsresource/internal/decoding"
)

// Type URLs of the filters these tests register with package httpfilter.
const (
	testServerFilterURL   = "type.googleapis.com/xdslens.test.ServerFilter"
	testServerOverrideURL = "type.googleapis.com/xdslens.test.ServerFilterOverride"
	testClientFilterURL   = "type.googleapis.com/xdslens.test.ClientOnlyFilter"
)

func init() {
	httpfilter.Register(testServerFilter{})
	httpfilter.Register(testPlainFilter{})
}

// testServerFilter is a server filter whose configs come in a TypedStruct
// (a third-party filter's usual form) or as a raw Any; a config or an
// override whose field "bad" is set, or whose bytes are "bad", is refused.
type testServerFilter struct{}

func (testServerFilter) TypeURLs() []string {
	return []string{testServerFilterURL, testServerOverrideURL}
}

func (testServerFilter) ParseConfig(cfg *anypb.Any) (httpfilter.Config, error) {
	return parseTestConfig(cfg)
}

func (testServerFilter) ParseOverride(cfg *anypb.Any) (httpfilter.Config, error) {
	return parseTestConfig(cfg)
}

func (testServerFilter) BuildServerInterceptor(httpfilter.Config, httpfilter.Config, httpfilter.ServerEnv) (httpfilter.ServerInterceptor, error) {
	return nil, nil
}

func parseTestConfig(cfg *anypb.Any) (httpfilter.Config, error) {
	if cfg.GetTypeUrl() != decoding.XDSTypedStructURL {
		if string(cfg.GetValue()) == "bad" {
			return nil, errors.New("value: bad")
		}
		return cfg.GetValue(), nil
	}
	ts := new(xdstypev3.TypedStruct)
	if err := cfg.UnmarshalTo(ts); err != nil {
		return nil, err
	}
	if _, bad := ts.GetValue().GetFields()["bad"]; bad {
		return nil, errors.New("value.bad: not allowed")
	}
	return ts.GetValue(), nil
}

// testPlainFilter is a registered filter that is no ServerFilter.
type testPlainFilter struct{}

func (testPlainFilter) TypeURLs() []string { return []string{testClientFilterURL} }
func (testPlainFilter) ParseConfig(*anypb.Any) (httpfilter.Config, error) {
	return nil, nil
}
func (testPlainFilter) ParseOverride(*anypb.Any) (httpfilter.Config, error) {
	return nil, nil
}

// inStruct wraps a config of type url, with fields, in a TypedStruct.
func inStruct(t testing.TB, url string, fields map[string]any) *anypb.Any {
	t.Helper()
	v, err := structpb.NewStruct(fields)
	if err != nil {
		t.Fatal(err)
	}
	return toAny(t, &xdstypev3.TypedStruct{TypeUrl: url, Value: v})
}

// rawAny is a config of type url whose bytes are value.
func rawAny(url, value string) *anypb.Any { return &anypb.Any{TypeUrl: url, Value: []byte(value)} }

// serverWithFilters returns a server listener whose only chain runs
// filters, then the router.
func serverWithFilters(t testing.TB, filters ...*hcmv3.HttpFilter) *listenerv3.Listener {
	hcm := rdsHCM(t)
	hcm.HttpFilters = append(filters, routerFilter(t))
	c := chain(t, "c", nil)
	c.Filters = []*listenerv3.Filter{hcmFilter(t, hcm)}
	return serverLis(c)
}

func anyFilter(name string, cfg *anypb.Any, optional bool) *hcmv3.HttpFilter {
	return &hcmv3.HttpFilter{Name: name, ConfigType: &hcmv3.HttpFilter_TypedConfig{TypedConfig: cfg}, IsOptional: optional}
}

func TestRegisteredServerFilter(t *testing.T) {
	ts := inStruct(t, testServerFilterURL, map[string]any{"k": "v"})
	raw := rawAny(testServerFilterURL, "ok")
	s := decodeServer(t, serverWithFilters(t, anyFilter("custom", ts, false), anyFilter("raw", raw, false)))
	got := s.FilterChains[0].HTTPFilters
	if len(got) != 3 || got[0].Name != "custom" || got[0].TypeURL != testServerFilterURL || !proto.Equal(got[0].Config, ts) ||
		got[1].Name != "raw" || got[1].TypeURL != testServerFilterURL || !proto.Equal(got[1].Config, raw) {
		t.Errorf("HTTPFilters = %+v, want the registered filters with their configs as received, then the router", got)
	}

	// On a client, the server filter is not supported: rejected, or left
	// out when optional.
	hcm := rdsHCM(t)
	hcm.HttpFilters = []*hcmv3.HttpFilter{anyFilter("custom", ts, false), routerFilter(t)}
	_, _, err := decode(t, ListenerType, apiListener(t, hcm))
	if want := `http_filters[0] "custom": filter type "` + testServerFilterURL + `" is not supported on clients`; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("client Listener with a server filter: %v, want %q", err, want)
	}
	hcm.HttpFilters[0].IsOptional = true
	_, v, err := decode(t, ListenerType, apiListener(t, hcm))
	if err != nil || len(v.(*Listener).HTTPFilters) != 1 {
		t.Errorf("client Listener with an optional server filter: %v, %+v; want it left out", err, v)
	}
}

func TestRegisteredFilterErrors(t *testing.T) {
	const at = `lds "` + serverName + `": filter_chains[0].filters[0] "hcm": http_filters[0] "custom": `
	tests := []struct {
		name   string
		filter *hcmv3.HttpFilter
		want   string
	}{
		{"config refused by its filter", anyFilter("custom", inStruct(t, testServerFilterURL, map[string]any{"bad": true}), false), at + "value.bad: not allowed"},
		{"raw config refused by its filter", anyFilter("custom", rawAny(testServerFilterURL, "bad"), false), at + "value: bad"},
		{"refused even when optional", anyFilter("custom", rawAny(testServerFilterURL, "bad"), true), at + "value: bad"},
		{"not a server filter", anyFilter("custom", rawAny(testClientFilterURL, ""), false), at + `filter type "` + testClientFilterURL + `" is not supported on servers`},
		{"unregistered", anyFilter("custom", rawAny("type.googleapis.com/xdslens.test.Nobody", ""), false), at + `unsupported filter type "type.googleapis.com/xdslens.test.Nobody"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := decode(t, ListenerType, serverWithFilters(t, tc.filter))
			if err == nil || err.Error() != tc.want {
				t.Errorf("Decode = %v, want %q", err, tc.want)
			}
		})
	}
	// An optional filter that is no server filter is left out.
	s := decodeServer(t, serverWithFilters(t, anyFilter("custom", rawAny(testClientFilterURL, ""), true)))
	if n := len(s.FilterChains[0].HTTPFilters); n != 1 {
		t.Errorf("an optional client-only filter on a server: %d filters kept, want the router alone", n)
	}
}

func TestFilterOverridesKept(t *testing.T) {
	rbacOverride := toAny(t, &rbacv3.RBACPerRoute{})
	fault := toAny(t, &faultv3.HTTPFault{})
	custom := inStruct(t, testServerOverrideURL, map[string]any{"k": 1.0})
	wrapped := toAny(t, &routev3.FilterConfig{Config: custom})
	// A disabled override is validated and kept as any other (C-core): a
	// known type, its config unwrapped.
	disabledCfg := toAny(t, &faultv3.HTTPFault{})
	m := routeConfig(prefixRoute("/", "c1"))
	vh := m.VirtualHosts[0]
	vh.TypedPerFilterConfig = map[string]*anypb.Any{
		"rbac":     rbacOverride,
		"fault":    fault,
		"optional": toAny(t, &routev3.FilterConfig{Config: toAny(t, &structpb.Struct{}), IsOptional: true}),
		"off":      toAny(t, &routev3.FilterConfig{Disabled: true, Config: disabledCfg}),
	}
	vh.Routes[0].TypedPerFilterConfig = map[string]*anypb.Any{
		"custom": wrapped,
		"off":    toAny(t, &routev3.FilterConfig{Disabled: true, Config: disabledCfg}),
	}
	weightedRoute := &routev3.Route{
		Match: &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: "/w"}},
		Action: &routev3.Route_Route{Route: &routev3.RouteAction{ClusterSpecifier: &routev3.RouteAction_WeightedClusters{
			WeightedClusters: &routev3.WeightedCluster{Clusters: []*routev3.WeightedCluster_ClusterWeight{
				{Name: "a", Weight: wrapperspb.UInt32(1), TypedPerFilterConfig: map[string]*anypb.Any{"custom": custom}},
				{Name: "b", Weight: wrapperspb.UInt32(1)},
			}},
		}}},
	}
	vh.Routes = append(vh.Routes, weightedRoute)
	_, v, err := decode(t, RouteConfigType, m)
	if err != nil {
		t.Fatalf("Decode: %v", err)
	}
	got := v.(*routeconfig.Config).VirtualHosts[0]
	check := func(where string, got filterconfig.Overrides, want filterconfig.Overrides) {
		t.Helper()
		if len(got) != len(want) {
			t.Errorf("%s: %d overrides %v, want %d", where, len(got), keys(got), len(want))
		}
		for name, w := range want {
			g, ok := got[name]
			if !ok || g.TypeURL != w.TypeURL || !proto.Equal(g.Config, w.Config) {
				t.Errorf("%s[%q] = %+v (present %v), want %+v", where, name, g, ok, w)
			}
		}
	}
	check("virtual host", got.FilterOverrides, filterconfig.Overrides{
		"rbac":  {TypeURL: filterconfig.RBACPerRouteTypeURL, Config: rbacOverride},
		"fault": {TypeURL: filterconfig.FaultTypeURL, Config: fault},
		"off":   {TypeURL: disabledCfg.TypeUrl, Config: disabledCfg},
	})
	check("route", got.Routes[0].FilterOverrides, filterconfig.Overrides{
		"custom": {TypeURL: testServerOverrideURL, Config: custom},
		"off":    {TypeURL: disabledCfg.TypeUrl, Config: disabledCfg},
	})
	wcs := got.Routes[1].Action.WeightedClusters
	check("weighted cluster a", wcs[0].FilterOverrides, filterconfig.Overrides{"custom": {TypeURL: testServerOverrideURL, Config: custom}})
	if wcs[1].FilterOverrides != nil || got.Routes[1].FilterOverrides != nil {
		t.Errorf("scopes without typed_per_filter_config have overrides %v, %v; want nil", wcs[1].FilterOverrides, got.Routes[1].FilterOverrides)
	}
}

func TestRegisteredFilterOverrideErrors(t *testing.T) {
	m := routeConfig(prefixRoute("/", "c1"))
	m.VirtualHosts[0].Routes[0].TypedPerFilterConfig = map[string]*anypb.Any{
		"custom": toAny(t, &routev3.FilterConfig{Config: inStruct(t, testServerOverrideURL, map[string]any{"bad": 1.0}), IsOptional: true}),
	}
	_, _, err := decode(t, RouteConfigType, m)
	if want := `rds "r1": virtual_hosts[0].routes[0]: typed_per_filter_config["custom"]: value.bad: not allowed`; err == nil || err.Error() != want {
		t.Errorf("Decode = %v, want %q", err, want)
	}
}

func keys(m filterconfig.Overrides) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
