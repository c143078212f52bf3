package xdsclient

import (
	"time"

	"google.golang.org/grpc/connectivity"

	"github.com/xdslens/xdslens/internal/hookset"
	"github.com/xdslens/xdslens/xdsclient/lrs"
)

// Hooks reports every transition of a Client, in the style of
// net/http/httptrace: each field is an optional func called when its event
// happens. A nil field costs nothing.
//
// Which goroutine, and in what order: the hook calls and watcher
// callbacks that the events of one xDS server cause (its connectivity, its
// streams, its requests and responses, the cache states and timers of the
// resources it serves) run on that server's lane, a goroutine of the
// client that runs them one at a time, in the order the events happened.
// The lanes of different servers run at the same time; when an authority
// moves to another server (fallback, or back), its events move with it,
// after what the old lane had been given. The client posts the calls while
// it holds its lock, at the moment of the event, so a hook never sees the
// events of a server out of order, and the hooks of an event
// (CacheStateChanged, ResponseReceived, ...) have returned before the
// WatcherNotified hook and the watcher callback it caused run. Hooks run a
// little after their event, never under a client lock: a hook may call the
// Client's methods, Close included (Close then does not wait for the
// callback goroutines). A hook that blocks holds up the later hooks and
// callbacks of its lane, and the reading of that server's responses (flow
// control), so hooks must be cheap. The load report hooks run on the
// goroutine of their LRS stream, which they hold up likewise, and which
// Close and ReportLoad's release wait for, but not when called from one
// of that stream's hooks: then they return at once, and the stream ends
// (its last report written) once the hook returns. Hook calls posted
// before Close run before Close returns.
//
// A server is named in every Info (Server, Previous, and the server in
// errors and reasons) by its URI as shown: bootstrap.ServerConfig.ShownURI,
// with any credentials in it (user info, query, fragment) replaced by
// "[redacted]". The same is true of Resource.Server, EntrySnapshot, logs,
// the errors given to watchers and telemetry's grpc.xds.server label; the
// URI as written is used only to dial.
//
// Several Hooks may be given to one client (WithHooks more than once, or
// AddHooks); they are composed into one when attached, so an event costs
// one nil check whatever the number of Hooks, and all of them are called,
// in the order they were given. Event details travel in Info structs so
// that fields can be added later.
type Hooks struct {
	// ConnectivityChanged is called when the channel to an xDS server
	// changes connectivity state.
	ConnectivityChanged func(ConnectivityInfo)
	// ConnectedChanged is called when the client's view of whether it has a
	// working ADS stream to a server changes (gRFC A78's
	// grpc.xds_client.connected): true when the first stream is created or a
	// response arrives after a failure, false on a server failure and when
	// the channel closes.
	ConnectedChanged func(ConnectedInfo)
	// StreamStarted is called when an ADS stream to a server is created.
	StreamStarted func(StreamInfo)
	// StreamEnded is called when an ADS stream ends, with whether any
	// response was read on it. Every StreamEnded follows the StreamStarted
	// of its stream.
	StreamEnded func(StreamEndInfo)
	// StreamStartFailed is called when an ADS stream could not be created
	// (the channel is not connected, for instance); no StreamStarted or
	// StreamEnded is called for it. It is a server failure (gRFC A57) like
	// a stream that ends without a response.
	StreamStartFailed func(StreamEndInfo)
	// ChannelClosed is called when the client closes its channel to a
	// server: nothing uses the server any more (after switching back from
	// a fallback server, or when the last watch of its resources was
	// cancelled), or the client is closing. The stream's StreamEnded and a
	// ConnectedChanged to false come first. The server is no longer one the
	// client has a channel to, until a watch needs it again.
	ChannelClosed func(ChannelInfo)
	// ServerFailure is called when a server goes from healthy to unhealthy
	// as gRFC A57 defines it: its channel reports TRANSIENT_FAILURE, or an
	// ADS stream ended before any response.
	ServerFailure func(ServerFailureInfo)
	// RequestSent is called after a DiscoveryRequest is written to a
	// stream: a subscription change, an ACK or a NACK.
	RequestSent func(RequestInfo)
	// ResponseReceived is called once per DiscoveryResponse, after it has
	// been applied to the cache, with the number of valid and invalid
	// resources it carried.
	ResponseReceived func(ResponseInfo)
	// CacheStateChanged is called on every change of a cache entry's state
	// or of whether it holds a resource, including its creation (Old is
	// StateNone) and removal (New is StateNone).
	CacheStateChanged func(CacheStateInfo)
	// WatcherNotified is called just before a watcher callback runs.
	WatcherNotified func(NotificationInfo)
	// AuthorityServerChanged is called when an authority starts using a
	// server: its first server when the authority is first used, a lower
	// priority server on fallback (gRFC A71), a higher priority one when
	// the client switches back; and, with Server "" and Priority -1, when
	// the authority is released because none of its resources is watched
	// any more.
	AuthorityServerChanged func(AuthorityServerInfo)
	// ResourceTimerStarted is called when a does-not-exist timer starts
	// for a resource; ResourceTimerStopped when it stops without firing.
	ResourceTimerStarted func(ResourceTimerInfo)
	// ResourceTimerStopped is called when a running does-not-exist timer is
	// stopped without firing (the resource arrived, the stream broke or the
	// watch was cancelled).
	ResourceTimerStopped func(ResourceTimerInfo)
	// LoadReportStreamStarted is called when an LRS stream to a server has
	// been created (Client.ReportLoad).
	LoadReportStreamStarted func(LoadReportStreamInfo)
	// LoadReportStreamEnded is called after every attempt at an LRS
	// stream: a stream that LoadReportStreamStarted announced has ended,
	// or, with Created false, one could not be created (no
	// LoadReportStreamStarted came first).
	LoadReportStreamEnded func(LoadReportStreamEndInfo)
	// LoadReportSent is called after a load report has been written to an
	// LRS stream.
	LoadReportSent func(LoadReportInfo)
}

