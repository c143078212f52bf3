package xdswatch

import (
	"net"

	"google.golang.org/grpc"

	"github.com/xdslens/xdslens/admin"
	"github.com/xdslens/xdslens/xdsclient"
)

// serveAdmin serves the admin services for the pool on addr, on a gRPC
// server of its own: CSDS (one ClientConfig per pool client, xdswatch has
// one, whose client_scope is the client's target), channelz (the xDS
// channels), health (SERVING), server reflection and the config histories
// of the xds:/// channels (cfg.histories). The returned func
// reports NOT_SERVING and stops the server, ending open streams.
func serveAdmin(addr string, pool *xdsclient.Pool, cfg *config, _ *meters) (string, func(), error) {
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		return "", nil, err
	}
	srv := grpc.NewServer()
	services := admin.Register(srv, pool, admin.WithConfigHistory(cfg.histories))
	served := make(chan struct{})
	go func() {
		defer close(served)
		// Serve returns nil after Stop; a failing listener shows up as
		// connection errors in admin clients.
		_ = srv.Serve(lis)
	}()
	return lis.Addr().String(), func() {
		services.Shutdown()
		srv.Stop()
		<-served
	}, nil
}
