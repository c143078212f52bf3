package xdstest

import (
	"context"
	"testing"
	"time"

	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"

	"github.com/xdslens/xdslens/xdsclient"
	"github.com/xdslens/xdslens/xdsclient/xdsresource"
)

// Timeout is how long the helpers of this package wait for what a test
// expects before they fail it.
const Timeout = 10 * time.Second

// Context returns a context that ends after [Timeout] or when t ends,
// whichever comes first.
func Context(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), Timeout)
	t.Cleanup(cancel)
	return ctx
}

// Script is a test's side of the exchange between a client and Srv. Its
// methods wait for the client's streams and requests until Ctx ends, and
// fail T at once when what they wait for does not come or a response
// cannot be sent, so that a test reads as the script of the exchange:
//
//	s := xdstest.Script{T: t, Ctx: xdstest.Context(t), Srv: srv}
//	st := s.NextStream()
//	s.RecvType(st, listenerTypeURL)
//	s.Send(st, xdstest.Response(listenerTypeURL, "1", listener))
//
// Like T.Fatal, its methods must be called from the test's goroutine.
type Script struct {
	T testing.TB
	// Ctx bounds every wait. A test may replace it between two calls, to
	// give each step of a long test a deadline of its own.
	Ctx context.Context
	Srv *ADSServer
}

// NextStream returns the next ADS stream the client opened on Srv, as
// [ADSServer.NextStream] does.
func (s Script) NextStream() *Stream {
	s.T.Helper()
	return nextStream(s, s.Srv.NextStream)
}

// RecvType returns the oldest request of typeURL on st not yet read, as
// [Stream.RecvType] does.
func (s Script) RecvType(st *Stream, typeURL string) *discoveryv3.DiscoveryRequest {
	s.T.Helper()
	return recvType(s, st.flow, typeURL)
}

// Send sends resp on st, as [Stream.Send] does, and returns the response
// as it was sent: a copy of resp with its nonce, which the client's ACK or
// NACK of it carries.
func (s Script) Send(st *Stream, resp *discoveryv3.DiscoveryResponse) *discoveryv3.DiscoveryResponse {
	s.T.Helper()
	return send(s, st.flow, resp)
}

// WatchCluster has c watch the cluster name with a new Watcher (the watch
// ends with the test) and waits for the client's first ADS stream and its
// CDS request.
func (s Script) WatchCluster(c *xdsclient.Client, name string) (*Watcher, *Stream) {
	s.T.Helper()
	rec := NewWatcher()
	s.T.Cleanup(c.Watch(xdsresource.ClusterType, name, rec))
	st := s.NextStream()
	s.RecvType(st, xdsresource.ClusterType.TypeURL())
	return rec, st
}

// NextDeltaStream returns the next incremental ADS stream the client opened
// on Srv, as [ADSServer.NextDeltaStream] does.
func (s Script) NextDeltaStream() *DeltaStream {
	s.T.Helper()
	return nextStream(s, s.Srv.NextDeltaStream)
}

// RecvDelta returns the oldest request of typeURL on the delta stream st
// not yet read, as [DeltaStream.RecvType] does.
func (s Script) RecvDelta(st *DeltaStream, typeURL string) *discoveryv3.DeltaDiscoveryRequest {
	s.T.Helper()
	return recvType(s, st.flow, typeURL)
}

// SendDelta sends resp on the delta stream st and returns it as sent, with
// its nonce, as Send does.
func (s Script) SendDelta(st *DeltaStream, resp *discoveryv3.DeltaDiscoveryResponse) *discoveryv3.DeltaDiscoveryResponse {
	s.T.Helper()
	return send(s, st.flow, resp)
}

// nextStream returns the stream that next gives, failing s.T at once when
// none comes before s.Ctx ends.
func nextStream[T any](s Script, next func(context.Context) (*T, error)) *T {
	s.T.Helper()
	st, err := next(s.Ctx)
	if err != nil {
		s.T.Fatal(err)
	}
	return st
}

// recvType is RecvType and RecvDelta on either protocol's stream.
func recvType[Req, Resp message](s Script, st *flow[Req, Resp], typeURL string) Req {
	s.T.Helper()
	req, err := st.RecvType(s.Ctx, typeURL)
	if err != nil {
		s.T.Fatalf("waiting for a %s request on the %s stream: %v", typeURL, st.protocol, err)
	}
	return req
}

// send is Send and SendDelta on either protocol's stream.
func send[Req, Resp message](s Script, st *flow[Req, Resp], resp Resp) Resp {
	s.T.Helper()
	sent, err := st.send(resp)
	if err != nil {
		s.T.Fatalf("send: %v", err)
	}
	return sent
}