// ConnectivityInfo describes a connectivity state change of the channel to
// one xDS server.
type ConnectivityInfo struct {
	Target string
	Server string
	State  connectivity.State
}

// ConnectedInfo describes a change of the connected flag for one server.
type ConnectedInfo struct {
	Target    string
	Server    string
	Connected bool
	// Reason is the failure that made the server unconnected, nil when it
	// becomes connected.
	Reason error
}

// ChannelInfo describes the channel to one xDS server.
type ChannelInfo struct {
	Target string
	Server string
	// Reason says why the channel closed.
	Reason error
}

// StreamInfo describes a new ADS stream.
type StreamInfo struct {
	Target string
	Server string
	// Attempt counts stream attempts to this server, starting at 1.
	Attempt int
	// Delta reports an incremental (DeltaAggregatedResources) stream;
	// false is State of the World.
	Delta bool
}

// StreamEndInfo describes the end of an ADS stream.
type StreamEndInfo struct {
	Target string
	Server string
	// ResponseReceived reports whether any response was read on the stream;
	// a stream that ends without one is a server failure (gRFC A57).
	ResponseReceived bool
	// Err is how the stream ended.
	Err error
	// Backoff is how long the client waits before the next attempt.
	Backoff time.Duration
}

// ServerFailureInfo describes a server going from healthy to unhealthy.
type ServerFailureInfo struct {
	Target string
	Server string
	Reason error
}

// RequestInfo describes a DiscoveryRequest written to a stream.
type RequestInfo struct {
	Target  string
	Server  string
	TypeURL string
	// Names is how many resource names the request subscribes to: all of
	// them over State of the World, those newly subscribed
	// (resource_names_subscribe) over delta.
	Names int
	// Unsubscribed is how many names a delta request unsubscribes
	// (resource_names_unsubscribe); always 0 over State of the World.
	Unsubscribed int
	// Version is the version_info of a State of the World request; delta
	// requests have none.
	Version string
	Nonce   string
	// NACK is the error detail when the request is a NACK, else nil.
	NACK error
	// Delta reports a DeltaDiscoveryRequest.
	Delta bool
}

// ResponseInfo describes one DiscoveryResponse after it has been applied.
type ResponseInfo struct {
	Target  string
	Server  string
	TypeURL string
	Version string
	Nonce   string
	// Valid and Invalid count the resources of the response as gRFC A78
	// does: subscribed resources that passed or failed validation, plus
	// entries whose name could not be determined and TP3 errors, counted as
	// invalid. Resources that were not subscribed are not counted.
	Valid, Invalid int
	// Errors is how many subscribed resources carried a TP3 error.
	Errors int
	// Removed is how many subscribed resources a delta response named in
	// removed_resources; always 0 over State of the World, where a
	// deletion is an absence.
	Removed int
	// Delta reports a DeltaDiscoveryResponse, whose Version is its
	// system_version_info; each resource has its own version.
	Delta bool
	// NACK is the error sent back to the server, nil when the response was
	// ACKed.
	NACK error
}

// CacheStateInfo describes a change of one cache entry.
type CacheStateInfo struct {
	Target    string
	Authority string
	TypeURL   string
	Name      string
	Old       CacheState
	New       CacheState
	// OldCached and NewCached report whether the entry held a resource
	// before and after.
	OldCached, NewCached bool
	// Server is the xDS server the entry is subscribed on.
	Server string
	// Err is the error the entry carries after the change, if any.
	Err error
	// At is when the change happened. Hooks run after it, in order, on the
	// client's hook goroutine: durations between events are measured with
	// At, not with the time a hook runs.
	At time.Time
}

