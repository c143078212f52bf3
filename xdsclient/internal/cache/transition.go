package cache

import "google.golang.org/grpc/codes"

// The behaviour of a cache entry under gRFCs A88, A57 and A53 is one
// function, transition: an event and the entry's state in, the entry's new
// state and the effects out. It knows nothing of gRPC, locks, watchers or
// hooks. A response has every event of it decided (response.go) before
// any is carried out; carryOut (apply.go) carries an outcome out, and
// everything an observer sees (watcher callbacks, StateChanged, CSDS,
// metrics) comes from that one place: what a response, a timer or a
// server failure does, what a new watcher hears, whether a subscription
// sent starts the does-not-exist timer. transition_test.go checks it row
// by row against A88's "Summary of Behavior Changes" table.

// eventKind is what happened to one cache entry.
type eventKind uint8

const (
	// evValid: a response carried the resource, valid. unchanged is set
	// when its bytes equal the held ones, from the same server.
	evValid eventKind = iota + 1
	// evInvalid: a response carried the resource and it failed validation
	// (the client NACKs it). sameBytes is set when the bytes equal those
	// of the NACK the entry already carries.
	evInvalid
	// evServerError: the server sent an xRFC TP3 error for the resource,
	// with code.
	evServerError
	// evDeletion: a full-state (LDS, CDS) response left out a resource
	// that is held, or, with explicit set, a delta response named the
	// resource (of any type) in removed_resources.
	evDeletion
	// evTimer: the does-not-exist timer fired while nothing was received.
	evTimer
	// evUnreachable: the server the entry uses failed (gRFC A57: channel
	// TRANSIENT_FAILURE, or an ADS stream that ended with no response) and
	// no fallback server took over.
	evUnreachable
	// evSent: the subscription went out on a stream of the server in use,
	// which is seen READY (gRFC A57): the does-not-exist timer may start.
	evSent
	// evWatch: a watcher joins the entry. serverDown is set when the
	// server in use failed and has not answered since.
	evWatch
)

// event is one event of a cache entry.
type event struct {
	kind       eventKind
	unchanged  bool       // evValid
	sameBytes  bool       // evInvalid
	explicit   bool       // evDeletion: the server named the resource as removed
	code       codes.Code // evServerError
	serverDown bool       // evWatch
}

// absence reports whether ev is the absence of a resource from a full
// state (a deletion the server did not name).
func (ev event) absence() bool { return ev.kind == evDeletion && !ev.explicit }

// features are what decides between behaviours: the data error handling
// mode and the server features of the server the entry uses.
type features struct {
	legacy           bool // GRPC_EXPERIMENTAL_XDS_DATA_ERROR_HANDLING=false
	failOnDataErrors bool // fail_on_data_errors (ignored in legacy mode)
	ignoreDeletion   bool // ignore_resource_deletion (legacy mode only, gRFC A53)
	transientTimer   bool // resource_timer_is_transient_error (ignored in legacy mode)
}

// entryState is what transition reads of an entry.
type entryState struct {
	state           State
	cached          bool // a resource is held
	deletionIgnored bool // gRFC A53: a deletion is being ignored
}

// resourceEffect says what becomes of the held resource.
type resourceEffect uint8

const (
	keepResource resourceEffect = iota // unchanged (none stays none)
	holdNew                            // hold the resource the event carried
	dropResource                       // hold nothing
)

// notifyEffect says what the entry's watchers are told.
type notifyEffect uint8

const (
	notifyNone notifyEffect = iota
	// notifyResource: ResourceChanged with the new resource.
	notifyResource
	// notifyError: ResourceChanged with the event's error.
	notifyError
	// notifyAmbient: AmbientError with the event's error.
	notifyAmbient
	// notifyCleared: AmbientError(nil), to the watchers whose last
	// notification was an ambient error: its cause is over.
	notifyCleared
)

// failureEffect says what becomes of the data error the entry carries.
type failureEffect uint8

const (
	keepFailure   failureEffect = iota
	recordFailure               // the event's error, with its version and bytes
	clearFailure
)

// outcome is what an event does to an entry.
type outcome struct {
	state    State
	resource resourceEffect
	failure  failureEffect
	notify   notifyEffect
	// errCode is the status code of the error watchers get (notifyError,
	// notifyAmbient).
	errCode codes.Code
	// stopTimer: the does-not-exist timer stops (something was received);
	// startTimer: it starts (evSent, nothing received yet).
	stopTimer, startTimer bool
	// join is what a new watcher hears (evWatch).
	join joinEffect
	// deletionIgnored is the entry's A53 flag after the event; logIgnored
	// and logUnignored ask for A53's WARNING and INFO lines.
	deletionIgnored          bool
	logIgnored, logUnignored bool
}

// joinEffect is what a watcher that joins an entry hears: the resource
// held, if resource is set, then err, as an ambient error if the resource
// was delivered, through ResourceChanged if not.
type joinEffect struct {
	resource bool
	err      joinErr
}

// joinErr is the error a new watcher hears.
type joinErr uint8

