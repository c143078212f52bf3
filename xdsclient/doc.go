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
// MaxResourceNameSize, to that watcher alone, and panics on a nil watcher.
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
// # The state machine and the lock
//
// What an event does to a cache entry (a valid or invalid resource, a TP3
// error, a deletion, a timer, an unreachable server) is decided by one
// function, transition, and carried out in one place, apply: the new
// state and resource, the failure record, the CacheStateChanged hook and
// the watcher callbacks all come from its outcome, so none of them can
// disagree with the cache.
//
// A Client has one mutex. The goroutines of a client (one per channel for
// connectivity, one per channel for streams, one sending requests, the
// does-not-exist timer wheel, and the callback goroutine) take it for short
// steps and never hold it while they block, call a hook or call a watcher:
// hook calls and watcher callbacks are queued while it is held, in event
// order, and run on the callback goroutine after it is released. Locks are
// taken in one order, outer first: a Pool's, then a Client's, then the
// callback queue's; observers such as telemetry take their own lock only
// inside a hook, where no client lock is held.
package xdsclient
