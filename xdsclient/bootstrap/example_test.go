package bootstrap_test

import (
	"errors"
	"fmt"
	"log"

	"github.com/xdslens/xdslens/xdsclient/bootstrap"
)

func ExampleParse() {
	cfg, err := bootstrap.Parse([]byte(`{
		"xds_servers": [
			{
				"server_uri": "xds.example.com:443",
				"channel_creds": [{"type": "unknown_creds"}, {"type": "insecure"}],
				"server_features": ["fail_on_data_errors", "trusted_xds_server"]
			},
			{"server_uri": "fallback.example.com:443", "channel_creds": [{"type": "insecure"}]}
		],
		"node": {"id": "node-1", "locality": {"zone": "us-east1-b"}},
		"authorities": {"team.example.com": {}}
	}`))
	if err != nil {
		log.Fatal(err)
	}
	for _, s := range cfg.Servers {
		fmt.Printf("%s creds=%s trusted=%v\n", s, s.SelectedCreds.Type, s.TrustedXDSServer)
	}
	fmt.Println("node:", cfg.NodeID(), cfg.Node.GetLocality().GetZone())
	fmt.Println("template:", cfg.Authorities["team.example.com"].ClientListenerResourceNameTemplate)
	// Output:
	// xds.example.com:443 creds=insecure trusted=true
	// fallback.example.com:443 creds=insecure trusted=false
	// node: node-1 us-east1-b
	// template: xdstp://team.example.com/envoy.config.listener.v3.Listener/%s
}

func ExampleParse_error() {
	_, err := bootstrap.Parse([]byte(`{
		"xds_servers": [{"server_uri": "xds.example.com:443", "channel_creds": [{"type": "unknown_creds"}]}]
	}`))
	fmt.Println(err)
	// Output:
	// xds bootstrap: xds_servers[0].channel_creds: no supported type among ["unknown_creds"]
}

func ExampleConfig_ServersFor() {
	cfg, err := bootstrap.Parse([]byte(`{
		"xds_servers": [{"server_uri": "default.example.com:443", "channel_creds": [{"type": "insecure"}]}],
		"authorities": {
			"team.example.com": {
				"xds_servers": [{"server_uri": "team-xds.example.com:443", "channel_creds": [{"type": "insecure"}]}]
			}
		}
	}`))
	if err != nil {
		log.Fatal(err)
	}
	for _, name := range []string{
		"cluster-1",
		"xdstp://team.example.com/envoy.config.cluster.v3.Cluster/cluster-1",
		"xdstp://other.example.com/envoy.config.cluster.v3.Cluster/cluster-1",
	} {
		servers, err := cfg.ServersFor(name)
		if err != nil {
			fmt.Println(err)
			continue
		}
		fmt.Println(name, "->", servers[0])
	}
	// Output:
	// cluster-1 -> default.example.com:443
	// xdstp://team.example.com/envoy.config.cluster.v3.Cluster/cluster-1 -> team-xds.example.com:443
	// authority "other.example.com" not found in xds bootstrap for resource "xdstp://other.example.com/envoy.config.cluster.v3.Cluster/cluster-1"
}

func ExampleFromEnv() {
	cfg, err := bootstrap.FromEnv()
	if errors.Is(err, bootstrap.ErrNoBootstrap) {
		fmt.Println("no bootstrap: set GRPC_XDS_BOOTSTRAP or GRPC_XDS_BOOTSTRAP_CONFIG")
		return
	}
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("node", cfg.NodeID(), "talks to", cfg.Servers[0])
}

func ExampleConfig_ClientListenerResourceName() {
	cfg, err := bootstrap.Parse([]byte(`{
		"xds_servers": [{"server_uri": "xds.example.com:443", "channel_creds": [{"type": "insecure"}]}],
		"authorities": {"team.example.com": {}}
	}`))
	if err != nil {
		log.Fatal(err)
	}
	// xds:///my-service:8080
	name, _ := cfg.ClientListenerResourceName("", "/my-service:8080")
	fmt.Println(name)
	// xds://team.example.com/my service
	name, _ = cfg.ClientListenerResourceName("team.example.com", "/my service")
	fmt.Println(name)
	// Output:
	// my-service:8080
	// xdstp://team.example.com/envoy.config.listener.v3.Listener/my%20service
}
