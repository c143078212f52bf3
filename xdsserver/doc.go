// Package xdsserver runs xDS-enabled gRPC servers (gRFC A36): a
// *grpc.Server, built on grpc-go's public API, whose listening addresses
// serve as the control plane's Listener resources say — which connections
// they take, with what TLS (gRFC A29), which RPCs they route and which
// HTTP filters, such as RBAC (gRFC A41, A59), run on them.
//
//	srv, err := xdsserver.New(pool, xdsserver.WithServingModeCallback(onMode))
//	healthpb.RegisterHealthServer(srv, health.NewServer())
//	err = srv.Serve(lis) // lis: a TCP listener
//
// The server's xDS client is the pool's client for "#server"
// (xdsclient.ServerTarget), so CSDS and the client's metrics show the
// server's Listener and route configurations like any other resources.
//
// # Serving modes
//
// Each address given to Serve subscribes to the Listener named by the
// bootstrap's server_listener_resource_name_template, "%s" replaced by the
// address (percent-encoded for xdstp: names). What the address does, by
// what its watch hears (gRFC A36, with gRFC A88's rows for a Listener):
//
//	| the Listener's watch hears                                  | mode          | new connections            | open connections |
//	|-------------------------------------------------------------|---------------|----------------------------|------------------|
//	| nothing yet                                                 | STARTING      | closed as accepted         | none             |
//	| a valid server Listener with this address, and its route configurations | SERVING | matched to a filter chain | kept, or drained when their chain changed |
//	| a valid Listener whose route configurations have not come   | unchanged (the previous version serves on) | as before | as before |
//	| ResourceChanged with an error (does not exist, NACKed without a cached Listener or with fail_on_data_errors, deleted with fail_on_data_errors) | NOT_SERVING | closed as accepted | drained |
//	| a Listener with another address, or a client Listener       | NOT_SERVING   | closed as accepted         | drained          |
//	| AmbientError (NACK, deletion, server unreachable, with a cached Listener) | unchanged | as before | as before |
//
// A connection closed as accepted receives no byte (no TLS ServerHello nor
// HTTP/2 SETTINGS), so clients fail fast and try other addresses. Serving
// mode changes go to the WithServingModeCallback func with the error
// (UNAVAILABLE, naming the Listener, the cause and the node ID), and to
// Hooks.ServingModeChanged; without a callback they are logged as
// warnings, as gRFC A36 asks.
//
// # Filter chains
//
// Each new connection is served by one filter chain of the Listener,
// picked as Envoy does (gRFC A36): the chains whose destination prefix
// holds the server's address most specifically; of those, the ones whose
// source type names the connection's (SAME_IP_OR_LOOPBACK for a loopback
// peer or one with the server's address, else EXTERNAL) if any does, else
// those of type ANY; of those, the ones whose source prefix holds the
// peer's address most specifically; of those, the one that names the
// peer's port, else the one with no ports. A stage that leaves no chain
// gives default_filter_chain, and without one the connection is closed:
// there is no backtracking to a less specific match. (gRPC C-core, unlike
// Envoy and grpc-go, ignores ANY chains whenever a chain names a source
// type; Envoy's rule is the one gRFC A36 asks for. grpc-go's server
// considers destination prefixes only when it listens on a wildcard
// address; Envoy and gRPC C-core, and this server, always do.)
//
// A chain with a DownstreamTlsContext serves TLS with the identity of its
// certificate provider instance, read from the bootstrap's
// certificate_providers at each handshake (so rotated certificates serve
// new connections); with a validation context it checks client
// certificates against its roots, and requires one when
// require_client_certificate is set (otherwise a client certificate is
// checked when sent, as in gRPC C-core). A chain without one uses the
// fallback credentials (WithFallbackCredentials; insecure by default).
// Handshake failures go to Hooks.HandshakeFailed, with the peer and the
// error, never key material.
//
// # Routing and HTTP filters
//
// Each RPC is routed by its connection's chain: the virtual host for its
// :authority (gRFC A27's domain matching), then the first route whose
// path, header and runtime-fraction matchers match. The matchers are the
// client's (package internal/routematch), as gRFC A36 asks and as gRPC
// C-core runs one matcher for both sides; only their input differs: the
// header matchers read the RPC's incoming metadata, with C-core's rules
// (a "-bin" header is never present, "content-type" is
// "application/grpc", a header sent several times has its values joined
// with ","). Then the chain's
// HTTP filters run in order, each built for the route with its most
// specific typed_per_filter_config override (the route's, else the
// virtual host's), from the filters registered with package httpfilter,
// RBAC among them. An override's FilterConfig.disabled is not read, as in
// gRPC C-core and grpc-go (and on channels): the override's config applies (an RBACPerRoute
// with rules is enforced, one without rbac turns RBAC off), so a route
// never goes without an authorization filter that gRPC runs there.
//
//	| the RPC                                                | fails with                                   |
//	|--------------------------------------------------------|----------------------------------------------|
//	| matches a route with non_forwarding_action             | nothing: its filters run, then its handler   |
//	| matches a route with another action                    | UNAVAILABLE, naming the route and its action |
//	| matches no route, or no virtual host                   | UNAVAILABLE, naming the route configuration  |
//	| its chain's route configuration failed (RDS error)     | UNAVAILABLE, naming the resource and cause   |
//	| is denied by RBAC                                      | PERMISSION_DENIED                            |
//	| names a service the server does not have               | UNIMPLEMENTED, from gRPC, before routing     |
//
// A route configuration received over RDS applies at once to the
// connections of the chains that name it.
//
// # Listener changes
//
// A new version of the Listener is put in use once the route
// configurations it names have come (or failed), as in gRPC C-core. Then
// each open connection is matched again: when its new chain is the same
// as its old one but for the match (same name, routes, filters, TLS), it
// goes on under the new chain; otherwise it is drained, as gRPC C-core
// drains one, in two phases written between two of gRPC's frames: an
// HTTP/2 GOAWAY with the last stream ID at its maximum and a PING; then,
// once the client acknowledges the PING (it has read the GOAWAY) or after
// the GOAWAY timeout (WithGoAwayTimeout, 20 seconds as in C-core), a
// second GOAWAY naming the last stream the client opened. The client
// finishes the RPCs it has on the connection, under the old chain, and
// starts new ones on a new connection. A client that opens a stream after
// the second GOAWAY breaks it (RFC 9113, 6.8), and since grpc-go's server
// would serve that stream under a chain the Listener no longer has (an
// RBAC policy since revoked, say), the connection is closed before gRPC
// reads it, with a warning logged and Hooks.GoAwayIgnored called. This
// differs from C-core and from grpc-go's own xDS server, which both drop
// such a stream unanswered and serve the connection's other streams to
// their end: here those streams are cut with the connection, for the
// server sees the connection's bytes below grpc-go's transport and cannot
// drop one stream there. A connection still open at the drain
// grace time (WithDrainGraceTime, 10 minutes as in gRPC C-core) is
// closed.
//
// # What the server shares with gRPC
//
// The server installs its own transport credentials (a grpc.Creds among
// WithServerOptions would be overridden) and its unary and stream
// interceptors, first in grpc.ChainUnaryInterceptor's chain: interceptors
// set with grpc.UnaryInterceptor or grpc.StreamInterceptor run before
// routing and the filters. Each RPC finds its connection by the peer
// address gRPC gives it, which is a *net.TCPAddr made for that connection.
package xdsserver
