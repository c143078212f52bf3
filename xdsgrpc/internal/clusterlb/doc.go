// Package clusterlb is the load-balancing policy of one route-level
// cluster of an xdslens channel: given the leaf clusters the dependency
// manager resolved it to (one EDS or LOGICAL_DNS cluster, or the leaves of
// an aggregate cluster, gRFC A37), it picks the endpoint of every RPC,
// drops and refuses RPCs as the control plane says, and reports load.
//
// It is built on grpc-go's public balancer API only. A Balancer is a
// balancer.Balancer that talks only to the balancer.ClientConn it was
// built with (New), so a routing policy can run one per cluster as its
// children; its Config, a serviceconfig.LoadBalancingConfig, comes in
// ClientConnState.BalancerConfig.
//
// # What it does, and after whom
//
// Where the gRFCs leave a choice, the Balancer does what gRPC C-core does;
// the C-core policy each part follows is named below.
//
//	part                 behaviour                                                       after C-core's
//	priorities           the EDS priorities of every leaf, flattened in leaf order        priority, cds
//	                     (leaf 1's p0, p1, ..., then leaf 2's); a leaf without
//	                     endpoints counts as one failing priority
//	choosing             the first priority READY or IDLE, or still within its failover    priority
//	                     timer, starting priorities on the way; else the first
//	                     CONNECTING; else the last. A higher priority that becomes
//	                     READY again is used again at once
//	failover timer       FailoverTimeout (10 s) from a priority's start, or from its       priority
//	                     going CONNECTING after READY or IDLE; if it fires first, the
//	                     priority counts as failing
//	retention            a started priority below the one in use stays connected for      priority
//	                     Retention (15 min), then is closed
//	endpoints            only HEALTHY and UNKNOWN ones; one pick_first per endpoint       round_robin
//	                     (all its addresses), under grpc-go's endpointsharding
//	localities           weighted round robin over the READY localities of the          weighted_round_robin's
//	                     priority, by locality weight (a lock-free stride schedule)     static stride scheduler
//	                     or, for weights so skewed that a stride pick would skip       (weighted_target's
//	                     more than 16 entries on average, a random draw found by       binary search)
//	                     binary search
//	within a locality    round robin over its READY endpoints                            round_robin
//	drops                each drop_overloads category drawn in order at every pick,      xds_cluster_impl
//	                     before anything else, whatever the state of the endpoints
//	circuit breaking     at most max_requests RPCs in flight per cluster and EDS         xds_cluster_impl
//	                     service name, counted across every Balancer sharing Counters
//	load reports         per locality: calls started, succeeded, failed, in progress,    xds_cluster_impl
//	                     named ORCA metrics; drops by category, circuit-breaking drops
//	                     without one
//	re-resolution        endpoints of LOGICAL_DNS clusters may ask the resolver to       cds
//	                     resolve again; those of EDS clusters may not
//
// The circuit breaker counts an RPC from its pick to its end (grpc-go has
// no call-start event); C-core checks the limit at the pick and counts from
// the call's start. A pick whose RPC never starts ends its count at once
// (see below). Unlike C-core, which keeps a priority removed from the
// configuration for the retention time, a Config update closes at once
// the connections to endpoints it no longer has. Endpoint weights and the
// Cluster's LB policy are not used: every cluster is balanced with
// locality-weighted round robin.
//
// # Statuses
//
// The Balancer never fails an RPC with INVALID_ARGUMENT or NOT_FOUND
// (gRFC A54). Every failure is UNAVAILABLE; the messages name the leaf
// cluster, and those of a cluster with no usable endpoint end with its
// resolution note (gRFC A88):
//
//	situation                        message                                                               RPC
//	drop_overloads category          cluster "c1": dropped by drop_overloads category "lb"                 fails, even wait-for-ready
//	max_requests in flight           cluster "c1": circuit breaking: max_requests 100 reached              fails, even wait-for-ready
//	every endpoint failing           cluster "c1": all endpoints failing: last error: ...; NOTE            fails, unless wait-for-ready
//	endpoints could not be had       cluster "c1": endpoints not available; NOTE                          fails, unless wait-for-ready
//	an EDS resource without any      cluster "c1": no endpoints; NOTE                                      fails, unless wait-for-ready
//	no HEALTHY or UNKNOWN endpoint   cluster "c1": priority 0: none of its 3 endpoints is HEALTHY ...; NOTE  fails, unless wait-for-ready
//	the leaf's Cluster failed        cluster "c1": <its error>; NOTE                                       fails, unless wait-for-ready
//	a transport_socket (TLS)         cluster "c1": its transport_socket asks for TLS ...; NOTE             fails, even wait-for-ready
//	connecting                       -                                                                     waits
//
// A leaf of an aggregate cluster is named `cluster "c1" (of aggregate
// cluster "agg")`. When every priority fails, the message is that of the
// last one, as C-core delegates to the last priority.
//
// # The status of an RPC that gRPC-Go does not report
//
// The load reports, outlier detection (gRFC A50) and the CallFinished
// hook count each RPC with the status it ended with, as C-core reports
// statuses to its policies. gRPC-Go (seen in v1.85.0) gives some failed
// attempts' Done no error, as for success: a server's Trailers-Only answer
// (an unknown method, an RPC refused on its headers) that closes the
// stream before the request is written (package internal/rpcstatus). No
// field of DoneInfo tells such an attempt from one that succeeded. When
// the RPC's interceptors follow it (xdsgrpc.DialOptions; a
// callctx.Call that Holds), an attempt that ends without an error is held
// in its Call and counted once the interceptors learn its status: the
// RPC's when it ends (at once for an RPC that succeeded), the one a retry
// was made for, or, when another attempt is picked first, UNAVAILABLE if
// the server sent nothing on it (gRPC-Go's transparent retries) and
// UNKNOWN otherwise, never OK; its circuit breaker count ends with the
// attempt. Without the interceptors (the default registration of the
// "xdslens" scheme), nothing learns the status, and such an attempt
// counts as a success.
//
// # A pick that never started
//
// gRPC-Go (seen in v1.85.0) may find the connection a pick returned no
// longer READY when it takes it (it went down after the picker was
// made): it ends the pick with an empty DoneInfo (no error, nothing
// sent) and picks again once a new picker comes. Such a pick is not a
// call: its circuit breaker count ends, and it counts in no load report
// (lrs.ClusterLoad.CallNotStarted takes its CallStarted back), not in
// outlier detection and not in the CallFinished hook, as in C-core,
// which queues a pick whose connection is gone and starts the call
// tracker of a pick (xds_cluster_impl's counts and outlier detection's)
// only once the call has a connection. The CallStarted hook has reported
// the pick already. gRPC-Go's own cluster_impl and outlier detection
// count it as a call that succeeded. An attempt that started always has
// DoneInfo.BytesSent set, or an error.
//
// # Observing
//
// Hooks report each pick outcome (dropped, refused by the circuit breaker,
// no endpoint, endpoint picked, call finished) with the route-level and leaf
// cluster and the locality; a nil hook costs one comparison. Counters.All
// reads the in-flight requests against max_requests, for a gauge. An RPC
// whose context carries a Recorder (WithRecorder) learns which leaf
// cluster and locality took it.
//
// # Cost
//
// Picking a READY endpoint, and the Done func of the RPC (load report,
// counter, hook), allocate nothing: each connection's Done func is built
// when its leaf changes, and the Done funcs of the RPCs whose attempts are
// held are kept in a pool of their leaf, each made once. See
// BenchmarkPick, BenchmarkPickHeld, TestPickAllocs and
// TestPickAllocsHeld.
//
// # Concurrency
//
// The Balancer's state changes on one goroutine of its own, which runs,
// in order, the calls of its ClientConn-facing methods, the states its
// children report and its timers; the methods wait for their turn to
// finish. Close stops that goroutine and every timer before it returns.
// Pickers are immutable and safe for concurrent use.
package clusterlb
