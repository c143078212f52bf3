package cache

import (
	"testing"

	"google.golang.org/grpc/codes"
)

// The state machine alone, with no gRPC: each row is a row of gRFC A88's
// "Summary of Behavior Changes" table (the "New Behavior" column), or one of
// the cases around it (recovery, legacy mode, repeats).
func TestTransitionTable(t *testing.T) {
	var (
		requested    = entryState{state: StateRequested}
		acked        = entryState{state: StateACKed, cached: true}
		nackedCached = entryState{state: StateNACKed, cached: true}
		nacked       = entryState{state: StateNACKed}
		fode         = features{failOnDataErrors: true}
		none         = features{}
		legacy       = features{legacy: true}
	)
	type want struct {
		state   State
		cached  bool
		notify  notifyEffect
		code    codes.Code
		failure failureEffect
	}
	for _, tc := range []struct {
		row  string
		from entryState
		ev   event
		f    features
		want want
	}{
		// A88 table, in its order.
		{"channel TRANSIENT_FAILURE / stream failed, not cached", requested, event{kind: evUnreachable}, none,
			want{StateRequested, false, notifyError, codes.Unavailable, keepFailure}},
		{"channel TRANSIENT_FAILURE / stream failed, cached", acked, event{kind: evUnreachable}, fode,
			want{StateACKed, true, notifyAmbient, codes.Unavailable, keepFailure}},
		{"NACK, not cached", requested, event{kind: evInvalid}, fode,
			want{StateNACKed, false, notifyError, codes.InvalidArgument, recordFailure}},
		{"NACK, cached", acked, event{kind: evInvalid}, none,
			want{StateNACKed, true, notifyAmbient, codes.InvalidArgument, recordFailure}},
		{"NACK, cached, fail_on_data_errors", acked, event{kind: evInvalid}, fode,
			want{StateNACKed, false, notifyError, codes.InvalidArgument, recordFailure}},
		{"resource timeout", requested, event{kind: evTimer}, none,
			want{StateDoesNotExist, false, notifyError, codes.NotFound, recordFailure}},
		{"resource timeout, resource_timer_is_transient_error", requested, event{kind: evTimer}, features{transientTimer: true},
			want{StateTimeout, false, notifyError, codes.Unavailable, recordFailure}},
		{"LDS/CDS deletion, cached", acked, event{kind: evDeletion}, none,
			want{StateDoesNotExist, true, notifyAmbient, codes.NotFound, recordFailure}},
		{"LDS/CDS deletion, cached, fail_on_data_errors", acked, event{kind: evDeletion}, fode,
			want{StateDoesNotExist, false, notifyError, codes.NotFound, recordFailure}},
		{"TP3 NOT_FOUND, not cached", requested, event{kind: evServerError, code: codes.NotFound}, fode,
			want{StateReceivedError, false, notifyError, codes.NotFound, recordFailure}},
		{"TP3 PERMISSION_DENIED, cached", acked, event{kind: evServerError, code: codes.PermissionDenied}, none,
			want{StateReceivedError, true, notifyAmbient, codes.PermissionDenied, recordFailure}},
		{"TP3 NOT_FOUND, cached, fail_on_data_errors", acked, event{kind: evServerError, code: codes.NotFound}, fode,
			want{StateReceivedError, false, notifyError, codes.NotFound, recordFailure}},
		{"TP3 other status, not cached", requested, event{kind: evServerError, code: codes.Internal}, none,
			want{StateReceivedError, false, notifyError, codes.Internal, recordFailure}},
		{"TP3 other status, cached, fail_on_data_errors", acked, event{kind: evServerError, code: codes.Unavailable}, fode,
			want{StateReceivedError, true, notifyAmbient, codes.Unavailable, recordFailure}},

		// Around the table.
		{"valid, new", requested, event{kind: evValid}, none,
			want{StateACKed, true, notifyResource, codes.OK, clearFailure}},
		{"valid, changed after a NACK", nackedCached, event{kind: evValid}, none,
			want{StateACKed, true, notifyResource, codes.OK, clearFailure}},
		{"valid, unchanged after a NACK: the error is over", nackedCached, event{kind: evValid, unchanged: true}, none,
			want{StateACKed, true, notifyCleared, codes.OK, clearFailure}},
		{"valid, unchanged while ACKED: a failure may be over", acked, event{kind: evValid, unchanged: true}, none,
			want{StateACKed, true, notifyCleared, codes.OK, clearFailure}},
		{"the same invalid bytes again: recorded, nobody told", nacked, event{kind: evInvalid, sameBytes: true}, none,
			want{StateNACKed, false, notifyNone, codes.InvalidArgument, recordFailure}},
		{"timer after an answer: nothing", nacked, event{kind: evTimer}, none,
			want{StateNACKed, false, notifyNone, codes.OK, keepFailure}},
		{"legacy: NACK, cached, fail_on_data_errors not used", acked, event{kind: evInvalid}, features{legacy: true, failOnDataErrors: true},
			want{StateNACKed, true, notifyAmbient, codes.InvalidArgument, recordFailure}},
		{"legacy: deletion drops", acked, event{kind: evDeletion}, legacy,
			want{StateDoesNotExist, false, notifyError, codes.NotFound, recordFailure}},
		{"legacy: deletion ignored (gRFC A53)", acked, event{kind: evDeletion}, features{legacy: true, ignoreDeletion: true},
			want{StateACKed, true, notifyNone, codes.OK, keepFailure}},
		{"A88 ignores ignore_resource_deletion", acked, event{kind: evDeletion}, features{ignoreDeletion: true},
			want{StateDoesNotExist, true, notifyAmbient, codes.NotFound, recordFailure}},
		// Delta: removed_resources is a deletion of any type, handled as
		// A88 handles an LDS/CDS deletion; a name never received is gone
		// at once.
		{"delta removal, cached", acked, event{kind: evDeletion, explicit: true}, none,
			want{StateDoesNotExist, true, notifyAmbient, codes.NotFound, recordFailure}},
		{"delta removal, cached, fail_on_data_errors", acked, event{kind: evDeletion, explicit: true}, fode,
			want{StateDoesNotExist, false, notifyError, codes.NotFound, recordFailure}},
		{"delta removal, never received", requested, event{kind: evDeletion, explicit: true}, none,
			want{StateDoesNotExist, false, notifyError, codes.NotFound, recordFailure}},
		{"delta removal, after a NACK of the only version", nacked, event{kind: evDeletion, explicit: true}, none,
			want{StateDoesNotExist, false, notifyError, codes.NotFound, recordFailure}},
		{"delta removal again: nothing new", entryState{state: StateDoesNotExist}, event{kind: evDeletion, explicit: true}, none,
			want{StateDoesNotExist, false, notifyNone, codes.OK, keepFailure}},
		{"full state absence of a name never received: nothing", requested, event{kind: evDeletion}, none,
			want{StateRequested, false, notifyNone, codes.OK, keepFailure}},
		{"full state absence after a deletion: nothing new", entryState{state: StateDoesNotExist, cached: true}, event{kind: evDeletion}, none,
			want{StateDoesNotExist, true, notifyNone, codes.OK, keepFailure}},
		{"full state absence of a resource with a TP3 error: the error stays (sent once, kept)", entryState{state: StateReceivedError, cached: true}, event{kind: evDeletion}, none,
			want{StateReceivedError, true, notifyNone, codes.OK, keepFailure}},
		{"legacy: delta removal drops", acked, event{kind: evDeletion, explicit: true}, legacy,
			want{StateDoesNotExist, false, notifyError, codes.NotFound, recordFailure}},
		{"legacy: transient timer not used", requested, event{kind: evTimer}, features{legacy: true, transientTimer: true},
			want{StateDoesNotExist, false, notifyError, codes.NotFound, recordFailure}},
	} {
		t.Run(tc.row, func(t *testing.T) {
			o := transition(tc.from, tc.ev, tc.f)
			got := want{o.state, o.cachedAfter(tc.from.cached), o.notify, o.errCode, o.failure}
			if got != tc.want {
				t.Errorf("transition = %+v, want %+v", got, tc.want)
			}
		})
	}
}

