package dashboards

// Prometheus names of the series the dashboards and alerts read: the
// OpenTelemetry instruments of package telemetry after the default
// OpenTelemetry to Prometheus translation (dots become underscores,
// counters get _total, a histogram in seconds gets _seconds).
const (
	// MetricConnected is the gRFC A78 gauge grpc.xds_client.connected: 1
	// while the client has a working ADS stream to a server, else 0.
	MetricConnected = "grpc_xds_client_connected"
	// MetricServerFailures is the gRFC A78 counter
	// grpc.xds_client.server_failure: healthy to unhealthy transitions of
	// a server.
	MetricServerFailures = "grpc_xds_client_server_failure_total"
	// MetricUpdatesValid is the gRFC A78 counter
	// grpc.xds_client.resource_updates_valid.
	MetricUpdatesValid = "grpc_xds_client_resource_updates_valid_total"
	// MetricUpdatesInvalid is the gRFC A78 counter
	// grpc.xds_client.resource_updates_invalid.
	MetricUpdatesInvalid = "grpc_xds_client_resource_updates_invalid_total"
	// MetricResources is the gRFC A78 gauge grpc.xds_client.resources:
	// cache entries by authority, resource type and cache state.
	MetricResources = "grpc_xds_client_resources"

	// MetricFetchDuration is the name stem of the histogram
	// xdslens.xds_client.resource_fetch_duration: seconds from a
	// subscription sent on a ready stream to the first answer for it.
	// Prometheus stores it as the _bucket, _sum and _count series.
	MetricFetchDuration = "xdslens_xds_client_resource_fetch_duration_seconds"
	// MetricAuthorityServer is the gauge xdslens.xds_client.authority_server:
	// 1 for the server an authority uses.
	MetricAuthorityServer = "xdslens_xds_client_authority_server"
	// MetricWatcherNotifications is the counter
	// xdslens.xds_client.watcher_notifications, by kind of callback.
	MetricWatcherNotifications = "xdslens_xds_client_watcher_notifications_total"
	// MetricStreamsStarted is the counter xdslens.xds_client.streams_started:
	// ADS streams created.
	MetricStreamsStarted = "xdslens_xds_client_streams_started_total"
	// MetricStreamsEnded is the counter xdslens.xds_client.streams_ended:
	// ADS streams that ended, by [LabelResponseReceived].
	MetricStreamsEnded = "xdslens_xds_client_streams_ended_total"
	// MetricStreamsStartFailed is the counter
	// xdslens.xds_client.streams_start_failed: ADS streams that could not
	// be created. [MetricStreamsStarted] minus [MetricStreamsEnded] is the
	// number of open streams.
	MetricStreamsStartFailed = "xdslens_xds_client_streams_start_failed_total"
	// MetricFetches is the counter xdslens.xds_client.resource_fetches:
	// the fetches of [MetricFetchDuration], by [LabelOutcome], with series
	// at zero from a type's first watch.
	MetricFetches = "xdslens_xds_client_resource_fetches_total"

	// MetricLRSReports is the counter xdslens.xds_client.lrs_reports: load
	// reports sent on LRS streams.
	MetricLRSReports = "xdslens_xds_client_lrs_reports_total"
	// MetricLRSCalls is the counter xdslens.xds_client.lrs_calls: the calls
	// the load reports carried, by [LabelKind] (issued, succeeded, errored,
	// dropped).
	MetricLRSCalls = "xdslens_xds_client_lrs_calls_total"
	// MetricLRSStreamsStarted is the counter
	// xdslens.xds_client.lrs_streams_started: LRS streams created.
	MetricLRSStreamsStarted = "xdslens_xds_client_lrs_streams_started_total"
	// MetricLRSStreamsEnded is the counter
	// xdslens.xds_client.lrs_streams_ended: LRS streams that ended, by
	// [LabelResponseReceived].
	MetricLRSStreamsEnded = "xdslens_xds_client_lrs_streams_ended_total"
	// MetricLRSStreamsStartFailed is the counter
	// xdslens.xds_client.lrs_streams_start_failed: LRS stream attempts
	// that could not create a stream.
	MetricLRSStreamsStartFailed = "xdslens_xds_client_lrs_streams_start_failed_total"
	// MetricLRSStreamFailures is the counter
	// xdslens.xds_client.lrs_stream_failures: LRS stream attempts that
	// failed before a valid response, created or not, those ended by a
	// release or Close left out.
	MetricLRSStreamFailures = "xdslens_xds_client_lrs_stream_failures_total"

	// MetricDataPlanePicks is the counter xdslens.data_plane.picks: the
	// outcome of every pick of an xdslens channel that did not wait, by
	// [LabelBackendService] and [LabelOutcome] ([PickOutcomes]).
	MetricDataPlanePicks = "xdslens_data_plane_picks_total"
	// MetricDataPlaneCalls is the counter xdslens.data_plane.calls: RPCs
	// sent to an endpoint, counted when they end, by
	// [LabelBackendService], [LabelLeafCluster] and [LabelStatus].
	MetricDataPlaneCalls = "xdslens_data_plane_calls_total"
	// MetricDataPlaneDrops is the counter xdslens.data_plane.drops: RPCs
	// dropped by a drop_overloads category, by [LabelLeafCluster] and
	// [LabelCategory].
	MetricDataPlaneDrops = "xdslens_data_plane_drops_total"
	// MetricDataPlaneConfigs is the counter
	// xdslens.data_plane.config_updates: configs the channels of a target
	// took and failures of their whole config, by [LabelResult].
	MetricDataPlaneConfigs = "xdslens_data_plane_config_updates_total"
	// MetricDataPlaneInFlight is the gauge xdslens.data_plane.in_flight:
	// RPCs in flight that count against a cluster's max_requests, by
	// [LabelLeafCluster] and [LabelEDSService]; its [LabelTarget] is the
	// xDS client's, whose channels share the circuit breakers.
	MetricDataPlaneInFlight = "xdslens_data_plane_in_flight"
	// MetricDataPlaneMaxRequests is the gauge
	// xdslens.data_plane.max_requests: the cluster's max_requests, with
	// the labels of [MetricDataPlaneInFlight].
	MetricDataPlaneMaxRequests = "xdslens_data_plane_max_requests"
	// MetricDataPlaneEjections is the counter xdslens.data_plane.ejections:
	// endpoints outlier detection ejected (gRFC A50), by
	// [LabelBackendService] (the leaf cluster) and [LabelAlgorithm]. A
	// series is born with its first ejection.
	MetricDataPlaneEjections = "xdslens_data_plane_ejections_total"
	// MetricDataPlaneEjectedEndpoints is the gauge
	// xdslens.data_plane.ejected_endpoints: a leaf cluster's endpoints
	// ejected now, in one channel, by [LabelBackendService] (the leaf
	// cluster), as of its last ejection or return (no series before the
	// first ejection).
	MetricDataPlaneEjectedEndpoints = "xdslens_data_plane_ejected_endpoints"
	// MetricDataPlaneOutlierEndpoints is the gauge
	// xdslens.data_plane.outlier_detection_endpoints: the endpoints of the
	// leaf cluster under outlier detection, with the labels and the
	// moments of [MetricDataPlaneEjectedEndpoints]; 0 once the cluster's
	// outlier detection is off.
	MetricDataPlaneOutlierEndpoints = "xdslens_data_plane_outlier_detection_endpoints"
	// MetricDataPlaneRetries is the counter xdslens.data_plane.retries:
	// attempts made again under a route's retry_policy (gRFC A44), by
	// [LabelBackendService] (the cluster the route chose) and
	// [LabelStatus], the code of the attempt that failed. A series is born
	// with its first retry.
	MetricDataPlaneRetries = "xdslens_data_plane_retries_total"
	// MetricDataPlaneFaults is the counter xdslens.data_plane.faults: the
	// faults the fault injection filter put on RPCs (gRFC A33), by
	// [LabelBackendService] and [LabelFault]. A series is born with its
	// first fault.
	MetricDataPlaneFaults = "xdslens_data_plane_faults_total"

	// MetricPickFirstAttemptsSucceeded, MetricPickFirstAttemptsFailed and
	// MetricPickFirstDisconnections are gRFC A78's pick_first counters
	// grpc.lb.pick_first.connection_attempts_succeeded, ..._failed and
	// grpc.lb.pick_first.disconnections, counted for the connections of
	// every endpoint policy of the channels, by [LabelBackendService]
	// (the leaf cluster) and [LabelLocality].
	MetricPickFirstAttemptsSucceeded = "grpc_lb_pick_first_connection_attempts_succeeded_total"
	MetricPickFirstAttemptsFailed    = "grpc_lb_pick_first_connection_attempts_failed_total"
	MetricPickFirstDisconnections    = "grpc_lb_pick_first_disconnections_total"
	// MetricWRREndpointWeights is gRFC A78's histogram
	// grpc.lb.wrr.endpoint_weights: the weight of each endpoint of a
	// weighted_round_robin policy at each scheduler update (0 when it has
	// none usable yet), by [LabelBackendService] and [LabelLocality].
	MetricWRREndpointWeights = "grpc_lb_wrr_endpoint_weights"
	// MetricWRRRRFallback is gRFC A78's counter grpc.lb.wrr.rr_fallback:
	// scheduler updates of weighted_round_robin with too few usable
	// weights, which balanced as round_robin.
	MetricWRRRRFallback = "grpc_lb_wrr_rr_fallback_total"
)

