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

// newAdminServer returns a gRPC server with the admin services over every
// client of pool; stop reports NOT_SERVING and stops it.
func newAdminServer(pool *xdsclient.Pool) (srv *grpc.Server, stop func()) {
	srv = grpc.NewServer()
	services := admin.Register(srv, pool) // CSDS, channelz, health, reflection
	// or CSDS alone: csds.NewServer(pool).Register(srv)
	// or one client: admin.Register(srv, client) / csds.NewServer(client)
	return srv, func() {
		services.Shutdown()
		srv.Stop()
	}
}

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
	srv, stop := newAdminServer(pool)
	go srv.Serve(lis)
	defer stop()

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
