package h2test_test

import (
	"net"
	"testing"

	"google.golang.org/grpc"

	"github.com/xdslens/xdslens/internal/testing/h2test"
	"github.com/xdslens/xdslens/internal/xdswatch/demo/backends"
)

const (
	emptyCall          = "/grpc.testing.TestService/EmptyCall"
	streamingInputCall = "/grpc.testing.TestService/StreamingInputCall"
)

// The client against a gRPC server's graceful stop: a unary call served,
// a stream held open across both GOAWAYs and served when its request
// ends, its own PING acknowledged, and the connection's end (a second
// after the last stream: gRPC-Go waits that long for the client to close
// first).
func TestClientGracefulStop(t *testing.T) {
	srv, addr := serve(t)
	c := h2test.Dial(t, addr)
	c.Call(1, emptyCall)
	c.Want("stream 1 served", true, h2test.ServedOn(1))
	c.Open(3, streamingInputCall)
	probe := [8]byte{'h', '2', 't', 'e', 's', 't'}
	c.Ping(probe) // its acknowledgement says that the server read stream 3's headers
	c.Want("the PING acknowledged", true, h2test.PingAcked(probe))

	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		srv.GracefulStop() // returns once stream 3 is done
	}()
	c.Want("the first GOAWAY", false, h2test.GoAwayWith(1<<31-1))
	c.Want("the server's PING", true, func(e h2test.Event) bool { return e.Ping != "" })
	c.Want("the final GOAWAY", true, h2test.GoAwayWith(3))
	c.End(3)
	c.Want("stream 3 served", true, h2test.ServedOn(3))
	e := c.Want("the connection closed", true, h2test.Closed)
	t.Logf("the connection ended: %v", e.Err)
	<-stopped
}

// A stream the server refuses is an event with Reset set, which ServedOn
// does not accept: beyond the server's one concurrent stream, stream 3 is
// reset while stream 1 is open, and served once stream 1 is done.
func TestClientReset(t *testing.T) {
	_, addr := serve(t, grpc.MaxConcurrentStreams(1))
	c := h2test.Dial(t, addr)
	c.Open(1, streamingInputCall)
	c.Call(3, emptyCall)
	e := c.Next(true)
	for e.Ping != "" || e.PingAck != "" {
		e = c.Next(true)
	}
	if !e.Reset || e.Stream != 3 || h2test.ServedOn(3)(e) {
		t.Fatalf("stream 3 beyond the limit: %+v, want it reset", e)
	}
	c.End(1)
	c.Want("stream 1 served", true, h2test.ServedOn(1))
	c.Call(5, emptyCall)
	c.Want("stream 5 served", true, h2test.ServedOn(5))
}

// serve starts a gRPC server of the test service on loopback, stopped
// when the test ends.
func serve(t *testing.T, opts ...grpc.ServerOption) (*grpc.Server, string) {
	srv := grpc.NewServer(opts...)
	backends.RegisterTestService(srv, "h2test")
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(lis) }()
	t.Cleanup(func() {
		srv.Stop()
		<-served
	})
	return srv, lis.Addr().String()
}
