package xdsclient

import "time"

// CacheState and EntrySnapshot are the exported forms of the cache's State
// and Snapshot: their conversion, snapshot_gen.go, is generated from both
// definitions, and internal/mirrorgen's test fails when it is out of date.
//
//go:generate go run ./internal/mirrorgen

// CacheState is the state of one cache entry, exactly as gRFC A88 defines
// them. The same states are shown over CSDS (ClientResourceStatus) and in
// the grpc.xds.cache_state metric label.
type CacheState uint8

// The cache states. StateNone is not a state of an entry: hooks use it as
// the old state of a new entry and the new state of a removed one.
const (
	// StateNone means there is no cache entry.
	StateNone CacheState = iota
	// StateRequested: subscribed, nothing received yet.
	StateRequested
	// StateDoesNotExist: the does-not-exist timer fired, or the server
	// deleted an LDS or CDS resource. A resource may still be held when the
	// deletion was ignored.
	StateDoesNotExist
	// StateACKed: a valid resource is held.
	StateACKed
	// StateNACKed: the latest version was invalid; an older valid version
	// may still be held.
	StateNACKed
	// StateReceivedError: the server sent an error for the resource (xRFC
	// TP3); an older valid version may still be held.
	StateReceivedError
	// StateTimeout: the timer fired on a server with the
	// resource_timer_is_transient_error feature.
	StateTimeout
)

var stateNames = [...]string{"NONE", "REQUESTED", "DOES_NOT_EXIST", "ACKED", "NACKED", "RECEIVED_ERROR", "TIMEOUT"}

// String returns the state as CSDS spells it, for example "NACKED".
func (s CacheState) String() string {
	if int(s) >= len(stateNames) {
		return "UNKNOWN"
	}
	return stateNames[s]
}

// MetricLabel returns the value of the grpc.xds.cache_state label (gRFC A78
// with A88's additions) for an entry in state s that holds a resource
// (cached) or not: one of requested, does_not_exist,
// does_not_exist_but_cached, acked, nacked, nacked_but_cached,
// received_error, received_error_but_cached, timeout.
func (s CacheState) MetricLabel(cached bool) string {
	switch s {
	case StateRequested:
		return "requested"
	case StateDoesNotExist:
		if cached {
			return "does_not_exist_but_cached"
		}
		return "does_not_exist"
	case StateACKed:
		return "acked"
	case StateNACKed:
		if cached {
			return "nacked_but_cached"
		}
		return "nacked"
	case StateReceivedError:
		if cached {
			return "received_error_but_cached"
		}
		return "received_error"
	case StateTimeout:
		return "timeout"
	}
	return ""
}

// EntrySnapshot is one cache entry as Dump saw it.
type EntrySnapshot struct {
	// TypeURL is the entry's resource type URL.
	TypeURL string
	// Name is the resource name as subscribed.
	Name string
	// Authority is the xDS authority of the name ("#old" for old-style
	// names).
	Authority string
	// Server is the URI of the xDS server the entry is subscribed on, as
	// shown (bootstrap.ServerConfig.ShownURI).
	Server string
	// State is the A88 cache state.
	State CacheState
	// Cached reports whether the entry holds a resource. Raw is the held
	// resource as received, the value of an Any of type TypeURL; Version is
	// the version_info of the response that last carried it, UpdatedAt when
	// that response arrived, and ResourceServer the URI of the server that
	// sent it.
	Cached         bool
	Raw            []byte
	Version        string
	UpdatedAt      time.Time
	ResourceServer string
	// Err is the data error the entry carries (NACK, TP3 error, deletion,
	// timeout), nil in REQUESTED and ACKED.
	Err error
	// FailedVersion and FailedAt are the version and time of the update
	// that failed, when the error came from one; FailedRaw is the rejected
	// resource when its bytes are known.
	FailedVersion string
	FailedAt      time.Time
	FailedRaw     []byte
	// Watchers is how many watchers the entry has.
	Watchers int
}
