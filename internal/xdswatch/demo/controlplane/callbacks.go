package controlplane

import (
	"context"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/envoyproxy/go-control-plane/pkg/server/delta/v3"
	"github.com/envoyproxy/go-control-plane/pkg/server/sotw/v3"
)

// Callbacks observes a [Server]. It is go-control-plane's server
// callbacks interface without the REST fetch hooks, which this server does
// not serve; a serverv3.Callbacks value satisfies it. Callbacks run
// synchronously on the stream's goroutine, so they must not block.
type Callbacks interface {
	sotw.Callbacks
	delta.Callbacks
}

// CallbackFuncs implements [Callbacks] with optional functions: a nil field
// does nothing. Stream IDs are assigned by go-control-plane and are unique
// per protocol variant (State of the World or delta) within one server.
type CallbackFuncs struct {
	// StreamOpen runs when a State of the World ADS stream opens; typeURL
	// is empty for ADS. An error ends the stream.
	StreamOpen func(ctx context.Context, streamID int64, typeURL string) error
	// StreamClosed runs when a State of the World stream ends, with the
	// node the client announced (nil if it sent none).
	StreamClosed func(streamID int64, node *corev3.Node)
	// StreamRequest runs for every State of the World request, before the
	// server acts on it. An error ends the stream.
	StreamRequest func(streamID int64, req *discoveryv3.DiscoveryRequest) error
	// StreamResponse runs just before a State of the World response is
	// sent; resp already carries its nonce.
	StreamResponse func(ctx context.Context, streamID int64, req *discoveryv3.DiscoveryRequest, resp *discoveryv3.DiscoveryResponse)
	// DeltaStreamOpen runs when a delta ADS stream opens. An error ends
	// the stream.
	DeltaStreamOpen func(ctx context.Context, streamID int64, typeURL string) error
	// DeltaStreamClosed runs when a delta stream ends.
	DeltaStreamClosed func(streamID int64, node *corev3.Node)
	// DeltaRequest runs for every delta request, before the server acts on
	// it. An error ends the stream.
	DeltaRequest func(streamID int64, req *discoveryv3.DeltaDiscoveryRequest) error
	// DeltaResponse runs just before a delta response is sent.
	DeltaResponse func(streamID int64, req *discoveryv3.DeltaDiscoveryRequest, resp *discoveryv3.DeltaDiscoveryResponse)
}

var _ Callbacks = CallbackFuncs{}

// OnStreamOpen calls StreamOpen if set.
func (f CallbackFuncs) OnStreamOpen(ctx context.Context, id int64, typeURL string) error {
	if f.StreamOpen != nil {
		return f.StreamOpen(ctx, id, typeURL)
	}
	return nil
}

// OnStreamClosed calls StreamClosed if set.
func (f CallbackFuncs) OnStreamClosed(id int64, node *corev3.Node) {
	if f.StreamClosed != nil {
		f.StreamClosed(id, node)
	}
}

// OnStreamRequest calls StreamRequest if set.
func (f CallbackFuncs) OnStreamRequest(id int64, req *discoveryv3.DiscoveryRequest) error {
	if f.StreamRequest != nil {
		return f.StreamRequest(id, req)
	}
	return nil
}

// OnStreamResponse calls StreamResponse if set.
func (f CallbackFuncs) OnStreamResponse(ctx context.Context, id int64, req *discoveryv3.DiscoveryRequest, resp *discoveryv3.DiscoveryResponse) {
	if f.StreamResponse != nil {
		f.StreamResponse(ctx, id, req, resp)
	}
}

// OnDeltaStreamOpen calls DeltaStreamOpen if set.
func (f CallbackFuncs) OnDeltaStreamOpen(ctx context.Context, id int64, typeURL string) error {
	if f.DeltaStreamOpen != nil {
		return f.DeltaStreamOpen(ctx, id, typeURL)
	}
	return nil
}

// OnDeltaStreamClosed calls DeltaStreamClosed if set.
func (f CallbackFuncs) OnDeltaStreamClosed(id int64, node *corev3.Node) {
	if f.DeltaStreamClosed != nil {
		f.DeltaStreamClosed(id, node)
	}
}

// OnStreamDeltaRequest calls DeltaRequest if set.
func (f CallbackFuncs) OnStreamDeltaRequest(id int64, req *discoveryv3.DeltaDiscoveryRequest) error {
	if f.DeltaRequest != nil {
		return f.DeltaRequest(id, req)
	}
	return nil
}

// OnStreamDeltaResponse calls DeltaResponse if set.
func (f CallbackFuncs) OnStreamDeltaResponse(id int64, req *discoveryv3.DeltaDiscoveryRequest, resp *discoveryv3.DeltaDiscoveryResponse) {
	if f.DeltaResponse != nil {
		f.DeltaResponse(id, req, resp)
	}
}

// serverCallbacks is what go-control-plane calls: it gives every node its
// default configuration on first sight, then fans out to the user's
// callbacks.
type serverCallbacks struct {
	s    *Server
	user []Callbacks
}

func (c serverCallbacks) OnStreamOpen(ctx context.Context, id int64, typeURL string) error {
	for _, u := range c.user {
		if err := u.OnStreamOpen(ctx, id, typeURL); err != nil {
			return err
		}
	}
	return nil
}

func (c serverCallbacks) OnStreamClosed(id int64, node *corev3.Node) {
	for _, u := range c.user {
		u.OnStreamClosed(id, node)
	}
}

func (c serverCallbacks) OnStreamRequest(id int64, req *discoveryv3.DiscoveryRequest) error {
	if req.GetNode() != nil {
		c.s.sawNode(req.GetNode().GetId())
	}
	for _, u := range c.user {
		if err := u.OnStreamRequest(id, req); err != nil {
			return err
		}
	}
	return nil
}

func (c serverCallbacks) OnStreamResponse(ctx context.Context, id int64, req *discoveryv3.DiscoveryRequest, resp *discoveryv3.DiscoveryResponse) {
	for _, u := range c.user {
		u.OnStreamResponse(ctx, id, req, resp)
	}
}

func (c serverCallbacks) OnDeltaStreamOpen(ctx context.Context, id int64, typeURL string) error {
	for _, u := range c.user {
		if err := u.OnDeltaStreamOpen(ctx, id, typeURL); err != nil {
			return err
		}
	}
	return nil
}

func (c serverCallbacks) OnDeltaStreamClosed(id int64, node *corev3.Node) {
	for _, u := range c.user {
		u.OnDeltaStreamClosed(id, node)
	}
}

func (c serverCallbacks) OnStreamDeltaRequest(id int64, req *discoveryv3.DeltaDiscoveryRequest) error {
	// Delta requests carry the node only on the first request of a stream,
	// which is the one that matters here.
	if req.GetNode() != nil {
		c.s.sawNode(req.GetNode().GetId())
	}
	for _, u := range c.user {
		if err := u.OnStreamDeltaRequest(id, req); err != nil {
			return err
		}
	}
	return nil
}

func (c serverCallbacks) OnStreamDeltaResponse(id int64, req *discoveryv3.DeltaDiscoveryRequest, resp *discoveryv3.DeltaDiscoveryResponse) {
	for _, u := range c.user {
		u.OnStreamDeltaResponse(id, req, resp)
	}
}
