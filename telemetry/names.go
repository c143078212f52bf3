package telemetry

// Names of the instruments. The first five are gRFC A78's XdsClient
// metrics; the others are this library's own, under xdslens.xds_client.
const (
	// MetricConnected is an Int64ObservableGauge, unit {bool}, labels
	// grpc.target and grpc.xds.server: 1 while the client has a working ADS
	// stream to the server, else 0 (gRFC A78).
	MetricConnected = "grpc.xds_client.connected"
	// MetricServerFailure is an Int64Counter, unit {failure}, labels
	// grpc.target and grpc.xds.server: healthy → unhealthy transitions of
	// a server as gRFC A57 defines them.
	MetricServerFailure = "grpc.xds_client.server_failure"
	// MetricResourceUpdatesValid is an Int64Counter, unit {resource}, labels
	// grpc.target, grpc.xds.server and grpc.xds.resource_type: resources
	// received that passed validation, unchanged ones included.
	MetricResourceUpdatesValid = "grpc.xds_client.resource_updates_valid"
	// MetricResourceUpdatesInvalid is an Int64Counter, unit {resource},
	// labels grpc.target, grpc.xds.server and grpc.xds.resource_type:
	// resources received that failed validation, and TP3 errors.
	MetricResourceUpdatesInvalid = "grpc.xds_client.resource_updates_invalid"
	// MetricResources is an Int64ObservableGauge, unit {resource}, labels
	// grpc.target, grpc.xds.authority, grpc.xds.cache_state and
	// grpc.xds.resource_type: the number of cache entries with those
	// labels. Label sets whose count is zero are not reported.
	MetricResources = "grpc.xds_client.resources"

	// MetricResourceFetchDuration is a Float64Histogram, unit s, labels
	// grpc.target, grpc.xds.server, grpc.xds.resource_type and outcome: the
	// time from a subscription being sent on a READY stream to the first
	// answer for it. See the package documentation for the outcomes.
	MetricResourceFetchDuration = "xdslens.xds_client.resource_fetch_duration"
	// MetricResourceFetches is an Int64Counter, unit {fetch}, labels
	// grpc.target, grpc.xds.server, grpc.xds.resource_type and outcome:
	// the fetches that MetricResourceFetchDuration measures, counted by
	// outcome. Its series exist at zero from the first watch of a type on
	// a server, which a histogram's cannot (an OpenTelemetry histogram
	// point is born with its first observation), so that increase() shows
	// a single fetch of each outcome.
	MetricResourceFetches = "xdslens.xds_client.resource_fetches"
	// MetricAuthorityServer is an Int64ObservableGauge, unit {server},
	// labels grpc.target, grpc.xds.authority and grpc.xds.server: 1 for the
	// server each authority uses now. The series of a server the authority
	// left goes away.
	MetricAuthorityServer = "xdslens.xds_client.authority_server"
	// MetricWatcherNotifications is an Int64ObservableCounter, unit
	// {notification}, labels grpc.target, grpc.xds.resource_type and kind
	// (resource, resource_error, ambient_error): watcher callbacks made.
	MetricWatcherNotifications = "xdslens.xds_client.watcher_notifications"
	// MetricStreamsStarted is an Int64Counter, unit {stream}, labels
	// grpc.target and grpc.xds.server: ADS streams created.
	MetricStreamsStarted = "xdslens.xds_client.streams_started"
	// MetricStreamsStartFailed is an Int64Counter, unit {stream}, labels
	// grpc.target and grpc.xds.server: ADS streams that could not be
	// created (the channel was not connected). They are neither started
	// nor ended.
	MetricStreamsStartFailed = "xdslens.xds_client.streams_start_failed"
	// MetricStreamsEnded is an Int64Counter, unit {stream}, labels
	// grpc.target, grpc.xds.server and response_received ("true" or
	// "false"): ADS streams that ended, by whether any response was read on
	// them. An end with response_received="false" is a gRFC A57 failure.
	// MetricStreamsStarted minus MetricStreamsEnded is the number of open
	// streams.
	MetricStreamsEnded = "xdslens.xds_client.streams_ended"

	// MetricLRSStreamsStarted is an Int64Counter, unit {stream}, labels
	// grpc.target and grpc.xds.server: LRS (load reporting) streams
	// created.
	MetricLRSStreamsStarted = "xdslens.xds_client.lrs_streams_started"
	// MetricLRSStreamsStartFailed is an Int64Counter, unit {stream},
	// labels grpc.target and grpc.xds.server: LRS stream attempts that
	// could not create a stream.
	MetricLRSStreamsStartFailed = "xdslens.xds_client.lrs_streams_start_failed"
	// MetricLRSStreamsEnded is an Int64Counter, unit {stream}, labels
	// grpc.target, grpc.xds.server and response_received: LRS streams
	// that ended, by whether a valid LoadStatsResponse was read.
	// MetricLRSStreamsStarted minus MetricLRSStreamsEnded is the number of
	// open streams.
	MetricLRSStreamsEnded = "xdslens.xds_client.lrs_streams_ended"
	// MetricLRSStreamFailures is an Int64Counter, unit {failure}, labels
	// grpc.target and grpc.xds.server: LRS stream attempts that failed
	// before a valid LoadStatsResponse (the stream could not be created,
	// or it ended without one), when load reporting was not stopped. Each
	// is followed by a retry after a backoff, and the client logs it (a
	// warning for the first of a cause). The alert
	// XdsClientLoadReportingFailing reads it.
	MetricLRSStreamFailures = "xdslens.xds_client.lrs_stream_failures"
	// MetricLRSReports is an Int64Counter, unit {report}, labels
	// grpc.target and grpc.xds.server: load reports written to LRS streams.
	MetricLRSReports = "xdslens.xds_client.lrs_reports"
	// MetricLRSCalls is an Int64Counter, unit {call}, labels grpc.target,
	// grpc.xds.server and kind (issued, succeeded, errored, dropped): the
	// calls that the load reports sent carried.
	MetricLRSCalls = "xdslens.xds_client.lrs_calls"
)

