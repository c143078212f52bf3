package main

import (
	"net"

	"google.golang.org/grpc"

	"github.com/xdslens/xdslens/csds"
	"github.com/xdslens/xdslens/xdsclient"
)

// serveCSDS serves the Client Status Discovery Service for the pool on addr,
// on a gRPC server of its own: one ClientConfig per pool client (xdswatch
// has one), whose client_scope is the client's target. Entries that hold no
// resource carry a zero last_updated, which grpcdebug's `xds status` needs. The returned func stops the server,
// ending open streams.
func serveCSDS(addr string, pool *xdsclient.Pool) (string, func(), error) {
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		return "", nil, err
	}
	srv := grpc.NewServer()
	csds.NewServer(pool).Register(srv)
	served := make(chan struct{})
	go func() {
		defer close(served)
		// Serve returns nil after Stop; a failing listener shows up as
		// connection errors in CSDS clients.
		_ = srv.Serve(lis)
	}()
	return lis.Addr().String(), func() {
		srv.Stop()
		<-served
	}, nil
}
