package cache

// State is the state of one cache entry, exactly as gRFC A88 names them.
// Package xdsclient exports the same values as CacheState, by name: its
// conversion is generated (internal/mirrorgen), and fails to compile
// when a value differs.
type State uint8

// The states. StateNone is not a state of an entry: it is the old state of
// a new entry and the new state of a removed one.
const (
	StateNone State = iota
	StateRequested
	StateDoesNotExist
	StateACKed
	StateNACKed
	StateReceivedError
	StateTimeout
)
