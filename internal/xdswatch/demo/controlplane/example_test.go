package controlplane_test

import (
	"context"
	"fmt"
	"log"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/xdslens/xdslens/internal/xdswatch/demo/controlplane"
)

func Example() {
	ctx := context.Background()
	srv, err := controlplane.Start(ctx, "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Stop()
	if err := srv.SetResources(ctx, "node-1", "1", controlplane.DemoResources("demo")...); err != nil {
		log.Fatal(err)
	}

	cc, err := grpc.NewClient(srv.Addr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		log.Fatal(err)
	}
	defer cc.Close()
	stream, err := discoveryv3.NewAggregatedDiscoveryServiceClient(cc).StreamAggregatedResources(ctx)
	if err != nil {
		log.Fatal(err)
	}
	err = stream.Send(&discoveryv3.DiscoveryRequest{
		Node:          &corev3.Node{Id: "node-1"},
		TypeUrl:       resourcev3.ClusterType,
		ResourceNames: []string{"demo-cluster"},
	})
	if err != nil {
		log.Fatal(err)
	}
	resp, err := stream.Recv()
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(resp.GetVersionInfo(), len(resp.GetResources()), resp.GetResources()[0].GetTypeUrl())
	// Output: 1 1 type.googleapis.com/envoy.config.cluster.v3.Cluster
}
