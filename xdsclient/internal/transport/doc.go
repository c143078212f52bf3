// Package transport is a client's connection to one xDS server: its gRPC
// channel (credentials, keepalive, the response size limit), the channel's
// connectivity, and one ADS stream at a time, State of the World or
// incremental (delta), restarted with backoff after a failure.
//
// A Conn keeps what is subscribed on the server, per type, and frames the
// requests: over State of the World each request names every subscribed
// resource of its type, which the Handler gives (Requests: the client
// keeps its names once, in its cache); over delta it names what changed,
// and the first request of a type on a stream subscribes everything, with
// the versions held. It turns each response of either protocol into one Update, the
// same value whatever the protocol, with what a message may quote of the
// server (a version, a TP3 error's message) bounded where it enters the
// client, and hands it to its Handler, whose
// Result carries the ACK or NACK and the flow control: the Conn reads the
// next response only once the Result's Wait channel is closed.
//
//	Handler method   called when
//	Connectivity     the channel reports a new state
//	StreamStarted    a stream was created (its first requests follow)
//	Requests         requests are made: under the lock subscriptions change with, the names subscribed
//	Versions         the first delta request of a type is built: the versions held
//	Sending          a request is about to be written: the names it subscribes for the first time on the stream
//	Sent             a request was written
//	Response         a response was read (one Update)
//	StreamEnded      a stream ended, or could not be created
//
// The Handler's methods are called from the Conn's goroutines, one stream's
// at a time, never with the Conn's own lock held (Requests' build takes it,
// under the client's); the Conn's methods may be called from inside them,
// and under the client's lock (which is taken before the Conn's).
//
// Under the Conn is a Channel (channel.go): a stream opened, a request
// sent, a response received as its bytes, the channel's connectivity. The
// bytes of a response are the stream's until the Conn releases them, once
// the handler has taken the response: gRPC's are a buffer of its pool,
// reused for later messages, so what the handler keeps of them it copies.
// The client's Channel is gRPC's (DialGRPC, grpc.go); package
// transporttest has one in memory that a test drives, and that overwrites
// a response's bytes when they are released, so that the Conn's rules,
// and those of the layers above it, are tested each on its own, with no
// server and no network; the loopback tests of package xdsclient test
// them together.
package transport
