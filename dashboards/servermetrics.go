package dashboards

// Prometheus names of the series of xDS-enabled servers
// (telemetry.NewServerMetrics, over package xdsserver).
const (
	// MetricServerServing is the gauge xdslens.xds_server.serving: 1 while
	// an address of an xDS-enabled server serves, 0 while it waits for
	// its Listener or does not serve, by [LabelAddress] and
	// [LabelListener].
	MetricServerServing = "xdslens_xds_server_serving"
	// MetricServerModeChanges is the counter
	// xdslens.xds_server.serving_mode_changes, by [LabelAddress] and
	// [LabelMode].
	MetricServerModeChanges = "xdslens_xds_server_serving_mode_changes_total"
	// MetricServerConnections is the gauge xdslens.xds_server.connections:
	// open connections by [LabelAddress] and [LabelFilterChain].
	MetricServerConnections = "xdslens_xds_server_connections"
	// MetricServerConnectionsAccepted is the counter
	// xdslens.xds_server.connections_accepted, by [LabelAddress] and
	// [LabelFilterChain].
	MetricServerConnectionsAccepted = "xdslens_xds_server_connections_accepted_total"
	// MetricServerConnectionsRefused is the counter
	// xdslens.xds_server.connections_refused, by [LabelAddress] and
	// [LabelReason] (not_serving, no_filter_chain).
	MetricServerConnectionsRefused = "xdslens_xds_server_connections_refused_total"
	// MetricServerConnectionsDrained is the counter
	// xdslens.xds_server.connections_drained, by [LabelAddress],
	// [LabelFilterChain] and [LabelReason] (listener_changed,
	// not_serving).
	MetricServerConnectionsDrained = "xdslens_xds_server_connections_drained_total"
	// MetricServerDrainForcedCloses is the counter
	// xdslens.xds_server.drain_forced_closes: drained connections the
	// server closed with their RPCs, by [LabelAddress],
	// [LabelFilterChain] and [LabelReason] (goaway_ignored, grace_time).
	MetricServerDrainForcedCloses = "xdslens_xds_server_drain_forced_closes_total"
	// MetricServerHandshakeFailures is the counter
	// xdslens.xds_server.handshake_failures, by [LabelAddress] and
	// [LabelFilterChain].
	MetricServerHandshakeFailures = "xdslens_xds_server_handshake_failures_total"
	// MetricServerRBACDecisions is the counter
	// xdslens.xds_server.rbac_decisions, by [LabelAddress],
	// [LabelFilterChain], [LabelRBACFilter], [LabelRBACPolicy] and
	// [LabelRBACDecision].
	MetricServerRBACDecisions = "xdslens_xds_server_rbac_decisions_total"
)

// Prometheus label names of the server series.
const (
	// LabelAddress is xdslens.address: the listening address, host:port.
	LabelAddress = "xdslens_address"
	// LabelListener is xdslens.listener: the Listener resource the
	// address is served by.
	LabelListener = "xdslens_listener"
	// LabelFilterChain is xdslens.filter_chain: the name of the filter
	// chain (absent for an unnamed one).
	LabelFilterChain = "xdslens_filter_chain"
	// LabelMode is the serving mode: SERVING or NOT_SERVING.
	LabelMode = "mode"
	// LabelReason is why a connection was refused (not_serving,
	// no_filter_chain), drained (listener_changed, not_serving) or, once
	// drained, closed by the server (goaway_ignored, grace_time).
	LabelReason = "reason"
	// LabelRBACFilter is xdslens.rbac.filter: the RBAC filter's instance
	// name.
	LabelRBACFilter = "xdslens_rbac_filter"
	// LabelRBACPolicy is xdslens.rbac.policy: the policy that matched
	// (absent when none did).
	LabelRBACPolicy = "xdslens_rbac_policy"
	// LabelRBACDecision is xdslens.rbac.decision: allow or deny.
	LabelRBACDecision = "xdslens_rbac_decision"
)

// RecordServerServing is [MetricServerServing] without the scope labels.
const RecordServerServing = "instance:" + MetricServerServing + ":max"
