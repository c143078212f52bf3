package xdsconfig_test

import (
	"context"
	"fmt"
	"log"

	"github.com/xdslens/xdslens/internal/xdswatch/demo/controlplane"
	"github.com/xdslens/xdslens/xdsclient"
	"github.com/xdslens/xdslens/xdsclient/bootstrap"
	"github.com/xdslens/xdslens/xdsclient/xdsconfig"
)

func Example() {
	// A management server on loopback with listener "demo" → route
	// configuration "demo-route" → cluster "demo-cluster" → two endpoints.
	ctx := context.Background()
	srv, err := controlplane.Start(ctx, "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Stop()
	if err := srv.SetResources(ctx, "example-node", "1", controlplane.DemoResources("demo")...); err != nil {
		log.Fatal(err)
	}
	cfg, err := bootstrap.Parse([]byte(`{
		"xds_servers": [{"server_uri": "` + srv.Addr() + `", "channel_creds": [{"type": "insecure"}]}],
		"node": {"id": "example-node"}}`))
	if err != nil {
		log.Fatal(err)
	}
	client, err := xdsclient.New(cfg)
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()

	configs := make(chan *xdsconfig.Config, 1)
	m := xdsconfig.Watch(client, "demo", "demo.example.com", xdsconfig.WatcherFuncs{
		OnUpdate: func(c *xdsconfig.Config) { configs <- c },
		OnError:  func(err error) { log.Print(err) },
	})
	defer m.Stop()

	c := <-configs
	s := c.Clusters["demo-cluster"]
	fmt.Println(c.RouteConfigName, c.VirtualHost.Name)
	fmt.Println(s.Cluster.Kind, len(s.Endpoints.Localities[0].Endpoints), "endpoints")
	fmt.Println(s.ResolutionNote)
	// Output:
	// demo-route demo-route-vhost
	// EDS 2 endpoints
	// xDS node ID:example-node
}