// NotificationKind is the kind of watcher callback.
type NotificationKind int

// The kinds of watcher notification.
const (
	// NotifyResource is ResourceChanged with a valid resource.
	NotifyResource NotificationKind = iota + 1
	// NotifyResourceError is ResourceChanged with an error.
	NotifyResourceError
	// NotifyAmbientError is AmbientError.
	NotifyAmbientError
)

// String returns "resource", "resource_error" or "ambient_error".
func (k NotificationKind) String() string {
	switch k {
	case NotifyResource:
		return "resource"
	case NotifyResourceError:
		return "resource_error"
	case NotifyAmbientError:
		return "ambient_error"
	}
	return "unknown"
}

// NotificationInfo describes one watcher callback.
type NotificationInfo struct {
	Target  string
	TypeURL string
	Name    string
	Kind    NotificationKind
	Err     error
}

// AuthorityServerInfo describes which server an authority uses.
type AuthorityServerInfo struct {
	Target    string
	Authority string
	// Server is the URI of the server now in use ("" when the authority
	// is released); Previous the one before ("" when the authority was
	// first used).
	Server, Previous string
	// Priority is the index of Server in the authority's server list (0 is
	// the primary), -1 when the authority is released.
	Priority int
	// Reason says why: "initial", "fallback" or "primary recovered"-style
	// text naming the failure or the response that caused the change.
	Reason string
}

// ResourceTimerInfo describes a does-not-exist timer.
type ResourceTimerInfo struct {
	Target  string
	Server  string
	TypeURL string
	Name    string
	// Duration is the timer's length.
	Duration time.Duration
	// At is when the timer started or stopped (see CacheStateInfo.At).
	At time.Time
}

// LoadReportStreamInfo describes a new LRS stream. The load report types
// are package lrs's: its Reporters report with them directly.
type LoadReportStreamInfo = lrs.StreamInfo

// LoadReportStreamEndInfo describes the end of an LRS stream attempt.
type LoadReportStreamEndInfo = lrs.StreamEndInfo

// LoadReportInfo describes one load report written to an LRS stream.
type LoadReportInfo = lrs.ReportInfo

// compose returns one Hooks whose every func calls the funcs of hs that
// are set, in the order of hs (package hookset): composed once when hooks
// are attached, so that each event is a single nil check. A field that
// none of hs sets stays nil.
func compose(hs []*Hooks) *Hooks {
	return &Hooks{
		ConnectivityChanged:     hookset.Join(hs, func(h *Hooks) func(ConnectivityInfo) { return h.ConnectivityChanged }),
		ConnectedChanged:        hookset.Join(hs, func(h *Hooks) func(ConnectedInfo) { return h.ConnectedChanged }),
		StreamStarted:           hookset.Join(hs, func(h *Hooks) func(StreamInfo) { return h.StreamStarted }),
		StreamEnded:             hookset.Join(hs, func(h *Hooks) func(StreamEndInfo) { return h.StreamEnded }),
		StreamStartFailed:       hookset.Join(hs, func(h *Hooks) func(StreamEndInfo) { return h.StreamStartFailed }),
		ChannelClosed:           hookset.Join(hs, func(h *Hooks) func(ChannelInfo) { return h.ChannelClosed }),
		ServerFailure:           hookset.Join(hs, func(h *Hooks) func(ServerFailureInfo) { return h.ServerFailure }),
		RequestSent:             hookset.Join(hs, func(h *Hooks) func(RequestInfo) { return h.RequestSent }),
		ResponseReceived:        hookset.Join(hs, func(h *Hooks) func(ResponseInfo) { return h.ResponseReceived }),
		CacheStateChanged:       hookset.Join(hs, func(h *Hooks) func(CacheStateInfo) { return h.CacheStateChanged }),
		WatcherNotified:         hookset.Join(hs, func(h *Hooks) func(NotificationInfo) { return h.WatcherNotified }),
		AuthorityServerChanged:  hookset.Join(hs, func(h *Hooks) func(AuthorityServerInfo) { return h.AuthorityServerChanged }),
		ResourceTimerStarted:    hookset.Join(hs, func(h *Hooks) func(ResourceTimerInfo) { return h.ResourceTimerStarted }),
		ResourceTimerStopped:    hookset.Join(hs, func(h *Hooks) func(ResourceTimerInfo) { return h.ResourceTimerStopped }),
		LoadReportStreamStarted: hookset.Join(hs, func(h *Hooks) func(LoadReportStreamInfo) { return h.LoadReportStreamStarted }),
		LoadReportStreamEnded:   hookset.Join(hs, func(h *Hooks) func(LoadReportStreamEndInfo) { return h.LoadReportStreamEnded }),
		LoadReportSent:          hookset.Join(hs, func(h *Hooks) func(LoadReportInfo) { return h.LoadReportSent }),
	}
}
