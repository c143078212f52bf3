package rpcstatus

import (
	"sync"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Unsettled holds the attempt of one RPC whose end gRPC-Go reported
// without a status, until what follows tells it (see the package doc). A
// is what the caller keeps of an attempt; its zero value is none. The
// zero Unsettled holds nothing, and its methods are safe for concurrent
// use: an attempt may end on another goroutine than the RPC's.
type Unsettled[A comparable] struct {
	mu      sync.Mutex
	attempt A // the zero A: none held
	ended   bool
	err     error // the RPC's, once ended
}

// ErrUnanswered and ErrStatusLost are the statuses of held attempts that
// another attempt followed: a transparent retry, or another.
var (
	ErrUnanswered = status.Error(codes.Unavailable, "the attempt's stream ended without an answer from the server")
	ErrStatusLost = status.Error(codes.Unknown, "gRPC-Go reported the attempt's end without its status")
)

// Superseded is the status of a held attempt that another attempt
// followed: ErrUnanswered when the server did not answer it (the new
// attempt is a transparent retry, or the held attempt received nothing),
// ErrStatusLost otherwise.
func Superseded(unanswered bool) error {
	if unanswered {
		return ErrUnanswered
	}
	return ErrStatusLost
}

// Hold keeps attempt a, which ended without an error before any response
// message, until its status is known. When the RPC has ended already, it
// keeps nothing and returns the RPC's error (nil for OK) and true: the
// status of a.
func (u *Unsettled[A]) Hold(a A) (error, bool) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.ended {
		return u.err, true
	}
	u.attempt = a
	return nil, false
}

// Next takes the attempt held, if any, when another attempt of the RPC
// begins, with its status (Superseded): the new attempt is a transparent
// retry when unanswered is set. The interceptors' retries take it before
// (Take).
func (u *Unsettled[A]) Next(unanswered bool) (A, error, bool) {
	a, ok := u.Take()
	return a, Superseded(unanswered), ok
}

// Take takes the attempt held, if any: when the channel's interceptors
// retry the RPC after it, its status has the code the retry was made
// for.
func (u *Unsettled[A]) Take() (A, bool) {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.takeLocked()
}

// End records that the RPC ended with err, and takes the attempt held, if
// any, whose status is err's.
func (u *Unsettled[A]) End(err error) (A, bool) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.ended, u.err = true, err
	return u.takeLocked()
}

func (u *Unsettled[A]) takeLocked() (A, bool) {
	var none A
	a := u.attempt
	u.attempt = none
	return a, a != none
}
