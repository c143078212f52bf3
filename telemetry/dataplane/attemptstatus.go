package dataplane

import (
	"sync"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// An attempt's status, as the attempt metrics and spans give it, is the
// status the attempt ended with (gRFC A66, A72). gRPC-Go (seen in v1.85.0)
// does not always report it: when the server's answer closes a stream
// before the client has written a request message to it (a server that
// answers an unknown method, or rejects an RPC on its headers alone, with
// Trailers-Only), the write fails with io.EOF, and the attempt is ended
// while the RPC has not committed (clientStream.retryLocked calls
// csAttempt.finish with that io.EOF), with a stats.End whose Error is nil,
// as for success. The status, which the transport holds, reaches no stats
// handler: stats.InTrailer and End.Trailer leave grpc-status out.
//
// Such an attempt has received no response message: one that has received
// a message has committed its RPC, and gRPC-Go ends it with its status. So
// an attempt that ends without an error before any response message is
// held, unsettled, until what follows tells its status:
//
//   - the RPC ends: the attempt was its last, and its status is the RPC's
//     (OK for a streaming RPC that ended well without a response message);
//   - xdslens retries the RPC (xdsgrpc.Hooks.Retried): the code of the
//     retried attempt;
//   - gRPC-Go begins another attempt as a transparent retry: gRPC-Go
//     retries transparently only a stream that the server did not
//     process, and ends those with UNAVAILABLE (a GOAWAY that left the
//     stream out, or RST_STREAM REFUSED_STREAM);
//   - another attempt begins otherwise (an interceptor of the caller's,
//     inside xdslens's, made it): the status is lost, and the attempt is
//     recorded UNKNOWN, not OK.
//
// An attempt that ends with an error, or after a response message, is
// recorded when it ends, as before: the held path costs one lock and
// allocates nothing.
type unsettled[A comparable] struct {
	mu      sync.Mutex
	attempt A // the zero A: none held
	ended   bool
	err     error // the RPC's, once ended
}

// errUnprocessed and errStatusLost are the statuses of held attempts that
// another attempt followed: transparently, or otherwise.
var (
	errUnprocessed = status.Error(codes.Unavailable, "the server did not process the attempt's stream; gRPC retried it transparently")
	errStatusLost  = status.Error(codes.Unknown, "gRPC-Go reported the attempt's end without its status")
)

// hold keeps attempt a, which ended without an error before any response
// message, until its status is known. When the RPC has ended already, it
// keeps nothing and returns the RPC's error (nil for OK) and true: the
// status of a.
func (u *unsettled[A]) hold(a A) (error, bool) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.ended {
		return u.err, true
	}
	u.attempt = a
	return nil, false
}

// next takes the attempt held, if any, when another attempt of the RPC
// begins, with its status: UNAVAILABLE when the new one is a transparent
// retry, UNKNOWN otherwise. xdslens's retries take it before (retried).
func (u *unsettled[A]) next(transparent bool) (A, error, bool) {
	a, ok := u.take()
	if transparent {
		return a, errUnprocessed, ok
	}
	return a, errStatusLost, ok
}

// retried takes the attempt held, if any, when xdslens retries the RPC
// after it: its status has the code the retry was made for.
func (u *unsettled[A]) retried() (A, bool) { return u.take() }

// end records that the RPC ended with err, and takes the attempt held, if
// any, whose status is err's.
func (u *unsettled[A]) end(err error) (A, bool) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.ended, u.err = true, err
	return u.takeLocked()
}

func (u *unsettled[A]) take() (A, bool) {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.takeLocked()
}

func (u *unsettled[A]) takeLocked() (A, bool) {
	var none A
	a := u.attempt
	u.attempt = none
	return a, a != none
}
