package xdsresource_test

import (
	"fmt"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routerv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/xdslens/xdslens/xdsclient/xdsresource"
)

// A server-side Listener, whose filter chain serves TLS with an identity
// from the bootstrap's certificate provider instance "server-id".
func ExampleListener_server() {
	const name = "grpc/server?xds.resource.listening_address=0.0.0.0:8443"
	router, _ := anypb.New(&routerv3.Router{})
	hcm, _ := anypb.New(&hcmv3.HttpConnectionManager{
		RouteSpecifier: &hcmv3.HttpConnectionManager_Rds{Rds: &hcmv3.Rds{
			ConfigSource:    &corev3.ConfigSource{ConfigSourceSpecifier: &corev3.ConfigSource_Ads{Ads: &corev3.AggregatedConfigSource{}}},
			RouteConfigName: "r1",
		}},
		HttpFilters: []*hcmv3.HttpFilter{{Name: "router", ConfigType: &hcmv3.HttpFilter_TypedConfig{TypedConfig: router}}},
	})
	tlsCtx, _ := anypb.New(&tlsv3.DownstreamTlsContext{CommonTlsContext: &tlsv3.CommonTlsContext{
		TlsCertificateProviderInstance: &tlsv3.CertificateProviderPluginInstance{InstanceName: "server-id"},
	}})
	resource, _ := anypb.New(&listenerv3.Listener{
		Name: name,
		Address: &corev3.Address{Address: &corev3.Address_SocketAddress{SocketAddress: &corev3.SocketAddress{
			Address: "0.0.0.0", PortSpecifier: &corev3.SocketAddress_PortValue{PortValue: 8443},
		}}},
		FilterChains: []*listenerv3.FilterChain{{
			Filters: []*listenerv3.Filter{{Name: "hcm", ConfigType: &listenerv3.Filter_TypedConfig{TypedConfig: hcm}}},
			TransportSocket: &corev3.TransportSocket{
				Name:       "envoy.transport_sockets.tls",
				ConfigType: &corev3.TransportSocket_TypedConfig{TypedConfig: tlsCtx},
			},
		}},
	})

	// The client passes the bootstrap's certificate providers.
	providers := map[string]bool{"server-id": true}
	opts := xdsresource.DecodeOptions{HasCertificateProvider: func(n string) bool { return providers[n] }}
	_, value, err := xdsresource.ListenerType.Decode(opts, resource)
	if err != nil {
		fmt.Println("NACK:", err)
		return
	}
	l := value.(*xdsresource.Listener)
	fmt.Println(l.Summary())
	fc := l.Server.FilterChains[0]
	fmt.Println(fc.RouteConfigName, fc.Security.IdentityInstance)

	// Without the instance in the bootstrap, the listener is invalid.
	_, _, err = xdsresource.ListenerType.Decode(xdsresource.DecodeOptions{}, resource)
	fmt.Println("NACK:", err)

	// Output:
	// server listener grpc/server?xds.resource.listening_address=0.0.0.0:8443: 0.0.0.0:8443, 1 filter chain
	// r1 server-id
	// NACK: lds "grpc/server?xds.resource.listening_address=0.0.0.0:8443": filter_chains[0].transport_socket.typed_config.common_tls_context.tls_certificate_provider_instance.instance_name: "server-id" is not in the bootstrap's certificate_providers
}
