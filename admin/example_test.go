package admin_test

import (
	"context"
	"fmt"
	"log"
	"net"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/xdslens/xdslens/admin"
	"github.com/xdslens/xdslens/xdsclient"
	"github.com/xdslens/xdslens/xdsclient/bootstrap"
)

// Serve the admin services of a pool on a port of their own, as
// `grpcdebug HOST:PORT xds status`, `channelz channels` and `health` expect.
func Example() {
	cfg, err := bootstrap.Parse([]byte(`{
		"xds_servers": [{"server_uri": "127.0.0.1:1", "channel_creds": [{"type": "insecure"}]}],
		"node": {"id": "example-node"}
	}`))
	if err != nil {
		log.Fatal(err)
	}
	pool := xdsclient.NewPool(cfg)

	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	srv := grpc.NewServer()
	services := admin.Register(srv, pool)
	go srv.Serve(lis)
	defer srv.Stop()
	defer services.Shutdown()

	cc, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		log.Fatal(err)
	}
	defer cc.Close()
	resp, err := healthpb.NewHealthClient(cc).Check(context.Background(), &healthpb.HealthCheckRequest{})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(resp.GetStatus())
	// Output: SERVING
}