// Prometheus label names of those series.
const (
	// LabelTarget is grpc.target: the xDS client's target (its pool key),
	// on every series, the data plane's included, whose channels route with
	// that client. It is the channel's target too unless the channel
	// shares the client of another target (xdsgrpc.WithPoolTarget): see
	// [LabelChannelTarget].
	LabelTarget = "grpc_target"
	// LabelChannelTarget is xdslens.channel_target: the channel's own
	// target, on the data-plane series of one channel (all but the
	// circuit-breaker gauges, which the channels of a client share).
	LabelChannelTarget = "xdslens_channel_target"
	// LabelServer is grpc.xds.server: the server URI from the bootstrap.
	LabelServer = "grpc_xds_server"
	// LabelAuthority is grpc.xds.authority: "#old" for old-style names,
	// else the xdstp:// authority.
	LabelAuthority = "grpc_xds_authority"
	// LabelResourceType is grpc.xds.resource_type, such as
	// envoy.config.cluster.v3.Cluster.
	LabelResourceType = "grpc_xds_resource_type"
	// LabelCacheState is grpc.xds.cache_state; its values are
	// [CacheStates].
	LabelCacheState = "grpc_xds_cache_state"
	// LabelOutcome is the outcome of a fetch on [MetricFetchDuration]: the
	// state the entry left requested for (acked, nacked, received_error),
	// does_not_exist or timeout when the timer fired, interrupted when the
	// stream broke first; on [MetricDataPlanePicks], the outcome of a pick
	// ([PickOutcomes]).
	LabelOutcome = "outcome"
	// LabelKind is the kind of callback on [MetricWatcherNotifications]:
	// resource, resource_error or ambient_error; on [MetricLRSCalls], the
	// kind of call: issued, succeeded, errored or dropped.
	LabelKind = "kind"
	// LabelResponseReceived tells on [MetricStreamsEnded] and
	// [MetricLRSStreamsEnded] whether the stream had read a response:
	// "true" or "false" (for ADS, a gRFC A57 failure).
	LabelResponseReceived = "response_received"
	// LabelPriority is the index of the server in its authority's server
	// list on [MetricAuthorityServer] ("0" is the primary).
	LabelPriority = "priority"
	// LabelBackendService is grpc.lb.backend_service on the data-plane
	// series: the cluster a route chose (for an aggregate cluster, the
	// aggregate), "" when none was.
	LabelBackendService = "grpc_lb_backend_service"
	// LabelLocality is grpc.lb.locality on the load-balancing series:
	// {region="r", zone="z", sub_zone="s"}.
	LabelLocality = "grpc_lb_locality"
	// LabelLeafCluster is xdslens.leaf_cluster: the EDS or LOGICAL_DNS
	// cluster of the endpoint (or of the drop, or of the circuit breaker).
	LabelLeafCluster = "xdslens_leaf_cluster"
	// LabelEDSService is xdslens.eds_service: the EDS service name of a
	// circuit breaker.
	LabelEDSService = "xdslens_eds_service"
	// LabelStatus is grpc.status on [MetricDataPlaneCalls]: the status
	// code name the RPC ended with, such as OK or UNAVAILABLE; on
	// [MetricDataPlaneRetries], that of the attempt that was retried.
	LabelStatus = "grpc_status"
	// LabelCategory is the drop_overloads category on
	// [MetricDataPlaneDrops].
	LabelCategory = "category"
	// LabelResult is config or error on [MetricDataPlaneConfigs].
	LabelResult = "result"
	// LabelAlgorithm is xdslens.algorithm on [MetricDataPlaneEjections]:
	// the outlier detection algorithm that ejected the endpoint,
	// success_rate or failure_percentage.
	LabelAlgorithm = "xdslens_algorithm"
	// LabelFault is xdslens.fault on [MetricDataPlaneFaults]: delay or
	// abort.
	LabelFault = "xdslens_fault"
	// LabelScopeName and LabelScopeVersion are the OpenTelemetry
	// instrumentation scope that the exporter adds to every series. The
	// rules and dashboards aggregate them away: they say nothing about the
	// client, and the version changes with the library's.
	LabelScopeName    = "otel_scope_name"
	LabelScopeVersion = "otel_scope_version"
)

