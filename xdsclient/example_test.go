package xdsclient_test

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/xdslens/xdslens/internal/xdswatch/demo/controlplane"
	"github.com/xdslens/xdslens/xdsclient"
	"github.com/xdslens/xdslens/xdsclient/bootstrap"
	"github.com/xdslens/xdslens/xdsclient/xdsresource"
)

// clusterPrinter prints what it is told about a cluster.
type clusterPrinter struct{ done chan struct{} }

func (p clusterPrinter) ResourceChanged(c *xdsresource.Cluster, err error) {
	if err != nil {
		fmt.Println("cluster unusable:", err)
		return
	}
	fmt.Println(c.Summary())
	close(p.done)
}

func (p clusterPrinter) AmbientError(err error) { fmt.Println("still using the last cluster:", err) }

// A client watching one cluster on a control plane.
func Example() {
	ctx := context.Background()
	cp, _ := controlplane.Start(ctx, "127.0.0.1:0")
	defer cp.Stop()
	cp.SetResources(ctx, "example-node", "1", controlplane.Cluster("backend", "backend-endpoints"))

	cfg, err := bootstrap.Parse([]byte(`{
		"xds_servers": [{"server_uri": "` + cp.Addr() + `", "channel_creds": [{"type": "insecure"}]}],
		"node": {"id": "example-node"}
	}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	client, err := xdsclient.New(cfg, xdsclient.WithTarget("xds:///backend"), xdsclient.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer client.Close()

	p := clusterPrinter{done: make(chan struct{})}
	cancel := xdsclient.WatchCluster(client, "backend", p)
	defer cancel()
	<-p.done
	// Output:
	// cluster backend: EDS service "backend-endpoints", round_robin, max_requests 1024
}
