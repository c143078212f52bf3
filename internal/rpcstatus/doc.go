// Package rpcstatus tells the interceptors of a channel the status each
// RPC ended with, and each of its attempts, including the attempts that
// gRPC-Go ends without their status.
//
// # The attempts gRPC-Go ends without a status
//
// gRPC-Go (seen in v1.85.0) does not always report the status of an
// attempt: when the server's answer closes a stream before the client has
// written a request message to it (a server that answers an unknown
// method, or rejects an RPC on its headers alone, with Trailers-Only), the
// write fails with io.EOF, and the attempt is ended while the RPC has not
// committed (clientStream.retryLocked calls csAttempt.finish with that
// io.EOF), as for success: the stats.End of the attempt has no Error, and
// the balancer.DoneInfo that its pick's Done gets has no Err. The status,
// which the transport holds, reaches neither: stats.InTrailer, End.Trailer
// and DoneInfo.Trailer leave grpc-status out. The caller gets it from
// RecvMsg, as the RPC's.
//
// Such an attempt has received no response message: one that has
// received a message has committed its RPC, and gRPC-Go ends it with its
// status. What else an observer sees of it does not tell it from an
// attempt that ended well: DoneInfo.BytesReceived is set by the answer's
// headers alone, and the Trailer and ServerLoad come with any answer. So
// an attempt that ends without an error, before any response message
// where the observer can tell, is held (Unsettled), until what follows
// tells its status:
//
//   - the RPC ends: the attempt was its last, and its status is the RPC's
//     (OK for a streaming RPC that ended well without a response message);
//   - the channel's interceptors retry the RPC (gRFC A44): the status of
//     the attempt is the one the retry was made for;
//   - gRPC-Go begins another attempt as a transparent retry: gRPC-Go
//     retries transparently only a stream that the server did not answer,
//     and such an attempt ended UNAVAILABLE (a GOAWAY that left the stream
//     out, or RST_STREAM REFUSED_STREAM);
//   - another attempt begins otherwise (an interceptor inside the
//     channel's made it): the status is lost, and the attempt counts as
//     UNKNOWN, not OK.
//
// An attempt that ends with an error, or after a response message, is
// settled when it ends. Holding costs one lock and allocates nothing.
//
// The end of a streaming RPC is what WatchEnd sees of its stream: the
// error of RecvMsg or Header, or the one response of a stream whose
// server does not stream, or the end of its context.
package rpcstatus