// PickOutcomes are the values of [LabelOutcome] on
// [MetricDataPlanePicks]: sent, then every way a pick fails an RPC.
var PickOutcomes = []string{
	"sent",
	"no_route",
	"unsupported_action",
	"cluster_error",
	"config_error",
	"no_endpoint",
	"dropped",
	"overloaded",
}

// controlPlaneOutcomes are the pick outcomes that fail an RPC for a
// cause in the configuration or its endpoints, not a decision of the
// control plane to shed load (dropped, overloaded).
const controlPlaneOutcomes = "no_route|unsupported_action|cluster_error|config_error|no_endpoint"

// PickOutcomeColor returns the Grafana color the data-plane panels draw a
// pick outcome in: sent green, and one color per failure (config_error
// red, cluster_error purple, no_route orange, unsupported_action yellow,
// no_endpoint dark red, dropped blue, overloaded dark orange). It returns
// "" for an outcome it does not know.
func PickOutcomeColor(outcome string) string {
	switch outcome {
	case "sent":
		return "green"
	case "config_error":
		return "red"
	case "cluster_error":
		return "purple"
	case "no_route":
		return "orange"
	case "unsupported_action":
		return "yellow"
	case "no_endpoint":
		return "dark-red"
	case "dropped":
		return "blue"
	case "overloaded":
		return "dark-orange"
	}
	return ""
}

