// Package dataplane turns the hooks of the gRPC channels that package
// xdsgrpc routes into OpenTelemetry instruments: what becomes of each RPC
// (picks, calls by status, drops), the configs the channels take, their
// circuit breakers, and gRFC A78's load-balancing metrics of their
// endpoint policies.
//
// Give the channels' options a MeterProvider, and every channel they make
// is measured:
//
//	conn, err := grpc.NewClient("xdslens:///payments", append(
//		xdsgrpc.DialOptions(pool, dataplane.WithMeterProvider(mp)),
//		grpc.WithTransportCredentials(creds))...)
//
// WithMeterProvider is an xdsgrpc.Option, for DialOptions and NewBuilder
// alike. New attaches the instruments to a Builder that exists already,
// until Close. Package telemetry measures the xDS clients; this package
// is apart from it so that a program that measures its clients alone does
// not import xdsgrpc, whose import registers the "xdslens" resolver.
//
// # Instruments
//
//	name                              kind                  unit      labels
//	xdslens.data_plane.picks          Int64Counter          {pick}    grpc.target, xdslens.channel_target, grpc.lb.backend_service, outcome
//	xdslens.data_plane.calls          Int64Counter          {call}    grpc.target, xdslens.channel_target, grpc.lb.backend_service, xdslens.leaf_cluster, grpc.status
//	xdslens.data_plane.drops          Int64Counter          {call}    grpc.target, xdslens.channel_target, xdslens.leaf_cluster, category
//	xdslens.data_plane.config_updates Int64Counter          {config}  grpc.target, xdslens.channel_target, result
//	xdslens.data_plane.in_flight      Int64ObservableGauge  {call}    grpc.target, xdslens.leaf_cluster, xdslens.eds_service
//	xdslens.data_plane.max_requests   Int64ObservableGauge  {call}    grpc.target, xdslens.leaf_cluster, xdslens.eds_service
//	xdslens.data_plane.retries        Int64Counter          {attempt} grpc.target, xdslens.channel_target, grpc.lb.backend_service, grpc.status
//	xdslens.data_plane.faults         Int64Counter          {fault}   grpc.target, xdslens.channel_target, grpc.lb.backend_service, xdslens.fault
//	xdslens.data_plane.ejections      Int64Counter          {ejection} grpc.target, xdslens.channel_target, grpc.lb.backend_service, xdslens.algorithm
//	xdslens.data_plane.ejected_endpoints           Int64Gauge  {endpoint}  grpc.target, xdslens.channel_target, grpc.lb.backend_service
//	xdslens.data_plane.outlier_detection_endpoints Int64Gauge  {endpoint}  grpc.target, xdslens.channel_target, grpc.lb.backend_service
//
// grpc.target means one thing on every series: the target of the xDS
// client the channel routes with, its key in the pool
// (xdsgrpc.Builder.ClientTarget), which is also the grpc.target of that
// client's own metrics (package telemetry). It is the channel's own target,
// as in gRPC, unless the Builder shares the client of another target
// (xdsgrpc.WithPoolTarget); xdslens.channel_target is always the channel's
// own, on the series of one channel. The two gauges have no channel: the
// circuit breakers are shared by every channel of one xDS client. So one
// grpc.target selects a client's metrics and those of every channel it
// routes.
//
// picks counts the outcome of every pick that did not wait: sent,
// no_route, unsupported_action, cluster_error, dropped, overloaded
// (circuit breaking), no_endpoint, config_error; grpc.lb.backend_service is
// the cluster the route chose (the aggregate for an aggregate cluster), as
// gRPC's per-call metrics name it. The series of the main outcomes of a
// cluster that a route can choose exist, at zero, from its first config,
// and so do those of every drop category of a cluster's endpoints: the
// increase of a first failure or drop shows; config_updates' two series
// exist from the channel's start. calls counts the RPCs sent to an
// endpoint when they end, by status code, named as gRPC's own metrics name
// it (gRFC A66: OK, UNAVAILABLE, DEADLINE_EXCEEDED), from the
// CallFinished hook: an attempt that gRPC-Go v1.85.0 ends without its
// status (see below) has its real status on channels with
// xdsgrpc.DialOptions' interceptors, and counts OK without them; a pick
// that gRPC-Go finds no longer READY and makes again counts in picks
// (sent) and not in calls. in_flight against
// max_requests shows how close a cluster is to circuit breaking. retries
// counts the attempts made again under a route's retry_policy (gRFC A44)
// by the code of the attempt that failed, faults what the fault injection
// filter did (gRFC A33: delay or abort), ejections the endpoints outlier
// detection ejected (gRFC A50) by algorithm, with the leaf cluster's
// endpoints ejected and under outlier detection as of its last change
// (grpc.lb.backend_service is the leaf cluster there). An RPC
// costs two counter additions and no allocation once its label sets have
// been seen.
//
// # Load-balancing metrics (gRFC A78)
//
//	name                                              kind              unit
//	grpc.lb.pick_first.connection_attempts_succeeded  Int64Counter      {attempt}
//	grpc.lb.pick_first.connection_attempts_failed     Int64Counter      {attempt}
//	grpc.lb.pick_first.disconnections                 Int64Counter      {disconnection}
//	grpc.lb.wrr.rr_fallback                           Float64Counter    (gRPC's)
//	grpc.lb.wrr.endpoint_weight_not_yet_usable        Float64Counter    (gRPC's)
//	grpc.lb.wrr.endpoint_weight_stale                 Float64Counter    (gRPC's)
//	grpc.lb.wrr.endpoint_weights                      Float64Histogram  (gRPC's)
//
// with labels grpc.target, xdslens.channel_target, grpc.lb.backend_service
// (the leaf cluster) and grpc.lb.locality. weighted_round_robin's are
// recorded by gRPC-Go's policy itself, with the names and units gRPC
// registers, and labelled here with the locality and cluster that
// gRPC-Go's policies cannot fill in on channels whose policies are not its
// own. pick_first's are counted from the connections of every endpoint
// policy (each connects with pick_first): connection attempts that
// succeeded (CONNECTING to READY), that failed (CONNECTING to
// TRANSIENT_FAILURE) and disconnections (READY to anything else); the
// three series of a cluster and locality are born together, at zero.
//
// # Retries, faults and ejections
//
//	name                                          kind          unit        labels
//	xdslens.data_plane.retries                    Int64Counter  {attempt}   grpc.target, grpc.lb.backend_service, grpc.status
//	xdslens.data_plane.faults                     Int64Counter  {fault}     grpc.target, grpc.lb.backend_service, xdslens.fault
//	xdslens.data_plane.ejections                  Int64Counter  {ejection}  grpc.target, grpc.lb.backend_service, xdslens.algorithm
//	xdslens.data_plane.ejected_endpoints          Int64Gauge    {endpoint}  grpc.target, grpc.lb.backend_service
//	xdslens.data_plane.outlier_detection_endpoints Int64Gauge   {endpoint}  grpc.target, grpc.lb.backend_service
//
// retries counts the attempts made again under a route's retry_policy
// (gRFC A44), by the code of the attempt that failed; faults the delays
// and aborts of the fault injection filter (gRFC A33); ejections the
// endpoints outlier detection ejected (gRFC A50), by algorithm
// (success_rate, failure_percentage), with grpc.lb.backend_service the
// leaf cluster; the two gauges give a leaf cluster's ejected endpoints
// and those under outlier detection as of its last ejection or return.
//
// Through the OpenTelemetry Prometheus exporter (package exporters),
// xdslens.data_plane.picks becomes xdslens_data_plane_picks_total and
// grpc.lb.backend_service becomes grpc_lb_backend_service; package
// dashboards draws them.
//
// # Per-call metrics and traces
//
// WithPerCallMetrics records gRFC A66's per-call instruments
// (grpc.client.attempt.started, grpc.client.attempt.duration, the two
// message-size histograms and grpc.client.call.duration) with A66's
// names, units, buckets and labels, each attempt labelled with the leaf
// cluster and the locality of its last pick (grpc.lb.backend_service,
// gRFC A89; grpc.lb.locality, A78), which gRPC-Go's own OpenTelemetry
// plugin cannot see on an xdslens channel. WithTracerProvider traces each
// RPC with gRFC A72's call and attempt spans, named as gRPC-Go's plugin
// names them, each attempt span carrying the routing decision
// (xdsgrpc.RoutingOf) in the xds namespace (KeyListener ... KeyEndpoint),
// the call span the retries and faults (EventRetry, EventFault), and the
// attempts in flight the ejections of their leaf cluster
// (EventEjection). WithRoutingOnSpans puts the same on the spans of
// gRPC-Go's plugin instead. Both observe a channel through
// xdsgrpc.WithDialOptions: an interceptor outside the data plane's, which
// sees each RPC whole, and a stats.Handler, which sees each attempt; with
// no provider they add nothing. An attempt's grpc.status, and its span's
// status, is the status it ended with, also where gRPC-Go v1.85.0's
// stats.End reports none (a Trailers-Only answer that closed the stream
// before the request was written): it is then taken from what follows
// the attempt: the RPC's status when it was the last attempt, the code a
// route's retry was made for, UNAVAILABLE before a transparent retry, and
// UNKNOWN, never OK, when nothing tells.
package dataplane
