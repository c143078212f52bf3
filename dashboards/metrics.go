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
)

// Prometheus label names of those series.
const (
	// LabelTarget is grpc.target: the client's target (its pool key).
	LabelTarget = "grpc_target"
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
	// stream broke first.
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
	// LabelScopeName and LabelScopeVersion are the OpenTelemetry
	// instrumentation scope that the exporter adds to every series. The
	// rules and dashboards aggregate them away: they say nothing about the
	// client, and the version changes with the library's.
	LabelScopeName    = "otel_scope_name"
	LabelScopeVersion = "otel_scope_version"
)

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
