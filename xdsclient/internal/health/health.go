// Package health is gRFC A57's account of one xDS server's health, as a
// function: Step takes what the client knows of the server (State) and one
// event (connectivity, a stream started, its first response, its end) and
// returns the new State and the Effects the client carries out (hooks, a
// server failure that may start fallback or reach the watchers, the
// does-not-exist timers, a log line). It knows nothing of gRPC streams,
// locks or watchers; health_test.go reads like A57.
//
//	event                                   server failure   watchers told   timers
//	channel reports TRANSIENT_FAILURE       yes              no (the stream's failure tells them)   stop
//	channel reports READY                                                    may run
//	channel leaves READY                                                     stop
//	stream created                          (connected again unless failed)  may run (only a READY channel makes one)
//	first response on the stream            over (healthy)
//	stream ends after a response            no                               stop
//	  ... by a keepalive timeout            yes              yes             stop
//	stream ends with no response            yes              yes             stop
//	  ... a delta stream resumed with the versions held: not a failure; the next stream asks for everything
//
// Timers run only while a stream is open on a channel seen READY: a
// subscription sent on that stream starts its timer (A57: "the first
// message subscribing to the resource has been sent on the stream" and
// "the xDS channel is reporting READY"). A stream exists only on a READY
// channel (gRPC creates one only once the channel has picked a ready
// connection), so its creation counts as READY even when the channel's
// own report of READY comes later.
package health

import (
	"errors"
	"fmt"
	"time"

	"google.golang.org/grpc/connectivity"

	"github.com/xdslens/xdslens/xdsclient/internal/xerr"
)

// State is what the client knows of one server.
type State struct {
	// Connectivity is the channel's last reported state, Known once it
	// reported one.
	Connectivity connectivity.State
	Known        bool
	// Ready: the channel is seen READY (it reported READY, or a stream was
	// created on it) and has reported no other state since.
	Ready bool
	// Stream is the current stream, 0 when there is none; Responded is set
	// once a response was read on it. Attempts counts streams created.
	Stream    uint64
	Responded bool
	Attempts  int
	// Failed: unhealthy since the last server failure, until a response.
	Failed bool
	// Connected is gRFC A78's grpc.xds_client.connected.
	Connected bool
	// Failure is the last server failure, nil once a response arrives:
	// the error of a resource that is wanted and not held.
	Failure error
	// StreamErr is how the last stream failed before any response, nil
	// once one had a response: part of a TRANSIENT_FAILURE's message.
	StreamErr error
	// Over delta: Resumed is the stream whose first requests carried the
	// versions held; FullResync asks the next stream to leave them out,
	// and NoVersions is that stream.
	Resumed    uint64
	FullResync bool
	NoVersions uint64
}

// TimersRun reports whether does-not-exist timers run: a stream is open on
// a channel seen READY.
func (s *State) TimersRun() bool { return s.Ready && s.Stream != 0 }

// SendVersions reports whether the first requests of stream id carry the
// versions held (delta's initial_resource_versions): not after a server
// failure, nor on a stream that follows a quiet resume. The server then
// sends everything again, which shows that it serves again and ends the
// errors its failure caused.
func (s *State) SendVersions(id uint64) bool { return !s.Failed && s.NoVersions != id }

// Kind is the kind of an Event.
type Kind uint8

// The events.
const (
	// Connectivity: the channel reports State.
	Connectivity Kind = iota + 1
	// StreamStarted: stream Stream was created.
	StreamStarted
	// StreamStartFailed: a stream could not be created (Err).
	StreamStartFailed
	// Response: the first response on the current stream was read.
	Response
	// Resumed: the first requests of the current stream carried the
	// versions held (delta).
	Resumed
	// StreamEnded: the current stream ended (Err, Cause).
	StreamEnded
)

// Cause classifies how a stream ended.
type Cause uint8

// The causes.
const (
	// CauseOther is any end not below.
	CauseOther Cause = iota
	// CauseKeepalive: the server left a keepalive ping unanswered.
	CauseKeepalive
	// CauseResponseTooLarge: a response over the client's limit.
	CauseResponseTooLarge
	// CauseRequestTooLarge: the server refused a request as too large.
	CauseRequestTooLarge
)

// Event is one event of a server.
type Event struct {
	Kind   Kind
	State  connectivity.State // Connectivity
	Stream uint64             // StreamStarted
	Err    error              // StreamStartFailed, StreamEnded
	Cause  Cause              // StreamEnded
	// Backoff is, for StreamStartFailed and StreamEnded, the wait before
	// the next stream, which the log line reports.
	Backoff time.Duration
}

// Log is the log line an event calls for.
type Log uint8

