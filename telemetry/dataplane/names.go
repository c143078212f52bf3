package dataplane

import "google.golang.org/grpc/codes"

// ScopeName is the instrumentation scope of the instruments (the
// otel_scope_name label in Prometheus).
const ScopeName = "github.com/xdslens/xdslens/telemetry/dataplane"

// Names of the data-plane instruments.
const (
	// MetricPicks is an Int64Counter, unit {pick}, labels grpc.target,
	// grpc.lb.backend_service (the cluster the route chose, "" when none
	// was) and outcome (sent, no_route, unsupported_action, cluster_error,
	// dropped, overloaded, no_endpoint, config_error): the outcome of every
	// pick that did not wait for a connection.
	MetricPicks = "xdslens.data_plane.picks"
	// MetricCalls is an Int64Counter, unit {call}, labels grpc.target,
	// grpc.lb.backend_service, xdslens.leaf_cluster (the EDS or LOGICAL_DNS
	// cluster of the endpoint) and grpc.status (the code's name as gRPC's
	// own metrics give it, gRFC A66: OK, UNAVAILABLE, DEADLINE_EXCEEDED...):
	// RPCs sent to an endpoint, counted when they end.
	MetricCalls = "xdslens.data_plane.calls"
	// MetricDrops is an Int64Counter, unit {call}, labels grpc.target,
	// xdslens.leaf_cluster and category: RPCs dropped by a drop_overloads
	// category of the cluster's endpoints. Its series exist, at zero, from
	// the first config that has the category.
	MetricDrops = "xdslens.data_plane.drops"
	// MetricConfigUpdates is an Int64Counter, unit {config}, labels
	// grpc.target and result (config, error): configs the channels took,
	// and failures of their whole config.
	MetricConfigUpdates = "xdslens.data_plane.config_updates"
	// MetricInFlight is an Int64ObservableGauge, unit {call}, labels
	// grpc.target, xdslens.leaf_cluster and xdslens.eds_service: the RPCs in
	// flight that count against the cluster's max_requests. The counters
	// are shared by the channels of one xDS client, so grpc.target is the
	// target of that client in the pool: the channel's own target, or the
	// one xdsgrpc.WithPoolTarget names.
	MetricInFlight = "xdslens.data_plane.in_flight"
	// MetricMaxRequests is an Int64ObservableGauge, unit {call}, with the
	// labels of MetricInFlight: the cluster's max_requests (circuit
	// breaking, gRFC A32).
	MetricMaxRequests = "xdslens.data_plane.max_requests"

	// The load-balancing metrics of gRFC A78: pick_first's, counted for
	// every endpoint policy, and weighted_round_robin's, recorded by
	// gRPC-Go's policy (see the package documentation).
	MetricPickFirstDisconnections              = "grpc.lb.pick_first.disconnections"
	MetricPickFirstConnectionAttemptsSucceeded = "grpc.lb.pick_first.connection_attempts_succeeded"
	MetricPickFirstConnectionAttemptsFailed    = "grpc.lb.pick_first.connection_attempts_failed"
	MetricWRRRRFallback                        = "grpc.lb.wrr.rr_fallback"
	MetricWRREndpointWeightNotYetUsable        = "grpc.lb.wrr.endpoint_weight_not_yet_usable"
	MetricWRREndpointWeightStale               = "grpc.lb.wrr.endpoint_weight_stale"
	MetricWRREndpointWeights                   = "grpc.lb.wrr.endpoint_weights"

	// MetricEjections is an Int64Counter, unit {ejection}: endpoints
	// ejected by outlier detection (gRFC A50), by grpc.target,
	// grpc.lb.backend_service (the leaf cluster) and KeyAlgorithm.
	MetricEjections = "xdslens.data_plane.ejections"
	// MetricEjectedEndpoints and MetricOutlierEndpoints are Int64Gauges,
	// unit {endpoint}: a leaf cluster's endpoints ejected now, and those
	// under outlier detection, as of its last ejection or return; by
	// grpc.target and grpc.lb.backend_service.
	MetricEjectedEndpoints = "xdslens.data_plane.ejected_endpoints"
	MetricOutlierEndpoints = "xdslens.data_plane.outlier_detection_endpoints"
	// MetricRetries is an Int64Counter, unit {attempt}: attempts made
	// again under a route's retry_policy (gRFC A44), by grpc.target,
	// grpc.lb.backend_service and grpc.status (the code of the attempt
	// that failed).
	MetricRetries = "xdslens.data_plane.retries"
	// MetricFaults is an Int64Counter, unit {fault}: faults the fault
	// injection filter put on RPCs (gRFC A33), by grpc.target,
	// grpc.lb.backend_service and KeyFault.
	MetricFaults = "xdslens.data_plane.faults"
)

