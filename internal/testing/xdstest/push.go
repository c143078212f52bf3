package xdstest

import (
	"net"
	"testing"

	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/grpc"
)

// PushServer is an ADS server for benchmarks, with as little of its own
// cost as possible: every stream sends the responses sent on Push as they
// are (no copy, no nonce filled in), and offers the client's requests on
// Requests without ever blocking on them (a request nobody takes is
// dropped).
type PushServer struct {
	discoveryv3.UnimplementedAggregatedDiscoveryServiceServer
	// Push takes the responses to send, one stream at a time.
	Push chan *discoveryv3.DiscoveryResponse
	// Requests offers the client's requests; it holds one.
	Requests chan *discoveryv3.DiscoveryRequest
	addr     string
}

// NewPushServer listens on 127.0.0.1:0 and serves until the end of the
// test or benchmark.
func NewPushServer(t testing.TB) *PushServer {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("xdstest: listen: %v", err)
	}
	s := &PushServer{
		Push:     make(chan *discoveryv3.DiscoveryResponse),
		Requests: make(chan *discoveryv3.DiscoveryRequest, 1),
		addr:     lis.Addr().String(),
	}
	g := grpc.NewServer()
	discoveryv3.RegisterAggregatedDiscoveryServiceServer(g, s)
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = g.Serve(lis)
	}()
	t.Cleanup(func() {
		g.Stop()
		<-served
	})
	return s
}

// Addr is the address the server listens on.
func (s *PushServer) Addr() string { return s.addr }

// StreamAggregatedResources implements the ADS service.
func (s *PushServer) StreamAggregatedResources(st discoveryv3.AggregatedDiscoveryService_StreamAggregatedResourcesServer) error {
	errc := make(chan error, 1)
	go func() {
		for {
			req, err := st.Recv()
			if err != nil {
				errc <- err
				return
			}
			select {
			case s.Requests <- req:
			default:
			}
		}
	}()
	for {
		select {
		case resp := <-s.Push:
			if err := st.Send(resp); err != nil {
				return err
			}
		case err := <-errc:
			return err
		}
	}
}
