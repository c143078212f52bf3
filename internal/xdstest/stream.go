package xdstest

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"

	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/protobuf/proto"
)

// Stream is one ADS stream a client opened. Requests are buffered as they
// arrive, whether or not anyone reads them; nothing is dropped. Its methods
// are safe for concurrent use.
type Stream struct {
	gs discoveryv3.AggregatedDiscoveryService_StreamAggregatedResourcesServer

	mu      sync.Mutex
	reqs    []*discoveryv3.DiscoveryRequest // received and not yet read
	recvErr error                           // why the client's side ended
	changed signal                          // notified when reqs or recvErr change

	sendMu    sync.Mutex
	over      bool // the handler has returned or is about to
	sent      int
	lastNonce string

	endOnce sync.Once
	end     chan error
	done    chan struct{}
}

func newStream(gs discoveryv3.AggregatedDiscoveryService_StreamAggregatedResourcesServer) *Stream {
	return &Stream{
		gs:   gs,
		end:  make(chan error, 1),
		done: make(chan struct{}),
	}
}

// receive buffers the client's requests until its side of the stream ends.
func (st *Stream) receive() {
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
func (st *Stream) Recv(ctx context.Context) (*discoveryv3.DiscoveryRequest, error) {
	return st.take(ctx, "any type", func(*discoveryv3.DiscoveryRequest) bool { return true })
}

// RecvType returns the oldest request of typeURL not yet read, waiting as
// Recv does. Requests of other types stay buffered for later Recv and
// RecvType calls.
func (st *Stream) RecvType(ctx context.Context, typeURL string) (*discoveryv3.DiscoveryRequest, error) {
	return st.take(ctx, typeURL, func(r *discoveryv3.DiscoveryRequest) bool { return r.GetTypeUrl() == typeURL })
}

func (st *Stream) take(ctx context.Context, what string, match func(*discoveryv3.DiscoveryRequest) bool) (*discoveryv3.DiscoveryRequest, error) {
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
			return nil, err
		}
		select {
		case <-woken:
		case <-ctx.Done():
			return nil, fmt.Errorf("xdstest: waiting for a request (%s): %w", what, context.Cause(ctx))
		}
	}
}

// Send sends a copy of resp to the client. If resp has no nonce, the copy
// gets the number of responses sent on this stream so far, this one
// included: "1", "2", and so on. It fails once the stream is over.
func (st *Stream) Send(resp *discoveryv3.DiscoveryResponse) error {
	_, err := st.send(resp)
	return err
}

// send is Send, returning the copy it sent.
func (st *Stream) send(resp *discoveryv3.DiscoveryResponse) (*discoveryv3.DiscoveryResponse, error) {
	st.sendMu.Lock()
	defer st.sendMu.Unlock()
	if st.over {
		return nil, errors.New("xdstest: Send on a stream that is over")
	}
	out := proto.Clone(resp).(*discoveryv3.DiscoveryResponse)
	st.sent++
	if out.GetNonce() == "" {
		out.Nonce = strconv.Itoa(st.sent)
	}
	st.lastNonce = out.GetNonce()
	err := st.gs.Send(out)
	Notify()
	if err != nil {
		return nil, fmt.Errorf("xdstest: send %s version %q: %w", out.GetTypeUrl(), out.GetVersionInfo(), err)
	}
	return out, nil
}

// LastNonce returns the nonce of the last response sent, or "" if none was.
func (st *Stream) LastNonce() string {
	st.sendMu.Lock()
	defer st.sendMu.Unlock()
	return st.lastNonce
}

// End ends the stream with err as its status: a status.Error for a
// particular code, or nil for OK (any other error reaches the client as
// UNKNOWN). It returns once the server's side is over; the client sees the
// end shortly after. Ending a stream that is already over does nothing.
func (st *Stream) End(err error) {
	st.endOnce.Do(func() { st.end <- err })
	<-st.done
}

// Done returns a channel that is closed when the stream is over: ended by
// End, cancelled by the client, or cut by Stop.
func (st *Stream) Done() <-chan struct{} { return st.done }

// finish marks the stream over; the handler returns right after.
func (st *Stream) finish() {
	st.sendMu.Lock()
	st.over = true
	st.sendMu.Unlock()
	close(st.done)
	Notify()
}
