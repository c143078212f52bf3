package xdsserver_test

import (
	"log"
	"net"

	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/xdslens/xdslens/xdsclient"
	"github.com/xdslens/xdslens/xdsserver"
)

// serveXDS serves the health service on lis as the control plane's
// Listener for lis's address says, until the server stops: TLS, RBAC and
// routes come from the control plane, certificates from the bootstrap's
// certificate providers.
func serveXDS(pool *xdsclient.Pool, lis net.Listener) error {
	srv, err := xdsserver.New(pool, xdsserver.WithServingModeCallback(func(c xdsserver.ServingModeChange) {
		log.Printf("%s is %s: %v", c.Address, c.Mode, c.Err)
	}))
	if err != nil {
		return err
	}
	healthpb.RegisterHealthServer(srv, health.NewServer())
	return srv.Serve(lis)
}

func Example() {
	pool := xdsclient.DefaultPool() // the bootstrap of GRPC_XDS_BOOTSTRAP
	lis, err := net.Listen("tcp", "0.0.0.0:8443")
	if err != nil {
		log.Fatal(err)
	}
	log.Fatal(serveXDS(pool, lis))
}
