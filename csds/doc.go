// Package csds serves the cache of xdslens xDS clients over the Client
// Status Discovery Service (envoy.service.status.v3.ClientStatusDiscoveryService),
// as gRFC A40 defines it for gRPC clients, with the client_scope field of
// gRFC A71 and the cache states of gRFC A88. Tools such as grpcdebug
// (`grpcdebug HOST:PORT xds status`, `xds config`) read it.
//
// A [Server] reads an xdsclient.Source, the same way telemetry.New takes
// one: a *xdsclient.Client, or a *xdsclient.Pool (every client of the pool
// at the time of each request). Register it on a grpc.Server of your own:
//
//	srv := grpc.NewServer()
//	csds.NewServer(pool).Register(srv)
//
// # What a response holds
//
// One ClientConfig per client, sorted by client_scope: client_scope is the
// client's target (the pool key), node is the node exactly as the client
// sends it to its xDS servers, and generic_xds_configs has one entry per
// cache entry, sorted by type URL and then name:
//
//   - type_url: the full type URL; name: the resource name as subscribed.
//   - client_status: the A88 cache state (REQUESTED, DOES_NOT_EXIST, ACKED,
//     NACKED, RECEIVED_ERROR, TIMEOUT).
//   - version_info, xds_config, last_updated: the version, bytes (as
//     received) and acceptance time of the resource the client holds; empty
//     or unset when it holds none. A NACKED, RECEIVED_ERROR or
//     DOES_NOT_EXIST entry that still holds an older resource shows it.
//   - error_state, whenever the entry carries an error: details is the
//     error message; version_info and last_update_attempt are the version
//     and time of the update that failed (a NACK, an error sent by the
//     server, a deletion) and are left empty for an error that came from the
//     does-not-exist timer; failed_configuration holds the rejected bytes
//     when they are known and parse as the resource type.
//   - config_status is left unset and is_static_resource false, as A40 asks
//     of clients.
//
// A version_info over 1 KiB is cut there, and details over 16 KiB, each
// with a marker saying how many bytes were left out ("...[N more bytes]"),
// so that a server's oversized strings cannot make every response huge.
//
// A request with node_matchers is refused with INVALID_ARGUMENT (a process
// is a single node). A request with exclude_resource_contents gets no
// xds_config or failed_configuration, which keeps the response small for
// large caches. Both RPCs return the same content; StreamClientStatus
// answers each request on the stream with one response and ends cleanly
// when the caller closes its side.
//
// # Isolation and cost
//
// Each client is read with [xdsclient.Client.Dump], which holds the
// client's lock only while it copies the entries; the protos are built after
// the lock is released. A client whose dump fails (a panic, or a client
// being closed) still gets its ClientConfig, with its scope and node but no
// entries, and the failure is logged; the other clients are unaffected.
//
// The response shares the xds_config messages (and failed bytes) with the
// client's cache: they are read-only and must not be modified. The node is
// a copy.
//
// # grpcdebug
//
// grpcdebug (`grpcdebug HOST:PORT xds status`, `xds config`) reads entries
// without last_updated as A40 leaves them, printing an empty time. Its
// v1.0.5 release and its main branch up to 64d2b46 (2025-03) refuse a
// response with more than one ClientConfig ("Received unexpected number of
// ClientConfig 2") and have no --scope. To serve them from a pool of
// several clients, give each target a server of its own with [ForTarget]
// (or pass a single *xdsclient.Client): a source of one client gives
// exactly one ClientConfig.
//
// Package admin registers this server together with channelz, health and
// server reflection, which grpcdebug's other commands read.
package csds
