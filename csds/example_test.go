package csds_test

import (
	"context"
	"fmt"
	"log"
	"net"

	statusv3 "github.com/envoyproxy/go-control-plane/envoy/service/status/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/xdslens/xdslens/csds"
	"github.com/xdslens/xdslens/xdsclient"
	"github.com/xdslens/xdslens/xdsclient/bootstrap"
	"github.com/xdslens/xdslens/xdsclient/xdsresource"
)

// Serve the status of every client of a pool on a gRPC server of your own,
// then read it back with the generated CSDS client, as grpcdebug does. The
// xDS server need not answer: the watched cluster is REQUESTED until it
// does.
func Example() {
	cfg, err := bootstrap.Parse([]byte(`{
		"xds_servers": [{"server_uri": "127.0.0.1:1", "channel_creds": [{"type": "insecure"}]}],
		"node": {"id": "example-node"}
	}`))
	if err != nil {
		log.Fatal(err)
	}
	pool := xdsclient.NewPool(cfg)
	client, release, err := pool.Get("example-target")
	if err != nil {
		log.Fatal(err)
	}
	defer release()
	defer client.Watch(xdsresource.ClusterType, "backend", xdsclient.WatcherFuncs{})()

	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	srv := grpc.NewServer()
	csds.NewServer(pool).Register(srv)
	go srv.Serve(lis)
	defer srv.Stop()

	cc, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		log.Fatal(err)
	}
	defer cc.Close()
	resp, err := statusv3.NewClientStatusDiscoveryServiceClient(cc).FetchClientStatus(context.Background(), &statusv3.ClientStatusRequest{})
	if err != nil {
		log.Fatal(err)
	}
	for _, c := range resp.GetConfig() {
		fmt.Println("scope:", c.GetClientScope(), "node:", c.GetNode().GetId())
		for _, g := range c.GetGenericXdsConfigs() {
			fmt.Println(g.GetName(), g.GetClientStatus(), g.GetTypeUrl())
		}
	}
	// Output:
	// scope: example-target node: example-node
	// backend REQUESTED type.googleapis.com/envoy.config.cluster.v3.Cluster
}