// Attribute keys (metric labels).
const (
	// KeyTarget is the client's target: the pool key, "#server" for
	// xDS-enabled servers.
	KeyTarget = "grpc.target"
	// KeyServer is the xDS server's URI from the bootstrap, as shown:
	// any user info, query and fragment replaced by "[redacted]"
	// (bootstrap.ServerConfig.ShownURI).
	KeyServer = "grpc.xds.server"
	// KeyAuthority is the xDS authority of a resource name, "#old" for
	// names that are not xdstp:// names.
	KeyAuthority = "grpc.xds.authority"
	// KeyCacheState is one of the nine cache state values of gRFC A78 and
	// A88 (see xdsclient.CacheState.MetricLabel).
	KeyCacheState = "grpc.xds.cache_state"
	// KeyResourceType is the resource type URL without
	// "type.googleapis.com/", for example envoy.config.cluster.v3.Cluster.
	KeyResourceType = "grpc.xds.resource_type"
	// KeyPriority is the index of a server in its authority's list: 0 for
	// the primary, more on fallback (gRFC A71).
	KeyPriority = "priority"
	// KeyOutcome is the outcome of a resource fetch (Outcome* values).
	KeyOutcome = "outcome"
	// KeyKind is the kind of a watcher notification: resource,
	// resource_error or ambient_error (xdsclient.NotificationKind.String);
	// for MetricLRSCalls, the kind of call: issued, succeeded, errored or
	// dropped.
	KeyKind = "kind"
	// KeyResponseReceived tells whether an ended ADS stream had read a
	// response: "true" or "false".
	KeyResponseReceived = "response_received"
)

// Outcomes of a resource fetch, the values of the outcome label of
// MetricResourceFetchDuration.
const (
	// OutcomeACKed: a valid resource arrived.
	OutcomeACKed = "acked"
	// OutcomeNACKed: the resource arrived and failed validation.
	OutcomeNACKed = "nacked"
	// OutcomeReceivedError: the server sent a TP3 error for the resource.
	OutcomeReceivedError = "received_error"
	// OutcomeDoesNotExist: the does-not-exist timer fired.
	OutcomeDoesNotExist = "does_not_exist"
	// OutcomeTimeout: the timer fired on a server with
	// resource_timer_is_transient_error.
	OutcomeTimeout = "timeout"
	// OutcomeInterrupted: the stream broke (or the channel left READY)
	// before any answer; the duration is up to that moment.
	OutcomeInterrupted = "interrupted"
)

// Instrument descriptions. The A78 ones are those registered by gRPC's
// reference implementations.
const (
	descConnected      = "Whether or not the xDS client currently has a working ADS stream to the xDS server."
	descServerFailure  = "A counter of xDS servers going from healthy to unhealthy. A server goes unhealthy when we have a connectivity failure or when the ADS stream fails without seeing a response message, as per gRFC A57."
	descValid          = "A counter of resources received that were considered valid. The counter will be incremented even for resources that have not changed."
	descInvalid        = "A counter of resources received that were considered invalid."
	descResources      = "Number of xDS resources."
	descFetchDuration  = "Time from a resource subscription being sent on a READY ADS stream to the first answer for it: the resource, an error from the server, or the does-not-exist timer."
	descAuthority      = "1 for the xDS server that each authority currently uses."
	descNotifications  = "A counter of watcher callbacks, by kind."
	descStreamsStarted = "A counter of ADS streams created."
	descStreamsEnded   = "A counter of ADS streams that ended, by whether a response was received on them."
	descFetches        = "A counter of resource fetches (subscriptions sent on a READY ADS stream) by how they ended."

	descStreamsStartFailed    = "A counter of ADS streams that could not be created."
	descLRSStreamsStartFailed = "A counter of LRS stream attempts that could not create a stream."

	descLRSStreamsStarted = "A counter of LRS (load reporting) streams created."
	descLRSStreamsEnded   = "A counter of LRS streams that ended, by whether a valid LoadStatsResponse was received on them."
	descLRSReports        = "A counter of load reports sent on LRS streams."
	descLRSFailures       = "A counter of LRS stream attempts that failed before a valid LoadStatsResponse, while load reporting was not stopped."
	descLRSCalls          = "A counter of the calls carried by the load reports sent, by kind: issued, succeeded, errored, dropped."
)

// fetchBuckets are the bucket boundaries, in seconds, of
// MetricResourceFetchDuration: 1ms to 60s, with the default does-not-exist
// timers (15s, and 30s for resource_timer_is_transient_error) as
// boundaries.
var fetchBuckets = []float64{
	0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5,
	1, 2.5, 5, 10, 15, 20, 30, 45, 60,
}
