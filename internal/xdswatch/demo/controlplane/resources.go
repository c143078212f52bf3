package controlplane

import (
	"fmt"
	"net"
	"strconv"
	"sync"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	aggregatev3 "github.com/envoyproxy/go-control-plane/envoy/extensions/clusters/aggregate/v3"
	routerv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// RouterFilterName is the name the builders give the HTTP router filter.
const RouterFilterName = "envoy.filters.http.router"

// Listener returns a client-side API listener named name whose
// HttpConnectionManager fetches route configuration routeConfigName over
// ADS and ends its filter chain with the router filter, as gRPC requires.
func Listener(name, routeConfigName string) *listenerv3.Listener {
	return apiListener(name, &hcmv3.HttpConnectionManager{
		RouteSpecifier: &hcmv3.HttpConnectionManager_Rds{Rds: &hcmv3.Rds{
			ConfigSource:    adsConfigSource(),
			RouteConfigName: routeConfigName,
		}},
		HttpFilters: routerOnly(),
	})
}

// ListenerInlineRoute returns a client-side API listener named name that
// carries rc inline instead of naming it for RDS.
func ListenerInlineRoute(name string, rc *routev3.RouteConfiguration) *listenerv3.Listener {
	return apiListener(name, &hcmv3.HttpConnectionManager{
		RouteSpecifier: &hcmv3.HttpConnectionManager_RouteConfig{RouteConfig: rc},
		HttpFilters:    routerOnly(),
	})
}

// ServerListener returns a server-side listener (gRFC A36) named name for
// an xDS-enabled gRPC server on host:port. Its one filter chain matches
// every connection and holds an HttpConnectionManager that fetches
// routeConfigName over ADS and ends with the router filter.
func ServerListener(name, host string, port uint32, routeConfigName string) *listenerv3.Listener {
	hcm := &hcmv3.HttpConnectionManager{
		RouteSpecifier: &hcmv3.HttpConnectionManager_Rds{Rds: &hcmv3.Rds{
			ConfigSource:    adsConfigSource(),
			RouteConfigName: routeConfigName,
		}},
		HttpFilters: routerOnly(),
	}
	return &listenerv3.Listener{
		Name: name,
		Address: &corev3.Address{Address: &corev3.Address_SocketAddress{SocketAddress: &corev3.SocketAddress{
			Address:       host,
			PortSpecifier: &corev3.SocketAddress_PortValue{PortValue: port},
		}}},
		FilterChains: []*listenerv3.FilterChain{{
			Name: name + "-chain",
			Filters: []*listenerv3.Filter{{
				Name:       "envoy.filters.network.http_connection_manager",
				ConfigType: &listenerv3.Filter_TypedConfig{TypedConfig: mustAny(hcm)},
			}},
		}},
	}
}

// RouteConfig returns a route configuration named name with one virtual
// host for domains whose single route sends every path (prefix "/") to
// cluster.
func RouteConfig(name string, domains []string, cluster string) *routev3.RouteConfiguration {
	return &routev3.RouteConfiguration{
		Name: name,
		VirtualHosts: []*routev3.VirtualHost{{
			Name:    name + "-vhost",
			Domains: append([]string(nil), domains...),
			Routes: []*routev3.Route{{
				Match: &routev3.RouteMatch{
					PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: "/"},
				},
				Action: &routev3.Route_Route{Route: &routev3.RouteAction{
					ClusterSpecifier: &routev3.RouteAction_Cluster{Cluster: cluster},
				}},
			}},
		}},
	}
}

// Cluster returns an EDS cluster named name that fetches its endpoints over
// ADS, balances ROUND_ROBIN and has a 5s connect timeout. An empty
// edsServiceName leaves service_name unset, so the endpoints resource is
// named after the cluster.
func Cluster(name, edsServiceName string) *clusterv3.Cluster {
	return &clusterv3.Cluster{
		Name:                 name,
		ClusterDiscoveryType: &clusterv3.Cluster_Type{Type: clusterv3.Cluster_EDS},
		EdsClusterConfig: &clusterv3.Cluster_EdsClusterConfig{
			EdsConfig:   adsConfigSource(),
			ServiceName: edsServiceName,
		},
		LbPolicy:       clusterv3.Cluster_ROUND_ROBIN,
		ConnectTimeout: durationpb.New(5 * time.Second),
	}
}

// ClusterWithLoadReporting returns Cluster(name, edsServiceName) with
// lrs_server set to self: clients report its load to this server.
func ClusterWithLoadReporting(name, edsServiceName string) *clusterv3.Cluster {
	c := Cluster(name, edsServiceName)
	c.LrsServer = &corev3.ConfigSource{
		ConfigSourceSpecifier: &corev3.ConfigSource_Self{Self: &corev3.SelfConfigSource{}},
		ResourceApiVersion:    corev3.ApiVersion_V3,
	}
	return c
}

