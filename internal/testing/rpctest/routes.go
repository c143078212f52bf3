package rpctest

import (
	"net"
	"strconv"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// RouteConfig is a route configuration of one virtual host, for every
// domain, with routes in order.
func RouteConfig(name string, routes ...*routev3.Route) *routev3.RouteConfiguration {
	return &routev3.RouteConfiguration{Name: name, VirtualHosts: []*routev3.VirtualHost{{Name: name + "-vh", Domains: []string{"*"}, Routes: routes}}}
}

// Route sends the RPCs that match to action.
func Route(match *routev3.RouteMatch, action *routev3.RouteAction) *routev3.Route {
	return &routev3.Route{Match: match, Action: &routev3.Route_Route{Route: action}}
}

// PrefixMatch matches the paths that begin with p.
func PrefixMatch(p string) *routev3.RouteMatch {
	return &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: p}}
}

// PathMatch matches the path p exactly.
func PathMatch(p string) *routev3.RouteMatch {
	return &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Path{Path: p}}
}

// RegexMatch matches the paths that re matches whole.
func RegexMatch(re string) *routev3.RouteMatch {
	return &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_SafeRegex{SafeRegex: &matcherv3.RegexMatcher{Regex: re}}}
}

// WithHeader adds to m a header matcher: header name equal to exact.
func WithHeader(m *routev3.RouteMatch, name, exact string) *routev3.RouteMatch {
	m.Headers = append(m.Headers, &routev3.HeaderMatcher{Name: name, HeaderMatchSpecifier: &routev3.HeaderMatcher_StringMatch{
		StringMatch: &matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_Exact{Exact: exact}},
	}})
	return m
}

// ToCluster sends to one cluster.
func ToCluster(name string) *routev3.RouteAction {
	return &routev3.RouteAction{ClusterSpecifier: &routev3.RouteAction_Cluster{Cluster: name}}
}

// WeightedCluster is one cluster of ToWeighted and its weight.
type WeightedCluster struct {
	Name   string
	Weight uint32
}

// ToWeighted splits RPCs between clusters by weight.
func ToWeighted(clusters ...WeightedCluster) *routev3.RouteAction {
	wc := &routev3.WeightedCluster{}
	for _, c := range clusters {
		wc.Clusters = append(wc.Clusters, &routev3.WeightedCluster_ClusterWeight{Name: c.Name, Weight: wrapperspb.UInt32(c.Weight)})
	}
	return &routev3.RouteAction{ClusterSpecifier: &routev3.RouteAction_WeightedClusters{WeightedClusters: wc}}
}

// Locality is one locality of LocalityEndpoints: its zone (in region "r"),
// weight, priority and the addresses ("host:port") of its healthy
// endpoints.
type Locality struct {
	Zone     string
	Weight   uint32
	Priority uint32
	Addrs    []string
}

// LocalityEndpoints is an endpoints resource of the cluster (or EDS
// service) name with the given localities.
func LocalityEndpoints(name string, ls ...Locality) *endpointv3.ClusterLoadAssignment {
	cla := &endpointv3.ClusterLoadAssignment{ClusterName: name}
	for _, l := range ls {
		le := &endpointv3.LocalityLbEndpoints{
			Locality:            &corev3.Locality{Region: "r", Zone: l.Zone},
			LoadBalancingWeight: wrapperspb.UInt32(l.Weight),
			Priority:            l.Priority,
		}
		for _, a := range l.Addrs {
			host, port, _ := net.SplitHostPort(a)
			p, _ := strconv.Atoi(port)
			le.LbEndpoints = append(le.LbEndpoints, &endpointv3.LbEndpoint{
				HostIdentifier: &endpointv3.LbEndpoint_Endpoint{Endpoint: &endpointv3.Endpoint{Address: &corev3.Address{Address: &corev3.Address_SocketAddress{
					SocketAddress: &corev3.SocketAddress{Address: host, PortSpecifier: &corev3.SocketAddress_PortValue{PortValue: uint32(p)}},
				}}}},
				HealthStatus: corev3.HealthStatus_HEALTHY,
			})
		}
		cla.Endpoints = append(cla.Endpoints, le)
	}
	return cla
}
