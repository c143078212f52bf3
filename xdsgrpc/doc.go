// Package xdsgrpc routes gRPC channels with xdslens: a resolver for targets
// "xdslens:///LISTENER" and the load-balancing policies under it, built on
// grpc-go's public resolver and balancer APIs.
//
//	pool := xdsclient.NewPool(cfg) // or xdsclient.DefaultPool()
//	conn, err := grpc.NewClient("xdslens:///payments", append(xdsgrpc.DialOptions(pool),
//		grpc.WithTransportCredentials(insecure.NewCredentials()))...)
//
// Importing the package also registers the scheme with gRPC, served by
// xdsclient.DefaultPool (the bootstrap from GRPC_XDS_BOOTSTRAP or
// GRPC_XDS_BOOTSTRAP_CONFIG), so that grpc.NewClient("xdslens:///payments",
// ...) works without DialOptions. The scheme is not gRPC's "xds": grpc-go's
// own xDS resolver can run in the same program.
//
// # Each RPC routed once
//
// gRPC-Go's hook for routing a call when it starts (its config selector)
// is internal, so DialOptions adds interceptors to the channel: they route
// each RPC when it starts, with the channel's latest config, and keep the
// decision in the RPC's context; every pick of the RPC uses it, whatever
// picker it meets, and the RPC holds its cluster's policy until it ends,
// so that a cluster removed from the config keeps serving the RPCs routed
// to it (gRFC A74). Without the interceptors (the default registration, or
// WithResolvers alone), the picker routes an RPC at its first pick and
// keeps the decision, and the cluster, while the RPC waits for a
// connection; an RPC that is picked at once allocates nothing for it.
//
// # What a channel does
//
// The resolver gets the pool's client for the channel's target (or, with
// WithPoolTarget, the client of another target, shared with whatever else
// uses it), names the Listener to watch from the bootstrap's templates
// (gRFC A47) and runs a dependency manager (package xdsconfig, gRFC A74)
// for it; every Config it delivers goes to the channel. The routing policy
// then routes each RPC in the picker:
//
//   - the route: the first route of the virtual host (chosen for the
//     channel's authority) whose path (prefix, exact or safe_regex, with
//     case_sensitive), header and runtime_fraction matchers all match the RPC
//     (gRFC A28); header matchers read the RPC's outgoing metadata;
//   - the cluster: the route's cluster, or a weighted random pick among its
//     weighted_clusters;
//   - in the cluster (package clusterlb), a tree of policies as gRFC A52
//     draws it: the priorities of the cluster's endpoints (with a failover
//     timer, gRFC A56; for an aggregate cluster, gRFC A37, the priorities
//     of its leaf clusters in order, each leaf with its own policy as in
//     C-core since gRFC A75), then for the priority in use its leaf's
//     drop_overloads, circuit breaking on max_requests (gRFC A32) and load
//     reports (for clusters with lrs_server), over the endpoint policy the
//     Cluster names, built through gRPC's balancer registry: round_robin
//     under wrr_locality (a locality by weight, then an endpoint),
//     pick_first, ring_hash (by the RPC's request hash), least_request,
//     weighted_round_robin (ORCA weights) or a custom policy;
//   - the connections: one per endpoint address (and TLS settings) for the
//     whole channel, shared by the clusters that name it.
//
// # Statuses
//
// The control plane never puts a code reserved for applications on an RPC
// (gRFC A54): a failed config, a cluster whose resource failed, no route, a
// route that cannot forward, a drop and circuit breaking fail the RPC with
// UNAVAILABLE, whatever code the xDS client's watchers were given, and the
// message names the resource, the cause and the node ID. A cluster whose
// endpoints all fail fails RPCs with UNAVAILABLE too, its message carrying
// the cluster's resolution note: the ambient errors the xDS client reported
// for the resources behind it (gRFC A88), such as an unreachable xDS server
// while the cache keeps serving, or the node ID when there are none. Such a
// failure lets wait-for-ready RPCs wait; the others end the RPC at once.
//
// # Per route: deadlines, retries, filters
//
// With DialOptions' interceptors, the route an RPC takes also decides what
// happens to it besides its destination, from a plan built once per config
// for each route and cluster: the route's max_stream_duration and
// grpc_timeout_header_max bound its deadline (gRFC A31); its retry_policy
// (or the virtual host's) retries it on the codes named, each attempt
// picked afresh, with gRFC A6's backoff and at most 5 attempts (gRFC A44);
// and the listener's client HTTP filters (gRFC A39) run on it in order,
// with the route's, virtual host's and weighted cluster's overrides: the
// fault filter (gRFC A33) and any httpfilter.ClientFilter registered for a
// config type. As in gRPC C-core, the disabled field of an HttpFilter or of
// an override's FilterConfig is not read: the filter runs, with the
// override's config. A channel without the interceptors cannot apply them, and
// fails the RPCs of routes that need them with UNAVAILABLE, saying so.
//
// # Outlier detection
//
// A leaf cluster with outlier_detection (gRFC A50) counts each RPC's
// outcome per endpoint, without allocating, across all the priorities of
// the leaf, and ejects endpoints by success rate or failure percentage at
// each interval; an ejected endpoint is reported unhealthy to the endpoint
// policy through its health listener, and comes back after its ejection
// time, growing with repeated ejections.
//
// Outlier detection, load reports and the CallFinished hook count an RPC
// with the status it ended with, also where gRPC-Go (v1.85.0) ends a
// failed attempt as if it had succeeded (a Trailers-Only answer that
// closes the stream before the request is written): with DialOptions'
// interceptors, which learn the status when the RPC returns or is
// retried; without them, such an attempt counts as a success. A pick whose
// connection gRPC-Go finds no longer READY when it takes it, and which it
// makes again, is no call: none of them counts it, as in gRPC C-core
// (gRPC-Go's own xDS policies count it as a success).
//
// # TLS to endpoints
//
// A Cluster's transport_socket (gRFC A29) is applied by the channel's
// credentials when they are package xdscreds's: each connection then does
// the handshake the cluster asks for, with the certificates of the
// bootstrap's certificate providers. With other credentials, the RPCs
// routed to such a cluster fail with UNAVAILABLE, wait-for-ready or not,
// naming the cluster: a cluster that asks for TLS is never reached in
// plaintext.
//
// # Observing it
//
// Hooks report every new config (with what changed), every failed config,
// the outcome of every pick, the end of every RPC sent, each retry, each
// injected fault and each ejection; package telemetry/dataplane turns
// them into metrics. WithCallInfo tells one RPC's caller which cluster,
// leaf cluster and locality its RPC went to; RoutingOf tells an
// interceptor or a stats.Handler the whole routing decision of an RPC or
// of one of its attempts, and WithDialOptions puts such observers around
// the channel's own interceptors (package telemetry/dataplane's per-call
// metrics and traces are two).
//
// # Explain and config history
//
// Explain and Builder.Explain say what a channel's routing does with an
// RPC without sending it, and why: the route and the matchers that
// decided, the clusters and their odds, the request hash, the plan. Each
// channel keeps its last configs with what changed and the versions of
// the resources behind them (WithConfigHistory, Builder.ConfigHistory,
// package history).
//
// # What is not supported
//
// Compared with grpc-go's own xDS client channel: routes with a route
// lookup (RLS) cluster specifier plugin fail the RPCs they match with
// UNAVAILABLE. The README has the whole table.
package xdsgrpc
