package health

import (
	"errors"
	"strings"
	"testing"

	"google.golang.org/grpc/connectivity"
)

var errStream = errors.New("stream broke")

// The rows follow gRFC A57's text, section by section: each starts from a
// state (a few events already applied), applies one event, and checks the
// effects and what the state then says.
func TestA57(t *testing.T) {
	var (
		ready     = Event{Kind: Connectivity, State: connectivity.Ready}
		idle      = Event{Kind: Connectivity, State: connectivity.Idle}
		tf        = Event{Kind: Connectivity, State: connectivity.TransientFailure}
		started   = Event{Kind: StreamStarted, Stream: 1}
		response  = Event{Kind: Response}
		resumed   = Event{Kind: Resumed}
		ended     = Event{Kind: StreamEnded, Err: errStream}
		keepalive = Event{Kind: StreamEnded, Err: errStream, Cause: CauseKeepalive}
		tooLarge  = Event{Kind: StreamEnded, Err: errStream, Cause: CauseResponseTooLarge}
		noStream  = Event{Kind: StreamStartFailed, Err: errStream}
	)
	type want struct {
		failure, notify, serverFailure bool
		start, stop                    bool
		connected                      bool
		timersRun                      bool
		log                            Log
	}
	for _, tc := range []struct {
		row    string
		before []Event
		ev     Event
		want   want
	}{
		// Handling ADS Stream Termination.
		{"the ADS stream is closed without ever having received a response: a connectivity error, reported to every watcher",
			[]Event{ready, started}, ended, want{failure: true, notify: true, serverFailure: true, stop: true, log: LogFailed}},
		{"... and the stream could not even be created: the same",
			[]Event{ready}, noStream, want{failure: true, notify: true, serverFailure: true, log: LogFailed}},
		{"... again, before any response: logged once (the retry at debug), no second server failure",
			[]Event{ready, started, ended, started}, ended, want{failure: true, notify: true, stop: true, log: LogFailedAgain}},
		{"the stream is closed after a response: not an error (the server may close it, A9)",
			[]Event{ready, started, response}, ended, want{stop: true, connected: true, log: LogEnded}},
		{"a response: the server is healthy again",
			[]Event{ready, started, ended, started}, response, want{connected: true, timersRun: true}},
		{"a response too large ends a stream that had responses: no failure, logged as an error (the client backs off)",
			[]Event{ready, started, response}, tooLarge, want{stop: true, connected: true, log: LogResponseTooLarge}},
		{"a keepalive ping left unanswered: the connection died silently, a connectivity error even after responses",
			[]Event{ready, started, response}, keepalive, want{failure: true, notify: true, serverFailure: true, stop: true, log: LogKeepalive}},
		{"a delta stream resumed with the versions held may end unanswered (nothing changed): not a failure",
			[]Event{ready, started, resumed}, ended, want{stop: true, connected: true, log: LogQuietResume}},

		// Handling Connectivity Failure.
		{"the channel reports TRANSIENT_FAILURE: a connectivity error; the watchers hear it from the stream's failure",
			[]Event{ready, started}, tf, want{failure: true, serverFailure: true, stop: true}},
		{"... while the server already failed: no second server failure",
			[]Event{ready, started, ended}, tf, want{failure: true}},

		// Handling Resources That Do Not Exist: the timer starts once the
		// subscription is sent on the stream and the channel is READY.
		{"the stream is created: timers may run for what it sends (a stream exists only on a READY channel)",
			nil, started, want{start: true, connected: true, timersRun: true}},
		{"... even when the channel's report of READY comes after the stream",
			[]Event{started}, ready, want{connected: true, timersRun: true}},
		{"the channel leaves READY (READY to IDLE): the timers stop",
			[]Event{ready, started}, idle, want{stop: true, connected: true}},
		{"... and reports READY again on the same stream: they start again",
			[]Event{ready, started, idle}, ready, want{start: true, connected: true, timersRun: true}},
		{"READY with no stream: nothing is sent yet, no timer runs",
			nil, ready, want{}},
	} {
		t.Run(tc.row, func(t *testing.T) {
			var s State
			for _, ev := range tc.before {
				s, _ = Step(s, ev)
			}
			s, eff := Step(s, tc.ev)
			got := want{
				failure: eff.Failure != nil, notify: eff.Notify, serverFailure: eff.ServerFailure,
				start: eff.StartTimers, stop: eff.StopTimers, connected: s.Connected, timersRun: s.TimersRun(), log: eff.Log,
			}
			if got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
			if eff.Failure != nil && s.Failure != eff.Failure {
				t.Errorf("state's failure %v, want the event's %v", s.Failure, eff.Failure)
			}
		})
	}
}

// The message of a TRANSIENT_FAILURE names the last stream's error; the
// failure ends with a response, and a new resource then hears of none.
func TestFailureMessageAndRecovery(t *testing.T) {
	var s State
	for _, ev := range []Event{{Kind: StreamStartFailed, Err: errStream}, {Kind: Connectivity, State: connectivity.TransientFailure}} {
		s, _ = Step(s, ev)
	}
	if msg := s.Failure.Error(); !strings.Contains(msg, "TRANSIENT_FAILURE") || !strings.Contains(msg, errStream.Error()) {
		t.Errorf("failure %q, want TRANSIENT_FAILURE and the stream's error", msg)
	}
	if !s.Failed || s.SendVersions(2) {
		t.Error("a failed server: versions sent on the next stream")
	}
	s, _ = Step(s, Event{Kind: StreamStarted, Stream: 2})
	s, eff := Step(s, Event{Kind: Response})
	if s.Failure != nil || s.Failed || !eff.ConnectedChanged || !s.Connected {
		t.Errorf("after a response: failure %v, failed %v, connected %v (changed %v)", s.Failure, s.Failed, s.Connected, eff.ConnectedChanged)
	}
}

// After a quiet resume the next stream asks for everything: its first
// requests carry no versions.
func TestQuietResumeAsksForEverything(t *testing.T) {
	var s State
	for _, ev := range []Event{{Kind: StreamStarted, Stream: 1}, {Kind: Resumed}, {Kind: StreamEnded, Err: errStream}, {Kind: StreamStarted, Stream: 2}} {
		s, _ = Step(s, ev)
	}
	if s.SendVersions(2) || !s.SendVersions(3) {
		t.Errorf("SendVersions(2) %v, (3) %v: want false, true", s.SendVersions(2), s.SendVersions(3))
	}
	s, eff := Step(s, Event{Kind: StreamEnded, Err: errStream})
	if eff.Failure == nil {
		t.Error("a stream that asked for everything and ended unanswered is not a failure")
	}
}
