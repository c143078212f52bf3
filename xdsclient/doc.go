// Package xdsclient is an xDS client: it subscribes to resources on xDS
// management servers over ADS (State of the World), keeps them in a cache,
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
// Every transition — connectivity, streams, server failures, requests,
// responses, cache states, timers and watcher callbacks — is reported
// through Hooks, which is how metrics (package telemetry) and the CSDS
// server (package csds) observe the client. The cache itself is read with
// Dump.
package xdsclient