// The A53 flag and its two log lines.
func TestTransitionIgnoredDeletion(t *testing.T) {
	f := features{legacy: true, ignoreDeletion: true}
	o := transition(entryState{state: StateACKed, cached: true}, event{kind: evDeletion}, f)
	if !o.deletionIgnored || !o.logIgnored {
		t.Fatalf("first ignored deletion: %+v, want the flag set and the WARNING", o)
	}
	o = transition(entryState{state: StateACKed, cached: true, deletionIgnored: true}, event{kind: evDeletion}, f)
	if !o.deletionIgnored || o.logIgnored {
		t.Fatalf("second ignored deletion: %+v, want the flag kept and no second WARNING", o)
	}
	o = transition(entryState{state: StateACKed, cached: true, deletionIgnored: true}, event{kind: evValid, unchanged: true}, f)
	if o.deletionIgnored || !o.logUnignored {
		t.Fatalf("resource back: %+v, want the flag cleared and the INFO line", o)
	}
}

// Every event that carries something from the server stops the timer; the
// others do not.
func TestTransitionStopsTimer(t *testing.T) {
	for _, ev := range []event{{kind: evValid}, {kind: evInvalid}, {kind: evServerError, code: codes.Internal}, {kind: evDeletion, explicit: true}} {
		if !transition(entryState{state: StateRequested}, ev, features{}).stopTimer {
			t.Errorf("%+v does not stop the timer", ev)
		}
	}
	for _, ev := range []event{{kind: evUnreachable}, {kind: evTimer}, {kind: evDeletion}} {
		if transition(entryState{state: StateRequested}, ev, features{}).stopTimer {
			t.Errorf("%+v stops the timer", ev)
		}
	}
}