const (
	joinNoError joinErr = iota
	// joinEntryError: the entry's data error (a NACK, a TP3 error, a
	// deletion, a timeout).
	joinEntryError
	// joinServerError: the failure of the server in use.
	joinServerError
)

// cachedAfter reports whether the entry holds a resource after o, when it
// held one (cached) before.
func (o outcome) cachedAfter(cached bool) bool {
	switch o.resource {
	case holdNew:
		return true
	case dropResource:
		return false
	}
	return cached
}

// unchanged is the outcome that changes nothing of an entry in state s.
func unchanged(s entryState) outcome {
	return outcome{state: s.state, deletionIgnored: s.deletionIgnored}
}

// transition returns what ev does to an entry in state s under f.
func transition(s entryState, ev event, f features) outcome {
	o := unchanged(s)
	// dataError is A88's rule for NACKs, deletions and TP3 NOT_FOUND or
	// PERMISSION_DENIED: with fail_on_data_errors the held resource is
	// dropped; then watchers of a held resource get the error as ambient,
	// the others through ResourceChanged.
	dataError := func(state State, code codes.Code) outcome {
		o.state, o.failure, o.errCode = state, recordFailure, code
		if s.cached && f.failOnDataErrors && !f.legacy {
			o.resource = dropResource
		}
		o.notify = notifyError
		if o.cachedAfter(s.cached) {
			o.notify = notifyAmbient
		}
		return o
	}
	switch ev.kind {
	case evValid:
		o.stopTimer = true
		o.state, o.failure = StateACKed, clearFailure
		if s.deletionIgnored {
			o.deletionIgnored, o.logUnignored = false, true
		}
		if ev.unchanged && s.cached {
			// The watchers have it: they hear only that the error they
			// were told of, if any, is over.
			o.notify = notifyCleared
			return o
		}
		o.resource, o.notify = holdNew, notifyResource
		return o
	case evInvalid:
		o.stopTimer = true
		if ev.sameBytes && s.state == StateNACKed {
			// The same invalid bytes again: the cache records the new
			// attempt (still a NACK, so still INVALID_ARGUMENT);
			// watchers have nothing new to learn.
			o.failure, o.errCode = recordFailure, codes.InvalidArgument
			return o
		}
		return dataError(StateNACKed, codes.InvalidArgument)
	case evServerError:
		o.stopTimer = true
		if ev.code == codes.NotFound || ev.code == codes.PermissionDenied {
			return dataError(StateReceivedError, ev.code)
		}
		// Any other code is transient: never a reason to drop.
		o.state, o.failure, o.errCode = StateReceivedError, recordFailure, ev.code
		o.notify = notifyError
		if s.cached {
			o.notify = notifyAmbient
		}
		return o
	case evDeletion:
		if !ev.explicit && (s.state == StateDoesNotExist || s.state == StateReceivedError) {
			// Absent again from a full state: already deleted, or carrying
			// a TP3 error, which the server sends once and the client
			// keeps.
			return o
		}
		if !s.cached {
			if !ev.explicit || s.state == StateDoesNotExist {
				return o // absence from a full state deletes only a held resource
			}
			// The server says that a resource never received does not
			// exist: it does not, at once.
			o.stopTimer = true
			o.state, o.failure, o.errCode, o.notify = StateDoesNotExist, recordFailure, codes.NotFound, notifyError
			return o
		}
		if f.legacy {
			if f.ignoreDeletion {
				o.deletionIgnored = true
				o.logIgnored = !s.deletionIgnored
				return o
			}
			o.state, o.failure, o.errCode = StateDoesNotExist, recordFailure, codes.NotFound
			o.resource, o.notify = dropResource, notifyError
			return o
		}
		return dataError(StateDoesNotExist, codes.NotFound)
	case evTimer:
		if s.state != StateRequested {
			return o
		}
		o.failure, o.notify, o.resource = recordFailure, notifyError, dropResource
		if f.transientTimer && !f.legacy {
			o.state, o.errCode = StateTimeout, codes.Unavailable
			return o
		}
		o.state, o.errCode = StateDoesNotExist, codes.NotFound
		return o
	case evSent:
		o.startTimer = s.state == StateRequested
		return o
	case evWatch:
		// With a resource held, the watcher gets it, then the ambient
		// error in force: the entry's data error, or the failure of the
		// server in use. Without one, the error that stands for the
		// resource: its data error, or the failure of the server in use
		// while nothing was received. An error whose cause is over is not
		// heard.
		o.join.resource = s.cached
		switch s.state {
		case StateACKed, StateRequested:
			if ev.serverDown {
				o.join.err = joinServerError
			}
		default:
			o.join.err = joinEntryError
		}
		return o
	case evUnreachable:
		// gRFC A57 with A88: the cache is unchanged; watchers of a held
		// resource keep it and hear the failure as ambient.
		o.errCode = codes.Unavailable
		o.notify = notifyError
		if s.cached {
			o.notify = notifyAmbient
		}
		return o
	}
	return o
}
