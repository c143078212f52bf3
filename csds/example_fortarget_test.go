package csds_test

import (
	"context"
	"fmt"
	"log"
	"net"

	statusv3 "github.com/envoyproxy/go-control-plane/envoy/service/status/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/xdslens/xdslens/admin"
	"github.com/xdslens/xdslens/csds"
	"github.com/xdslens/xdslens/xdsclient"
	"github.com/xdslens/xdslens/xdsclient/bootstrap"
)

// servePerTarget registers, for readers that accept one ClientConfig per
// response (grpcdebug v1.0.5), the client of each target of pool on a
// server of its own: the admin services on srvA, CSDS alone on srvB.
func servePerTarget(pool *xdsclient.Pool, srvA, srvB *grpc.Server) {
	admin.Register(srvA, csds.ForTarget(pool, "dns:///backend.example.com"))
	csds.NewServer(csds.ForTarget(pool, "#server")).Register(srvB)
}

// A pool of two clients, served one target per server: each response
// holds exactly one ClientConfig.
func ExampleForTarget() {
	cfg, err := bootstrap.Parse([]byte(`{
		"xds_servers": [{"server_uri": "127.0.0.1:1", "channel_creds": [{"type": "insecure"}]}],
		"node": {"id": "example-node"}
	}`))
	if err != nil {
		log.Fatal(err)
	}
	pool := xdsclient.NewPool(cfg)
	for _, target := range []string{"dns:///backend.example.com", "#server"} {
		_, release, err := pool.Get(target)
		if err != nil {
			log.Fatal(err)
		}
		defer release()
	}

	srvA, srvB := grpc.NewServer(), grpc.NewServer()
	servePerTarget(pool, srvA, srvB)
	for _, srv := range []*grpc.Server{srvA, srvB} {
		lis, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			log.Fatal(err)
		}
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
			fmt.Println("scope:", c.GetClientScope())
		}
	}
	// Output:
	// scope: dns:///backend.example.com
	// scope: #server
}