// What a watcher that joins hears (gRFC A88: a new watcher gets the
// resource, then the ambient error in force; or the error that stands for
// the resource), and when a subscription sent starts the timer (gRFC A57:
// only while nothing was received).
func TestTransitionJoinAndSent(t *testing.T) {
	for _, tc := range []struct {
		row        string
		from       entryState
		serverDown bool
		want       joinEffect
	}{
		{"nothing received, server fine: nothing yet", entryState{state: StateRequested}, false, joinEffect{}},
		{"nothing received, server down: its failure", entryState{state: StateRequested}, true, joinEffect{err: joinServerError}},
		{"held: the resource", entryState{state: StateACKed, cached: true}, false, joinEffect{resource: true}},
		{"held, server down: the resource, then its failure as ambient", entryState{state: StateACKed, cached: true}, true, joinEffect{resource: true, err: joinServerError}},
		{"NACKed but held: the resource, then the NACK", entryState{state: StateNACKed, cached: true}, true, joinEffect{resource: true, err: joinEntryError}},
		{"NACKed, nothing held: the NACK", entryState{state: StateNACKed}, false, joinEffect{err: joinEntryError}},
		{"does not exist: NOT_FOUND", entryState{state: StateDoesNotExist}, true, joinEffect{err: joinEntryError}},
		{"timeout: its error", entryState{state: StateTimeout}, false, joinEffect{err: joinEntryError}},
		{"TP3 error, held: the resource, then the error", entryState{state: StateReceivedError, cached: true}, false, joinEffect{resource: true, err: joinEntryError}},
	} {
		if got := transition(tc.from, event{kind: evWatch, serverDown: tc.serverDown}, features{}).join; got != tc.want {
			t.Errorf("%s: join %+v, want %+v", tc.row, got, tc.want)
		}
	}
	for _, s := range []State{StateRequested, StateACKed, StateNACKed, StateDoesNotExist, StateReceivedError, StateTimeout} {
		if got, want := transition(entryState{state: s}, event{kind: evSent}, features{}).startTimer, s == StateRequested; got != want {
			t.Errorf("subscription sent in %v: timer starts %v, want %v", s, got, want)
		}
	}
}

// An event that changes nothing has exactly the outcome unchanged: a full
// state's absences are kept to be carried out only when theirs is another
// (decide), so an outcome that does something must never equal it.
func TestTransitionUnchanged(t *testing.T) {
	ignored := entryState{state: StateACKed, cached: true, deletionIgnored: true}
	for _, tc := range []struct {
		row     string
		from    entryState
		ev      event
		f       features
		nothing bool
	}{
		{"absence of a name never received", entryState{state: StateRequested}, event{kind: evDeletion}, features{}, true},
		{"absence after a deletion", entryState{state: StateDoesNotExist, cached: true}, event{kind: evDeletion}, features{}, true},
		{"absence of a resource with a TP3 error", entryState{state: StateReceivedError, cached: true}, event{kind: evDeletion}, features{}, true},
		{"absence whose deletion is ignored already (A53)", ignored, event{kind: evDeletion}, features{legacy: true, ignoreDeletion: true}, true},
		{"delta removal again", entryState{state: StateDoesNotExist}, event{kind: evDeletion, explicit: true}, features{}, true},
		{"timer of a resource received", entryState{state: StateACKed, cached: true}, event{kind: evTimer}, features{}, true},
		{"subscription sent for a resource received", entryState{state: StateACKed, cached: true}, event{kind: evSent}, features{}, true},
		{"absence of a resource held", entryState{state: StateACKed, cached: true}, event{kind: evDeletion}, features{}, false},
		{"absence of a resource held, first ignored (A53)", entryState{state: StateACKed, cached: true}, event{kind: evDeletion}, features{legacy: true, ignoreDeletion: true}, false},
		{"absence of a resource held, fail_on_data_errors", entryState{state: StateNACKed, cached: true}, event{kind: evDeletion}, features{failOnDataErrors: true}, false},
		{"the same invalid bytes again", entryState{state: StateNACKed}, event{kind: evInvalid, sameBytes: true}, features{}, false},
		{"the resource again, unchanged", ignored, event{kind: evValid, unchanged: true}, features{legacy: true, ignoreDeletion: true}, false},
		{"subscription sent, nothing received", entryState{state: StateRequested}, event{kind: evSent}, features{}, false},
		{"server unreachable", entryState{state: StateACKed, cached: true}, event{kind: evUnreachable}, features{}, false},
	} {
		if got := transition(tc.from, tc.ev, tc.f) == unchanged(tc.from); got != tc.nothing {
			t.Errorf("%s: outcome unchanged %v, want %v", tc.row, got, tc.nothing)
		}
	}
}
