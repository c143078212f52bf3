package xdstest

import (
	"context"
	"fmt"
	"strconv"
	"sync"

	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/protobuf/proto"
)

// Stream is one State of the World ADS stream a client opened. Requests
// are buffered as they arrive, whether or not anyone reads them; nothing is
// dropped. Its methods are safe for concurrent use.
type Stream struct {
	*flow[*discoveryv3.DiscoveryRequest, *discoveryv3.DiscoveryResponse]
}

// DeltaStream is one incremental ADS stream (DeltaAggregatedResources) a
// client opened; it works as [Stream] does, with delta messages. Its
// methods are safe for concurrent use.
type DeltaStream struct {
	*flow[*discoveryv3.DeltaDiscoveryRequest, *discoveryv3.DeltaDiscoveryResponse]
}

// message is what a flow reads of a request or a response.
type message interface {
	proto.Message
	GetTypeUrl() string
}

// grpcStream is the server side of an ADS stream of either protocol.
type grpcStream[Req, Resp message] interface {
	Recv() (Req, error)
	Send(Resp) error
}

// flow is an ADS stream of either protocol: Req are the client's requests,
// Resp the server's responses.
type flow[Req, Resp message] struct {
	gs       grpcStream[Req, Resp]
	nonceOf  func(Resp) *string // the response's nonce field
	protocol string             // for errors: "ADS" or "delta ADS"

	mu      sync.Mutex
	reqs    []Req  // received and not yet read
	recvErr error  // why the client's side ended
	changed signal // notified when reqs or recvErr change

	sendMu    sync.Mutex
	over      bool // the handler has returned or is about to
	sent      int
	lastNonce string

	endOnce sync.Once
	end     chan error
	done    chan struct{}
}

func newStream(gs discoveryv3.AggregatedDiscoveryService_StreamAggregatedResourcesServer) *Stream {
	return &Stream{newFlow[*discoveryv3.DiscoveryRequest](gs, "ADS",
		func(r *discoveryv3.DiscoveryResponse) *string { return &r.Nonce })}
}

func newDeltaStream(gs discoveryv3.AggregatedDiscoveryService_DeltaAggregatedResourcesServer) *DeltaStream {
	return &DeltaStream{newFlow[*discoveryv3.DeltaDiscoveryRequest](gs, "delta ADS",
		func(r *discoveryv3.DeltaDiscoveryResponse) *string { return &r.Nonce })}
}

func newFlow[Req, Resp message](gs grpcStream[Req, Resp], protocol string, nonceOf func(Resp) *string) *flow[Req, Resp] {
	return &flow[Req, Resp]{
		gs:       gs,
		nonceOf:  nonceOf,
		protocol: protocol,
		end:      make(chan error, 1),
		done:     make(chan struct{}),
	}
}

// receive buffers the client's requests until its side of the stream ends.
func (st *flow[Req, Resp]) receive() {
	for {
		req, err := st.gs.Recv()
		st.mu.Lock()
		if err != nil {
			st.recvErr = err
		} else {
			st.reqs = append(st.reqs, req)
		}
		st.mu.Unlock()
		st.changed.notify()
		Notify()
		if err != nil {
			return
		}
	}
}

// Recv returns the oldest request not yet read, waiting until one arrives
// or ctx ends. Once the client's side has ended and every request has been
// read, it returns the error that ended it: io.EOF after the client closed
// its side, otherwise the stream's status error.
func (st *flow[Req, Resp]) Recv(ctx context.Context) (Req, error) {
	return st.take(ctx, "any type", func(Req) bool { return true })
}

// RecvType returns the oldest request of typeURL not yet read, waiting as
// Recv does. Requests of other types stay buffered for later Recv and
// RecvType calls.
func (st *flow[Req, Resp]) RecvType(ctx context.Context, typeURL string) (Req, error) {
	return st.take(ctx, typeURL, func(r Req) bool { return r.GetTypeUrl() == typeURL })
}

func (st *flow[Req, Resp]) take(ctx context.Context, what string, match func(Req) bool) (Req, error) {
	var none Req
	for {
		woken := st.changed.wait()
		st.mu.Lock()
		for i, r := range st.reqs {
			if match(r) {
				st.reqs = append(st.reqs[:i:i], st.reqs[i+1:]...)
				st.mu.Unlock()
				return r, nil
			}
		}
		err := st.recvErr
		st.mu.Unlock()
		if err != nil {
			return none, err
		}
		select {
		case <-woken:
		case <-ctx.Done():
			return none, fmt.Errorf("xdstest: waiting for a %s request (%s): %w", st.protocol, what, context.Cause(ctx))
		}
	}
}

// Send sends a copy of resp to the client. If resp has no nonce, the copy
// gets the number of responses sent on this stream so far, this one
// included: "1", "2", and so on. It fails once the stream is over.
func (st *flow[Req, Resp]) Send(resp Resp) error {
	_, err := st.send(resp)
	return err
}

// send is Send, returning the copy it sent.
func (st *flow[Req, Resp]) send(resp Resp) (Resp, error) {
	var none Resp
	st.sendMu.Lock()
	defer st.sendMu.Unlock()
	if st.over {
		return none, fmt.Errorf("xdstest: Send on a %s stream that is over", st.protocol)
	}
	out := proto.Clone(resp).(Resp)
	st.sent++
	nonce := st.nonceOf(out)
	if *nonce == "" {
		*nonce = strconv.Itoa(st.sent)
	}
	st.lastNonce = *nonce
	err := st.gs.Send(out)
	Notify()
	if err != nil {
		return none, fmt.Errorf("xdstest: send %s response of %s, nonce %q: %w", st.protocol, out.GetTypeUrl(), *nonce, err)
	}
	return out, nil
}

// LastNonce returns the nonce of the last response sent, or "" if none was.
func (st *flow[Req, Resp]) LastNonce() string {
	st.sendMu.Lock()
	defer st.sendMu.Unlock()
	return st.lastNonce
}

// End ends the stream with err as its status: a status.Error for a
// particular code, or nil for OK (any other error reaches the client as
// UNKNOWN). It returns once the server's side is over; the client sees the
// end shortly after. Ending a stream that is already over does nothing.
func (st *flow[Req, Resp]) End(err error) {
	st.endOnce.Do(func() { st.end <- err })
	<-st.done
}

// Done returns a channel that is closed when the stream is over: ended by
// End, cancelled by the client, or cut by Stop.
func (st *flow[Req, Resp]) Done() <-chan struct{} { return st.done }

// finish marks the stream over; the handler returns right after.
func (st *flow[Req, Resp]) finish() {
	st.sendMu.Lock()
	st.over = true
	st.sendMu.Unlock()
	close(st.done)
	Notify()
}
