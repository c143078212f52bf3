// Package telemetry turns the hooks of an xDS client (package xdsclient)
// into OpenTelemetry instruments: the five XdsClient metrics of gRFC A78,
// with gRFC A88's cache states, and a few of this library's own.
//
//	m, err := telemetry.New(client, telemetry.WithMeterProvider(mp))
//	defer m.Close()
//
// New takes a *xdsclient.Client or a *xdsclient.Pool; with a pool, every
// client the pool holds or makes later is observed, and a client's series
// go away when the pool closes it. The instruments are fed by
// xdsclient.Hooks alone, so they show exactly what the client reports.
// Metrics.Shutdown(ctx) is Close bounded by a context, as the OpenTelemetry
// SDK's Shutdown: the Metrics is detached at once, and ctx bounds only the
// wait for a collection in progress, which holds back the unregistering
// of the gauges' callback.
//
// # gRFC A78 instruments
//
//	name                                      kind                  unit        labels
//	grpc.xds_client.connected                 Int64ObservableGauge  {bool}      grpc.target, grpc.xds.server
//	grpc.xds_client.server_failure            Int64Counter          {failure}   grpc.target, grpc.xds.server
//	grpc.xds_client.resource_updates_valid    Int64Counter          {resource}  grpc.target, grpc.xds.server, grpc.xds.resource_type
//	grpc.xds_client.resource_updates_invalid  Int64Counter          {resource}  grpc.target, grpc.xds.server, grpc.xds.resource_type
//	grpc.xds_client.resources                 Int64ObservableGauge  {resource}  grpc.target, grpc.xds.authority, grpc.xds.cache_state, grpc.xds.resource_type
//
// grpc.xds.resource_type is the type URL without "type.googleapis.com/"
// (envoy.config.cluster.v3.Cluster); grpc.xds.authority is "#old" for names
// that are not xdstp:// names; grpc.xds.cache_state is one of requested,
// does_not_exist, does_not_exist_but_cached, acked, nacked,
// nacked_but_cached, received_error, received_error_but_cached, timeout
// (the _but_cached form whenever the entry still holds a resource).
//
// The gauges are observable: the hooks keep a count per label set
// (CacheStateChanged moves an entry from its old label set to its new
// one), and a collection reports those counts, in time proportional to the
// number of label sets whatever the number of cached resources. Label sets
// whose count is zero are not reported.
//
// Every counter series exists, at zero, as soon as its label set is known,
// so that increase() and rate() in Prometheus see its first event (a
// series that appears at 1 has no increase): the series of a server (its
// failures, streams and load reporting) from the client's first channel to
// it, those of a server and resource type (updates and fetches) and those
// of a type (watcher callbacks) from the first watch of a resource of the
// type. A histogram point cannot exist before its first observation in
// OpenTelemetry, so resource_fetch_duration has the counter
// resource_fetches beside it, with the same labels.
//
// # xdslens instruments
//
//	name                                        kind                    unit            labels
//	xdslens.xds_client.resource_fetch_duration  Float64Histogram        s               grpc.target, grpc.xds.server, grpc.xds.resource_type, outcome
//	xdslens.xds_client.resource_fetches         Int64Counter            {fetch}         grpc.target, grpc.xds.server, grpc.xds.resource_type, outcome
//	xdslens.xds_client.authority_server         Int64ObservableGauge    {server}        grpc.target, grpc.xds.authority, grpc.xds.server
//	xdslens.xds_client.watcher_notifications    Int64ObservableCounter  {notification}  grpc.target, grpc.xds.resource_type, kind
//	xdslens.xds_client.streams_started          Int64Counter            {stream}        grpc.target, grpc.xds.server
//	xdslens.xds_client.streams_ended            Int64Counter            {stream}        grpc.target, grpc.xds.server, response_received
//	xdslens.xds_client.streams_start_failed     Int64Counter            {stream}        grpc.target, grpc.xds.server
//	xdslens.xds_client.lrs_streams_started      Int64Counter            {stream}        grpc.target, grpc.xds.server
//	xdslens.xds_client.lrs_streams_start_failed Int64Counter            {stream}        grpc.target, grpc.xds.server
//	xdslens.xds_client.lrs_streams_ended        Int64Counter            {stream}        grpc.target, grpc.xds.server, response_received
//	xdslens.xds_client.lrs_stream_failures      Int64Counter            {failure}       grpc.target, grpc.xds.server
//	xdslens.xds_client.lrs_reports              Int64Counter            {report}        grpc.target, grpc.xds.server
//	xdslens.xds_client.lrs_calls                Int64Counter            {call}          grpc.target, grpc.xds.server, kind
//
// resource_fetch_duration answers "is the control plane slow?". A fetch
// starts when the subscription of an entry that has received nothing goes
// out on a READY stream, which is exactly when the client starts the
// entry's does-not-exist timer (hook ResourceTimerStarted). It ends with
// the first answer:
//
//   - the entry leaves REQUESTED: the outcome is named after the new state,
//     acked, nacked, received_error, does_not_exist or timeout (the last two
//     when the timer fired, so their durations are the timer's length);
//   - the timer stops without an answer and then the stream ends, or the
//     timer starts again (the channel left READY and came back): outcome
//     interrupted, with the time up to the stop;
//   - the timer stops because the watch was cancelled (the entry is
//     removed): nothing is recorded.
//
// grpc.xds.server is the server that answered (after a switch back to a
// higher priority server, gRFC A71, not the one the fetch started on), or
// for interrupted fetches the server whose stream broke. Entries the
// client was already waiting for when the hooks were attached are not
// measured, nor are answers the client applies before it has finished
// sending the subscription (the timer never starts for them). The buckets run from 1ms to 60s and include 15s and
// 30s, the default timers.
//
// authority_server is 1 for the server each authority uses (hook
// AuthorityServerChanged); after a fallback (gRFC A71) the series of the
// server left behind goes away. watcher_notifications counts watcher
// callbacks by kind: resource, resource_error, ambient_error; it is an
// observable counter so that counting a callback is one atomic add.
// streams_ended has response_received="false" for the streams that ended
// before any response, the gRFC A57 failures. A stream that could not be
// created at all (hook StreamStartFailed) counts in streams_start_failed
// alone, so that streams_started minus streams_ended is the number of
// open streams.
//
// The lrs_ instruments follow load reporting (xdsclient.Client.ReportLoad),
// from the hooks LoadReportStreamStarted, LoadReportStreamEnded and
// LoadReportSent. As for ADS, lrs_streams_started minus lrs_streams_ended
// is the number of open streams; an attempt that could not create a
// stream counts in lrs_streams_start_failed; response_received="false"
// marks the streams that ended before a valid LoadStatsResponse (the
// attempts that back off). lrs_stream_failures counts the attempts that
// failed, created or not, before a valid LoadStatsResponse, leaving out
// those that ReportLoad's release or the client's Close ended: each is a
// retry after a backoff, and the client logs it (a warning for the first
// failure of a cause, debug for the retries). The alert
// XdsClientLoadReportingFailing fires on it. The lrs_ series of a server exist from the
// client's first channel to it, since gRPC's clients report load to the
// server that sent the cluster (lrs_server "self"); those of a server the
// client has no xDS channel to appear with its first load report stream
// attempt.
// lrs_calls adds up what the reports sent carried, kind being issued,
// succeeded, errored or dropped: it is the load the server was told of.
//
// # Data plane
//
// The metrics of the gRPC channels that package xdsgrpc routes (picks,
// calls, drops, circuit breakers, load balancing) are package
// telemetry/dataplane's: a program that measures its xDS clients alone
// does not import xdsgrpc, whose import registers the "xdslens" resolver.
//
// # xDS-enabled servers
//
// NewServerMetrics observes an xdsserver.Server through its hooks:
//
//	sm, err := telemetry.NewServerMetrics(srv, telemetry.WithMeterProvider(mp))
//	defer sm.Close()
//
//	name                                      kind                  unit          labels
//	xdslens.xds_server.serving                Int64ObservableGauge  {bool}        xdslens.address, xdslens.listener
//	xdslens.xds_server.serving_mode_changes   Int64Counter          {change}      xdslens.address, mode
//	xdslens.xds_server.connections            Int64ObservableGauge  {connection}  xdslens.address, xdslens.filter_chain
//	xdslens.xds_server.connections_accepted   Int64Counter          {connection}  xdslens.address, xdslens.filter_chain
//	xdslens.xds_server.connections_refused    Int64Counter          {connection}  xdslens.address, reason
//	xdslens.xds_server.connections_drained    Int64Counter          {connection}  xdslens.address, xdslens.filter_chain, reason
//	xdslens.xds_server.drain_forced_closes    Int64Counter          {connection}  xdslens.address, xdslens.filter_chain, reason
//	xdslens.xds_server.handshake_failures     Int64Counter          {handshake}   xdslens.address, xdslens.filter_chain
//	xdslens.xds_server.rbac_decisions         Int64Counter          {decision}    xdslens.address, xdslens.filter_chain, xdslens.rbac.filter, xdslens.rbac.policy, xdslens.rbac.decision
//
// serving is 1 while the address serves (gRFC A36's SERVING), 0 while it
// waits for its Listener or does not serve; its series goes when Serve
// returns. refused counts connections closed as they came (not_serving,
// no_filter_chain), drained those told to go away (listener_changed,
// not_serving), drain_forced_closes the drained connections the server
// closed itself, with their RPCs (goaway_ignored: the client opened a
// stream after the final GOAWAY; grace_time: RPCs still open at the
// drain grace time). An address's serving_mode_changes and
// connections_refused series exist, at zero, from Serve's start, and a
// chain's handshake_failures, connections_drained and
// drain_forced_closes series from its first connection, so that the
// increase of a first event shows. rbac_decisions counts every decision of an
// RBAC filter by the policy that matched ("" when none did) and allow or
// deny. A decision costs one counter addition and no allocation once its
// label set has been seen.
//
// The names are exported as constants (MetricResources, KeyCacheState, ...)
// for use in queries. Package exporters makes MeterProviders for
// Prometheus, OTLP and stdout; through the OpenTelemetry Prometheus
// exporter, grpc.xds_client.resources becomes grpc_xds_client_resources,
// counters get a _total suffix, and grpc.xds.cache_state becomes
// grpc_xds_cache_state.
package telemetry
