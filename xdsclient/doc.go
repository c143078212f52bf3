// Package xdsclient is an xDS client: it subscribes to resources on xDS
// management servers over ADS (State of the World, or incremental xDS for
// servers whose bootstrap entry lists "delta_xds"), keeps them in a cache,
// and tells watchers about every change and error exactly as gRPC's
// proposals require — gRFC A57 for failures of the channel and the stream,
// gRFC A88 for data errors (with gRFC A53's legacy behaviour behind
// GRPC_EXPERIMENTAL_XDS_DATA_ERROR_HANDLING=false), and xRFC TP3 for errors
// that the server reports per resource.
//
// A Client is made from a parsed bootstrap (package bootstrap) and watched
// through Watch or the typed helpers WatchListener, WatchRouteConfig,
// WatchCluster and WatchEndpoints:
//
//	cfg, err := bootstrap.FromEnv()
//	client, err := xdsclient.New(cfg, xdsclient.WithTarget("xds:///svc"))
//	defer client.Close()
//	cancel := xdsclient.WatchCluster(client, "backend", myWatcher)
//	defer cancel()
//
// A Watcher has two callbacks: ResourceChanged, for a new resource or an
// error that makes the old one unusable, and AmbientError, for an error
// that leaves the old one in use. Errors carry gRPC status codes meant for
// the watcher; use DataPlaneError before putting one on an RPC.
//
// The cache keeps each resource as the bytes the server sent, with about
// 200 bytes of bookkeeping, and decodes only what changed: resources of a
// response whose bytes equal the cached ones are recognised by name before
// decoding and cost a lookup and a comparison. Watchers get decoded values
// and keep what they need; a watcher added later gets the cached bytes
// decoded again.
//
// An error a watcher heard as ambient ends when its cause ends: when the
// server sends the resource again, valid, the watcher gets AmbientError(nil)
// (or ResourceChanged if the resource changed). A watcher added later hears
// only the error in force now.
//
// Every transition — connectivity, streams, server failures, channels,
// requests, responses, cache states, timers and watcher callbacks — is
// reported through Hooks, which is how metrics (package telemetry) and the
// CSDS server (package csds) observe the client. The cache itself is read
// with Dump.
//
// ReportLoad reports a data plane's load to an LRS server (package lrs),
// for a Cluster with lrs_server self; its streams have hooks of their own.
//
// # Bounds
//
// No caller and no server can make the client hurt the others. Watch
// refuses a name that is not valid UTF-8 or is longer than
// MaxResourceNameSize, to that watcher alone, and panics on a nil watcher,
// a typed nil (a nil *T whose type implements Watcher) included.
// A response is at most WithMaxResponseSize bytes (ErrResponseTooLarge);
// a request the server refuses as too large is ErrRequestTooLarge. ADS
// streams to one server start at most once per WithMinStreamInterval
// (250ms by default), so a server that ends every stream right after a
// response sees at most four new streams a second; a stream that lived
// longer is restarted at once, as gRFC A57 says. What a server or a caller
// supplies is cut, marked "...[N more bytes]", before it reaches an error
// (at most 16 KiB), a log line or CSDS; hooks, Dump and delivered
// resources carry it as received.
//
// # Delta
//
// Over incremental xDS (DeltaAggregatedResources) requests name only the
// subscriptions that changed, each resource carries its own version (which
// the cache keeps and CSDS shows), a reconnection after a healthy stream
// sends the versions held, and a name in removed_resources is a deletion of
// any type, handled as gRFC A88 handles an LDS or CDS deletion (a
// subscribed name never received does not exist at once). The responses go
// through the same path and state machine as State of the World ones.
//
// # The state machines
//
// What an event does to a cache entry (a valid or invalid resource, a TP3
// error, a deletion, a timer, an unreachable server, a new watcher, a
// subscription sent) is decided by one function, and carried out in one
// place: the new state and resource, the failure record, the timer, the
// CacheStateChanged hook and the watcher callbacks all come from its
// outcome, so none of them can disagree with the cache. What an event does
// to a server's health (gRFC A57: its connectivity, a stream started, a
// first response, a stream ended with or without one, a keepalive timeout)
// is another such function; the fallback of gRFC A71 acts on its effects.
//
// # Inside
//
// The client is built in layers, each a package under xdsclient/internal,
// whose imports run one way, downwards:
//
//	xdsclient           the public Client, Pool and Hooks; the one place where hooks are called
//	internal/authority  gRFC A71: the server each authority uses; each server's events and health
//	internal/cache      the entries, transition (gRFC A88), the timers; Apply, a response into the cache
//	internal/transport  one server: its ADS stream (State of the World or delta), requests, backoff,
//	                    over a Channel: gRPC's, or transporttest's in memory for the tests
//	internal/health     gRFC A57, as a function
//	internal/lane, txn  the lanes that run callbacks; the lock as a value
//	internal/xdstp, xerr, backoff, goid  names in canonical form; errors and their bounds;
//	                    the retry delays; goroutine IDs (is a call, made while a
//	                    callback runs, from inside that callback?)
//
// Each layer's rules have their own table tests: the transport's and the
// authorities' over in-memory channels that a test drives (a stream
// accepted or refused, a request read, a response scripted, a
// connectivity state set), the cache's on the updates it is handed, the
// health and transition functions as tables; the loopback tests of this
// package test the layers together, over real gRPC.
//
// Beside them, package lrs (the load store and the LRS stream) knows
// nothing of the client: a Client starts its reporters for ReportLoad,
// and their events, in lrs's own Info types, are the LoadReport hooks.
// Above the public API, and using nothing else of the client (xdsconfig
// shares internal/goid): xdsconfig (gRFC A74's dependency manager), and
// outside xdsclient the observers (telemetry, csds, admin, each taking a
// Source) and xdsgrpc (gRPC's resolver and balancers).
//
// The way of a response, from the stream to the watcher:
//
//	transport  the stream reads a DiscoveryResponse (or a delta one) and makes an Update:
//	           one value for both protocols, names in canonical form, what messages
//	           quote of the server (versions, TP3 messages) bounded where it enters
//	authority  the server's first response ends its failure (A57); a higher priority
//	           server that delivers again is used again (A71)
//	cache      names read (the type's NameReader) with the lock released, then looked
//	           up with it held; resources whose bytes are held recognised, the others
//	           decoded with the lock released (items.go); the event of each resource,
//	           TP3 error, removal and absence found (response.go), all decided under the
//	           server's features (source.go, transition.go) and the NACK worded
//	           (nack.go) before any is carried out (apply.go)
//	lane       of that server: the hooks, then the watcher callbacks
//	transport  the ACK or NACK goes out (over State of the World it names every
//	           subscribed resource, read from the cache with the client's lock held);
//	           the next response is read once the lane ran the callbacks of this one
//	           (flow control, per stream)
//
// Locks, outer first: a Pool's; the client's (a txn.Mutex: the cache, the
// authorities and the servers' health are reached only through the
// txn.Tx it gives); a transport connection's own (what is subscribed on
// the server); a lane's. No hook, watcher, logger or resource decoder runs
// under the client's lock: hook calls and watcher callbacks are posted
// while it is held, in event order, and run on a lane after it is
// released; a log line (the handler's Enabled as well as its Handle) is
// written on the lane of the server whose event it tells, before the hooks
// of that event (or, for a caller's own call, by the caller once the lock
// is released); resources are named and decoded with it released, and a
// resource type's URL, short name and FullState are read once, before it
// is taken.
// Observers such as telemetry take their own lock only inside a hook,
// where no client lock is held.
package xdsclient