// The log lines.
const (
	LogNone Log = iota
	// LogKeepalive (warning): the server stopped answering pings.
	LogKeepalive
	// LogResponseTooLarge, LogRequestTooLarge (error): a stream that had
	// responses ended on a message too large; the client backs off.
	LogResponseTooLarge
	LogRequestTooLarge
	// LogEnded (debug): a stream ended after a response.
	LogEnded
	// LogQuietResume (debug): a resumed delta stream ended with no
	// response; the next asks for everything.
	LogQuietResume
	// LogFailed (warning): a stream failed before any response.
	LogFailed
	// LogFailedAgain (debug): so did the retry of a server not heard from
	// since its last failure, which was logged then.
	LogFailedAgain
)

// Effects are what an event asks the client to do.
type Effects struct {
	// ConnectivityChanged: report the new State.Connectivity.
	ConnectivityChanged bool
	// ConnectedChanged: report State.Connected (with Failure as the reason
	// when it is false).
	ConnectedChanged bool
	// ServerFailure: the server went from healthy to unhealthy (Failure).
	ServerFailure bool
	// Failure is a server failure, nil when there is none: each authority
	// whose server this is falls back if gRFC A71 says so; if Notify is
	// set, the watchers of the others are told.
	Failure error
	Notify  bool
	// StartTimers, StopTimers: the does-not-exist timers of the server may
	// run now (those of subscriptions sent on the current stream start),
	// or stop.
	StartTimers, StopTimers bool
	Log                     Log
}

// Step returns the state after ev and what ev asks the client to do.
func Step(s State, ev Event) (State, Effects) {
	var eff Effects
	timers := s.TimersRun()
	switch ev.Kind {
	case Connectivity:
		if s.Known && s.Connectivity == ev.State {
			return s, eff
		}
		s.Connectivity, s.Known = ev.State, true
		eff.ConnectivityChanged = true
		s.Ready = ev.State == connectivity.Ready
		if ev.State == connectivity.TransientFailure {
			// A connectivity error. Watchers hear of it from the stream,
			// which fails with the channel's reason as soon as the
			// channel is in TRANSIENT_FAILURE: telling them here too
			// would say the same thing twice.
			reason := "xDS channel reports TRANSIENT_FAILURE"
			if s.StreamErr != nil {
				reason += " (last ADS stream error: " + xerr.ShownErr(s.StreamErr) + ")"
			}
			fail(&s, &eff, errors.New(reason), false)
		}
	case StreamStarted:
		s.Attempts++
		s.Stream, s.Responded = ev.Stream, false
		if s.FullResync {
			s.NoVersions, s.FullResync = ev.Stream, false
		}
		s.Ready = true // only a READY channel creates a stream
		if !s.Failed {
			connected(&s, &eff, true)
		}
	case Response:
		if s.Responded {
			return s, eff
		}
		s.Responded, s.Failed = true, false
		s.StreamErr, s.Failure = nil, nil
		connected(&s, &eff, true)
	case Resumed:
		s.Resumed = s.Stream
	case StreamStartFailed, StreamEnded:
		started := ev.Kind == StreamEnded
		responded := started && s.Responded
		quietResume := started && !responded && s.Resumed != 0 && s.Resumed == s.Stream
		s.Stream, s.Responded = 0, false
		switch {
		case responded && ev.Cause == CauseKeepalive:
			// The connection died silently: a connectivity failure,
			// although the stream had responses.
			s.StreamErr = ev.Err
			eff.Log = LogKeepalive
			fail(&s, &eff, ev.Err, true)
		case responded && ev.Cause == CauseResponseTooLarge:
			eff.Log = LogResponseTooLarge
		case responded && ev.Cause == CauseRequestTooLarge:
			eff.Log = LogRequestTooLarge
		case responded:
			eff.Log = LogEnded // not an error: servers end streams (A9)
		case quietResume:
			// Nothing had changed, so the server rightly said nothing. Not
			// a failure (A57 presumes a server answers every stream); the
			// next stream asks for everything, and its end without a
			// response is one.
			eff.Log = LogQuietResume
			s.FullResync = true
		default:
			eff.Log = LogFailed
			if s.StreamErr != nil {
				eff.Log = LogFailedAgain
			}
			s.StreamErr = ev.Err
			fail(&s, &eff, fmt.Errorf("ADS stream failed before any response: %w", ev.Err), true)
		}
	}
	switch now := s.TimersRun(); {
	case now && !timers:
		eff.StartTimers = true
	case !now && timers:
		eff.StopTimers = true
	}
	return s, eff
}

// fail records a server failure.
func fail(s *State, eff *Effects, reason error, notify bool) {
	s.Failure = reason
	if !s.Failed {
		s.Failed = true
		eff.ServerFailure = true
	}
	connected(s, eff, false)
	eff.Failure, eff.Notify = reason, notify
}

func connected(s *State, eff *Effects, on bool) {
	if s.Connected != on {
		s.Connected = on
		eff.ConnectedChanged = true
	}
}
