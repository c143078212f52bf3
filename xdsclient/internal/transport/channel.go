package transport

import (
	"context"

	"google.golang.org/grpc/connectivity"
	"google.golang.org/protobuf/proto"
)

// Channel is the channel to one xDS server that a Conn runs its ADS
// streams on, and whose connectivity it follows: the seam between the
// Conn's rules (what each request says, when it goes out, what a stream's
// end costs) and gRPC. DialGRPC makes the client's; a test may give a
// Conn one of its own (Config.Dial).
type Channel interface {
	// NewStream opens an ADS stream: DeltaAggregatedResources if delta,
	// else StreamAggregatedResources. The stream ends when ctx is done.
	NewStream(ctx context.Context, delta bool) (Stream, error)
	// State returns the channel's connectivity state.
	State() connectivity.State
	// WaitForStateChange returns true once the state is other than s, or
	// false once ctx is done.
	WaitForStateChange(ctx context.Context, s connectivity.State) bool
	// Close closes the channel and ends its streams.
	Close()
}

// Stream is one ADS stream. Its methods are called from two goroutines
// at once, one sending and one receiving.
type Stream interface {
	// Send writes a request: a *discoveryv3.DiscoveryRequest on a State of
	// the World stream, a *discoveryv3.DeltaDiscoveryRequest on a delta
	// one. The request must not be modified once it is handed over.
	Send(req proto.Message) error
	// Recv reads the next response, as its serialized bytes (a
	// DiscoveryResponse or a DeltaDiscoveryResponse), which the Conn
	// parses (ParseSotW, ParseDelta), and release, which the Conn calls
	// once, when it no longer reads b (the handler has taken the
	// response): the stream may then reuse b's memory, as gRPC's does
	// its buffer. An error ends the stream; a gRPC status tells why (see
	// Cause).
	Recv() (b []byte, release func(), err error)
}

// Dialer makes the Channel to cfg.Server.
type Dialer func(cfg Config) (Channel, error)