// Labels of the instruments.
const (
	// KeyTarget is grpc.target (see the package documentation).
	KeyTarget = "grpc.target"
	// KeyBackendService is the cluster, as gRPC's own per-call metrics
	// name it (gRFC A89).
	KeyBackendService = "grpc.lb.backend_service"
	// KeyLocality is the locality label of gRFC A78:
	// {region="r", zone="z", sub_zone="s"}.
	KeyLocality = "grpc.lb.locality"
	// KeyLeafCluster is the EDS or LOGICAL_DNS cluster of an endpoint, a
	// drop or a circuit breaker.
	KeyLeafCluster = "xdslens.leaf_cluster"
	// KeyEDSService is the EDS service name of a circuit breaker.
	KeyEDSService = "xdslens.eds_service"
	// KeyOutcome is the outcome of a pick (xdsgrpc.PickOutcome.String).
	KeyOutcome = "outcome"
	// KeyCategory is a drop_overloads category.
	KeyCategory = "category"
	// KeyStatus is the status code an RPC ended with (StatusName).
	KeyStatus = "grpc.status"
	// KeyResult is config or error, on MetricConfigUpdates.
	KeyResult = "result"
	// KeyAlgorithm is the ejection algorithm of MetricEjections:
	// success_rate or failure_percentage.
	KeyAlgorithm = "xdslens.algorithm"
	// KeyFault is the fault of MetricFaults: delay or abort.
	KeyFault = "xdslens.fault"
)

// statusNames are the status codes as gRPC's own metrics label them
// (grpc.status of gRFC A66): the names of the codes in the gRPC spec.
var statusNames = [...]string{
	codes.OK:                 "OK",
	codes.Canceled:           "CANCELLED",
	codes.Unknown:            "UNKNOWN",
	codes.InvalidArgument:    "INVALID_ARGUMENT",
	codes.DeadlineExceeded:   "DEADLINE_EXCEEDED",
	codes.NotFound:           "NOT_FOUND",
	codes.AlreadyExists:      "ALREADY_EXISTS",
	codes.PermissionDenied:   "PERMISSION_DENIED",
	codes.ResourceExhausted:  "RESOURCE_EXHAUSTED",
	codes.FailedPrecondition: "FAILED_PRECONDITION",
	codes.Aborted:            "ABORTED",
	codes.OutOfRange:         "OUT_OF_RANGE",
	codes.Unimplemented:      "UNIMPLEMENTED",
	codes.Internal:           "INTERNAL",
	codes.Unavailable:        "UNAVAILABLE",
	codes.DataLoss:           "DATA_LOSS",
	codes.Unauthenticated:    "UNAUTHENTICATED",
}

// StatusName returns the name of c as the grpc.status label of
// MetricCalls gives it, and gRPC's own metrics (gRFC A66): the code's
// name in the gRPC spec, such as DEADLINE_EXCEEDED; a code outside gRPC's
// set as codes.Code prints it ("Code(42)").
func StatusName(c codes.Code) string {
	if int(c) < len(statusNames) {
		return statusNames[c]
	}
	return c.String()
}