// AggregateCluster returns an aggregate cluster (gRFC A37) named name whose
// clusters are children, in priority order.
func AggregateCluster(name string, children ...string) *clusterv3.Cluster {
	return &clusterv3.Cluster{
		Name: name,
		ClusterDiscoveryType: &clusterv3.Cluster_ClusterType{ClusterType: &clusterv3.Cluster_CustomClusterType{
			Name:        AggregateClusterType,
			TypedConfig: mustAny(&aggregatev3.ClusterConfig{Clusters: append([]string(nil), children...)}),
		}},
	}
}

// AggregateClusterType is the custom cluster type name of aggregate
// clusters.
const AggregateClusterType = "envoy.clusters.aggregate"

// Endpoints returns the endpoints resource clusterName: one locality of
// weight 1 holding a HEALTHY endpoint for each "ip:port" in addrs. It
// panics if an address is not of that form, since addresses in tests are
// constants.
func Endpoints(clusterName string, addrs ...string) *endpointv3.ClusterLoadAssignment {
	lbEndpoints := make([]*endpointv3.LbEndpoint, 0, len(addrs))
	for _, addr := range addrs {
		host, portStr, err := net.SplitHostPort(addr)
		if err != nil {
			panic(fmt.Sprintf("controlplane.Endpoints(%q): address %q: %v", clusterName, addr, err))
		}
		port, err := strconv.ParseUint(portStr, 10, 16)
		if err != nil {
			panic(fmt.Sprintf("controlplane.Endpoints(%q): address %q: bad port: %v", clusterName, addr, err))
		}
		lbEndpoints = append(lbEndpoints, &endpointv3.LbEndpoint{
			HostIdentifier: &endpointv3.LbEndpoint_Endpoint{Endpoint: &endpointv3.Endpoint{
				Address: &corev3.Address{Address: &corev3.Address_SocketAddress{
					SocketAddress: &corev3.SocketAddress{
						Protocol:      corev3.SocketAddress_TCP,
						Address:       host,
						PortSpecifier: &corev3.SocketAddress_PortValue{PortValue: uint32(port)},
					},
				}},
			}},
			HealthStatus: corev3.HealthStatus_HEALTHY,
		})
	}
	return &endpointv3.ClusterLoadAssignment{
		ClusterName: clusterName,
		Endpoints: []*endpointv3.LocalityLbEndpoints{{
			Locality:            &corev3.Locality{Region: "loopback"},
			LbEndpoints:         lbEndpoints,
			LoadBalancingWeight: wrapperspb.UInt32(1),
		}},
	}
}

// DemoResources returns a small configuration rooted at listener
// listenerName: the listener, route configuration listenerName+"-route"
// matching every domain, cluster listenerName+"-cluster", and that
// cluster's endpoints, two addresses on 127.0.0.1. The two ports were free
// when the process first asked for them and nothing in this package
// listens on them, so connections to the endpoints are normally refused.
// Every call in one process returns the same ports.
func DemoResources(listenerName string) []proto.Message {
	route := listenerName + "-route"
	cluster := listenerName + "-cluster"
	ports := demoPorts()
	return []proto.Message{
		Listener(listenerName, route),
		RouteConfig(route, []string{"*"}, cluster),
		Cluster(cluster, ""),
		Endpoints(cluster,
			net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[0])),
			net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[1]))),
	}
}

// demoPorts picks two loopback ports that nothing listens on, once per
// process, by letting the kernel choose them and releasing them. If that
// fails it falls back to ports below 1024 that no service uses.
var demoPorts = sync.OnceValue(func() [2]int {
	var ports [2]int
	var open []net.Listener
	defer func() {
		for _, l := range open {
			l.Close()
		}
	}()
	for i := range ports {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return [2]int{1, 2}
		}
		open = append(open, l)
		ports[i] = l.Addr().(*net.TCPAddr).Port
	}
	return ports
})

func apiListener(name string, hcm *hcmv3.HttpConnectionManager) *listenerv3.Listener {
	return &listenerv3.Listener{
		Name:        name,
		ApiListener: &listenerv3.ApiListener{ApiListener: mustAny(hcm)},
	}
}

func routerOnly() []*hcmv3.HttpFilter {
	return []*hcmv3.HttpFilter{{
		Name:       RouterFilterName,
		ConfigType: &hcmv3.HttpFilter_TypedConfig{TypedConfig: mustAny(&routerv3.Router{})},
	}}
}

func adsConfigSource() *corev3.ConfigSource {
	return &corev3.ConfigSource{
		ConfigSourceSpecifier: &corev3.ConfigSource_Ads{Ads: &corev3.AggregatedConfigSource{}},
		ResourceApiVersion:    corev3.ApiVersion_V3,
	}
}

// mustAny packs m, which cannot fail for the well-formed messages the
// builders make.
func mustAny(m proto.Message) *anypb.Any {
	a, err := anypb.New(m)
	if err != nil {
		panic(fmt.Sprintf("controlplane: pack %s: %v", proto.MessageName(m), err))
	}
	return a
}
