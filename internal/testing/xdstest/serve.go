package xdstest

import (
	"net"
	"testing"

	"google.golang.org/grpc"
)

// ServeGRPC serves a gRPC server on a loopback port until the test ends,
// with the services register adds, and returns its address.
func ServeGRPC(t testing.TB, register func(*grpc.Server)) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := grpc.NewServer()
	register(g)
	served := make(chan struct{})
	go func() { defer close(served); g.Serve(lis) }()
	t.Cleanup(func() { g.Stop(); <-served })
	return lis.Addr().String()
}