// Fetch outcomes, values of [LabelOutcome].
const (
	// outcomesAnswered matches the fetches the server answered: the
	// resource arrived (valid or not) or the server sent an error for it.
	outcomesAnswered = "acked|nacked|received_error"
)

// CacheStates are the values of [LabelCacheState] (gRFC A78 with the gRFC
// A88 additions), in the order the dashboards list them: the healthy state
// first, then the states that need attention.
var CacheStates = []string{
	"acked",
	"requested",
	"does_not_exist",
	"does_not_exist_but_cached",
	"timeout",
	"nacked",
	"nacked_but_cached",
	"received_error",
	"received_error_but_cached",
}

// CacheStateColor returns the Grafana color every panel draws the cache
// state in: green for acked, blue for requested, and one hue per error
// (red nacked, purple received_error, orange does_not_exist, yellow
// timeout), lighter for the _but_cached variant that still serves an
// older resource. It returns "" for a state it does not know.
func CacheStateColor(state string) string {
	switch state {
	case "acked":
		return "green"
	case "requested":
		return "blue"
	case "nacked":
		return "red"
	case "nacked_but_cached":
		return "super-light-red"
	case "received_error":
		return "purple"
	case "received_error_but_cached":
		return "super-light-purple"
	case "does_not_exist":
		return "orange"
	case "does_not_exist_but_cached":
		return "super-light-orange"
	case "timeout":
		return "yellow"
	}
	return ""
}
