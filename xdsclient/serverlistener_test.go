package xdsclient_test

import (
	"strings"
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/xdslens/xdslens/internal/testing/xdstest"
	"github.com/xdslens/xdslens/internal/xdswatch/demo/controlplane"
	"github.com/xdslens/xdslens/xdsclient"
	"github.com/xdslens/xdslens/xdsclient/bootstrap"
	"github.com/xdslens/xdslens/xdsclient/xdsresource"
)

// TestServerListenerOverGRPC watches an xDS-enabled server's Listener,
// named from the bootstrap's template, on a go-control-plane server. Its
// TLS settings name a certificate provider instance of the bootstrap, which
// the decoder learns from the client; an update naming an instance the
// bootstrap lacks is NACKed and the watcher keeps the first one.
func TestServerListenerOverGRPC(t *testing.T) {
	ctx := xdstest.Context(t)
	cp, err := controlplane.Start(ctx, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cp.Stop)
	cfg, err := bootstrap.Parse([]byte(`{
		"xds_servers": ` + xdstest.ServersJSON(cp.Addr()) + `,
		"node": ` + testNode + `,
		"server_listener_resource_name_template": "grpc/server?xds.resource.listening_address=%s",
		"certificate_providers": {"server-id": {"plugin_name": "file_watcher",
			"config": {"certificate_file": "/certs/cert.pem", "private_key_file": "/certs/key.pem"}}}
	}`))
	if err != nil {
		t.Fatal(err)
	}
	name, err := cfg.ServerListenerResourceName("127.0.0.1:8443")
	if err != nil {
		t.Fatal(err)
	}
	if name != "grpc/server?xds.resource.listening_address=127.0.0.1:8443" {
		t.Fatalf("server listener name = %q", name)
	}
	withIdentity := func(instance string) *corev3.TransportSocket {
		ctx, err := anypb.New(&tlsv3.DownstreamTlsContext{CommonTlsContext: &tlsv3.CommonTlsContext{
			TlsCertificateProviderInstance: &tlsv3.CertificateProviderPluginInstance{InstanceName: instance},
		}})
		if err != nil {
			t.Fatal(err)
		}
		return &corev3.TransportSocket{Name: "envoy.transport_sockets.tls", ConfigType: &corev3.TransportSocket_TypedConfig{TypedConfig: ctx}}
	}
	lis := controlplane.ServerListener(name, "127.0.0.1", 8443, "r1")
	lis.FilterChains[0].TransportSocket = withIdentity("server-id")
	if err := cp.SetResources(ctx, testNodeID, "1", lis, controlplane.RouteConfig("r1", []string{"*"}, "c1")); err != nil {
		t.Fatal(err)
	}

	c := newClient(t, cfg, xdsclient.WithTarget("#server"))
	w := xdstest.NewWatcher()
	defer c.Watch(xdsresource.ListenerType, name, w)()
	got := w.Expect(t, xdsclient.NotifyResource, 0).Resource.Value.(*xdsresource.Listener)
	srv := got.Server
	if srv == nil {
		t.Fatalf("Listener = %+v, want a server listener", got)
	}
	if srv.Address != "127.0.0.1" || srv.Port != 8443 || len(srv.FilterChains) != 1 {
		t.Fatalf("ServerListener = %+v, want 127.0.0.1:8443 with one filter chain", srv)
	}
	fc := srv.FilterChains[0]
	if fc.RouteConfigName != "r1" || fc.Security == nil || fc.Security.IdentityInstance != "server-id" {
		t.Errorf("filter chain = %+v, want RDS r1 with identity from server-id", fc)
	}

	bad := controlplane.ServerListener(name, "127.0.0.1", 8443, "r1")
	bad.FilterChains[0].TransportSocket = withIdentity("not-in-bootstrap")
	if err := cp.SetResources(ctx, testNodeID, "2", bad, controlplane.RouteConfig("r1", []string{"*"}, "c1")); err != nil {
		t.Fatal(err)
	}
	e := w.Expect(t, xdsclient.NotifyAmbientError, codes.InvalidArgument)
	const want = `filter_chains[0].transport_socket.typed_config.common_tls_context.tls_certificate_provider_instance.instance_name: "not-in-bootstrap" is not in the bootstrap's certificate_providers`
	if !strings.Contains(e.Err.Error(), want) || !strings.Contains(e.Err.Error(), `lds "`+name+`"`) {
		t.Errorf("NACK error = %v, want one naming the listener and containing %s", e.Err, want)
	}
	found := false
	for _, d := range c.Dump() {
		if d.Name != name {
			continue
		}
		found = true
		if d.State != xdsclient.StateNACKed || !d.Cached || d.Version != "1" {
			t.Errorf("cache entry = %+v, want NACKED holding version 1", d)
		}
	}
	if !found {
		t.Errorf("no cache entry for %q", name)
	}
}
