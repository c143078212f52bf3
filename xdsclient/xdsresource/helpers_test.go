package xdsresource

import (
	"strings"
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	routerv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// toAny wraps m in an Any, failing the test on error.
func toAny(t testing.TB, m proto.Message) *anypb.Any {
	t.Helper()
	a, err := anypb.New(m)
	if err != nil {
		t.Fatalf("anypb.New(%T): %v", m, err)
	}
	return a
}

// testProviders are the certificate provider instances of the bootstrap
// that tests decode with.
var testProviders = map[string]bool{"roots": true, "identity": true}

// testOpts are the options tests decode with: the bootstrap has the
// instances of testProviders.
var testOpts = DecodeOptions{HasCertificateProvider: func(name string) bool { return testProviders[name] }}

// decode runs typ.Decode on m with testOpts.
func decode(t testing.TB, typ Type, m proto.Message) (string, any, error) {
	t.Helper()
	return typ.Decode(testOpts, toAny(t, m))
}

// deepRegex is a regular expression valid as written, nested 999 levels
// deep, which anchoring (to match whole values, as matchers and routes are
// run) takes past Go's limit of 1000.
var deepRegex = strings.Repeat("(", 999) + "a" + strings.Repeat(")", 999)

// errorCase is one row of a table of invalid resources.
type errorCase struct {
	name  string
	build func() proto.Message
	want  string
	// prefix makes want a prefix of the error, for errors that end with
	// text from the protobuf runtime, which is not stable.
	prefix bool
}

// runErrorCases checks that each resource is rejected with exactly the
// wanted error text and that the resource name is still reported.
func runErrorCases(t *testing.T, typ Type, wantName string, cases []errorCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			name, v, err := decode(t, typ, tc.build())
			if err == nil {
				t.Fatalf("Decode succeeded with %+v, want error %q", v, tc.want)
			}
			if got := err.Error(); got != tc.want && !(tc.prefix && strings.HasPrefix(got, tc.want)) {
				t.Errorf("Decode error:\n got %s\nwant %s", got, tc.want)
			}
			if name != wantName {
				t.Errorf("Decode name = %q, want %q", name, wantName)
			}
			if v != nil {
				t.Errorf("Decode value = %v, want nil", v)
			}
		})
	}
}

var (
	adsSource  = &corev3.ConfigSource{ConfigSourceSpecifier: &corev3.ConfigSource_Ads{Ads: &corev3.AggregatedConfigSource{}}}
	selfSource = &corev3.ConfigSource{ConfigSourceSpecifier: &corev3.ConfigSource_Self{Self: &corev3.SelfConfigSource{}}}
	pathSource = &corev3.ConfigSource{ConfigSourceSpecifier: &corev3.ConfigSource_PathConfigSource{PathConfigSource: &corev3.PathConfigSource{Path: "/etc/x"}}}
)

func httpFilter(t testing.TB, name string, cfg proto.Message) *hcmv3.HttpFilter {
	return &hcmv3.HttpFilter{Name: name, ConfigType: &hcmv3.HttpFilter_TypedConfig{TypedConfig: toAny(t, cfg)}}
}

func routerFilter(t testing.TB) *hcmv3.HttpFilter { return httpFilter(t, "router", &routerv3.Router{}) }

// rdsHCM is a valid HttpConnectionManager that uses RDS for "r1".
func rdsHCM(t testing.TB) *hcmv3.HttpConnectionManager {
	return &hcmv3.HttpConnectionManager{
		RouteSpecifier: &hcmv3.HttpConnectionManager_Rds{Rds: &hcmv3.Rds{ConfigSource: adsSource, RouteConfigName: "r1"}},
		HttpFilters:    []*hcmv3.HttpFilter{routerFilter(t)},
	}
}

// apiListener returns a Listener named "l1" holding hcm.
func apiListener(t testing.TB, hcm *hcmv3.HttpConnectionManager) *listenerv3.Listener {
	return &listenerv3.Listener{Name: "l1", ApiListener: &listenerv3.ApiListener{ApiListener: toAny(t, hcm)}}
}

func prefixRoute(prefix, cluster string) *routev3.Route {
	return &routev3.Route{
		Match:  &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: prefix}},
		Action: &routev3.Route_Route{Route: &routev3.RouteAction{ClusterSpecifier: &routev3.RouteAction_Cluster{Cluster: cluster}}},
	}
}

// routeConfig returns a RouteConfiguration named "r1" with one virtual
// host holding routes.
func routeConfig(routes ...*routev3.Route) *routev3.RouteConfiguration {
	return &routev3.RouteConfiguration{
		Name: "r1",
		VirtualHosts: []*routev3.VirtualHost{{
			Name:    "vh",
			Domains: []string{"*"},
			Routes:  routes,
		}},
	}
}

func sockAddr(ip string, port uint32) *corev3.Address {
	return &corev3.Address{Address: &corev3.Address_SocketAddress{SocketAddress: &corev3.SocketAddress{
		Address:       ip,
		PortSpecifier: &corev3.SocketAddress_PortValue{PortValue: port},
	}}}
}

func lbEndpoint(ip string, port uint32, health corev3.HealthStatus) *endpointv3.LbEndpoint {
	return &endpointv3.LbEndpoint{
		HostIdentifier: &endpointv3.LbEndpoint_Endpoint{Endpoint: &endpointv3.Endpoint{Address: sockAddr(ip, port)}},
		HealthStatus:   health,
	}
}

func locality(zone string, weight, priority uint32, eps ...*endpointv3.LbEndpoint) *endpointv3.LocalityLbEndpoints {
	return &endpointv3.LocalityLbEndpoints{
		Locality:            &corev3.Locality{Region: "r", Zone: zone},
		LoadBalancingWeight: wrapperspb.UInt32(weight),
		Priority:            priority,
		LbEndpoints:         eps,
	}
}
