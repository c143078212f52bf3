package dashboards

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Alert names of the data plane (the RPCs of xdslens channels), after the
// client's in the rule file.
const (
	// AlertRPCsFailing: RPCs of a channel fail for a cause in the xDS
	// configuration or the endpoints it names.
	AlertRPCsFailing = "XdsClientRPCsFailing"
	// AlertBackendErrors: RPCs a channel sent to a cluster end with a
	// status other than OK, whatever the backends answered.
	AlertBackendErrors = "XdsClientBackendErrors"
	// AlertRPCsDropped: a cluster's drop_overloads drop RPCs of a channel.
	AlertRPCsDropped = "XdsClientRPCsDropped"
	// AlertCircuitBreaking: a cluster's circuit breaker (max_requests)
	// fails RPCs.
	AlertCircuitBreaking = "XdsClientCircuitBreaking"
	// AlertNearMaxRequests: RPCs in flight to a cluster near its
	// max_requests.
	AlertNearMaxRequests = "XdsClientInFlightNearMaxRequests"
	// AlertEndpointsEjected: outlier detection keeps a large share of a
	// cluster's endpoints ejected.
	AlertEndpointsEjected = "XdsClientEndpointsEjected"
)

// DataPlaneAlertOptions are the thresholds of the data-plane alerts, part
// of [AlertOptions].
type DataPlaneAlertOptions struct {
	// RateWindow is the window of the rates the data-plane alerts compare.
	RateWindow time.Duration
	// ShortWindow is the window of a second rate that XdsClientRPCsFailing,
	// XdsClientBackendErrors, XdsClientRPCsDropped and
	// XdsClientCircuitBreaking require above their threshold too: once
	// what an alert is about stops, its short rate falls to zero within
	// ShortWindow, and the alert resolves at the next rule evaluation,
	// where RateWindow alone would keep it firing for most of RateWindow.
	// It must hold two scrapes at least: a 1m window suits scrape
	// intervals of 30s or less.
	ShortWindow time.Duration
	// FailingRatio and FailingFor: XdsClientRPCsFailing fires when more
	// than FailingRatio of a channel's RPCs fail with one outcome at one
	// cluster (no_route, unsupported_action, cluster_error, config_error,
	// no_endpoint) for FailingFor.
	FailingRatio float64
	FailingFor   time.Duration
	// BackendErrorRatio and BackendErrorFor: XdsClientBackendErrors fires
	// when more than BackendErrorRatio of the RPCs a channel sent to a
	// cluster end with a status outside BackendOKStatuses for
	// BackendErrorFor.
	BackendErrorRatio float64
	BackendErrorFor   time.Duration
	// BackendOKStatuses are the grpc_status values XdsClientBackendErrors
	// counts as success: OK, and codes the services answer on purpose
	// (NOT_FOUND for a lookup that finds nothing, say).
	BackendOKStatuses []string
	// DroppedRatio and DroppedFor: XdsClientRPCsDropped fires when more
	// than DroppedRatio of a channel's RPCs are dropped by one category of
	// one cluster for DroppedFor.
	DroppedRatio float64
	DroppedFor   time.Duration
	// CircuitBreakingFor is how long a circuit breaker must keep failing
	// RPCs (some in every RateWindow) before XdsClientCircuitBreaking
	// fires.
	CircuitBreakingFor time.Duration
	// NearMaxRequestsRatio and NearMaxRequestsFor:
	// XdsClientInFlightNearMaxRequests fires when the RPCs in flight to a
	// cluster stay at or above NearMaxRequestsRatio of its max_requests for
	// NearMaxRequestsFor.
	NearMaxRequestsRatio float64
	NearMaxRequestsFor   time.Duration
	// EjectedRatio and EjectedFor: XdsClientEndpointsEjected fires when
	// more than EjectedRatio of the endpoints of a cluster under outlier
	// detection stay ejected in a channel for EjectedFor. The default,
	// 30%, is above what gRFC A50's defaults ever eject: with
	// max_ejection_percent 10 and minimum_hosts 5, outlier detection
	// ejects while fewer than 10% of the endpoints are out, so at most one
	// endpoint of 5 to 10 (20%) and 10 to 20% of a larger cluster. Above
	// 30%, the control plane let it eject more (a higher
	// max_ejection_percent, fewer minimum hosts) and it did: the endpoints
	// left carry a third of the load more, or worse.
	EjectedRatio float64
	EjectedFor   time.Duration
	// EjectedWindow is how far back XdsClientEndpointsEjected looks for
	// the most endpoints ejected: an endpoint whose ejection time is over
	// comes back for an outlier detection interval (10s by default) before
	// it is ejected again if it still fails, which must not restart
	// EjectedFor. It should hold the clusters' interval and two scrapes.
	EjectedWindow time.Duration
}

// defaultDataPlaneAlertOptions are the data-plane thresholds of the
// committed rule file.
func defaultDataPlaneAlertOptions() DataPlaneAlertOptions {
	return DataPlaneAlertOptions{
		RateWindow:           5 * time.Minute,
		ShortWindow:          time.Minute,
		FailingRatio:         0.05,
		FailingFor:           5 * time.Minute,
		BackendErrorRatio:    0.05,
		BackendErrorFor:      5 * time.Minute,
		BackendOKStatuses:    []string{"OK"},
		DroppedRatio:         0.01,
		DroppedFor:           10 * time.Minute,
		CircuitBreakingFor:   5 * time.Minute,
		NearMaxRequestsRatio: 0.9,
		NearMaxRequestsFor:   10 * time.Minute,
		EjectedRatio:         0.3,
		EjectedFor:           5 * time.Minute,
		EjectedWindow:        time.Minute,
	}
}

// channelWhere is the description text that locates a channel.
const channelWhere = "channel {{ $labels.xdslens_channel_target }} of the xDS client {{ $labels.grpc_target }} on {{ $labels.instance }} (job {{ $labels.job }})"

// windows are the two windows of a data-plane alert's rates.
type windows struct{ long, short string }

// both returns cond(long) and cond(short): true where the condition holds
// over the long window and still holds over the short one. The value is
// the long window's.
func (w windows) both(cond func(window string) string) string {
	return "(" + cond(w.long) + ") and (" + cond(w.short) + ")"
}

// dataPlaneRules returns the data-plane alerts of o; s is a selector
// restricted to the job selector.
func dataPlaneRules(o AlertOptions, s func(string, ...string) string, runbook func(string) string) []Rule {
	d := o.DataPlane
	w := windows{promDuration(d.RateWindow), promDuration(d.ShortWindow)}
	rateOf := func(sel, window string) string { return "rate(" + sel + "[" + window + "])" }
	// allPicks is the pick rate of each channel: what a share of RPCs is
	// a share of.
	allPicks := func(window string) string {
		return fmt.Sprintf("sum without (%s, %s, %s, %s) (%s)",
			LabelScopeName, LabelScopeVersion, LabelBackendService, LabelOutcome, rateOf(s(MetricDataPlanePicks), window))
	}
	ratio := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	percent := func(v float64) string { return strconv.FormatFloat(v*100, 'g', -1, 64) + "%" }
	resolves := " It resolves within " + w.short + " of the last failure and one rule evaluation."
	// calls is the increase of the calls of each channel and cluster
	// whose status matches status (any status without it) over window. A
	// status's series is born with its first call, which counts too
	// (increaseFromBirth): a rate would miss the first burst of a new
	// status, and see it a rule evaluation late.
	calls := func(window string, status ...string) string {
		return fmt.Sprintf("sum without (%s, %s, %s, %s) (%s)", LabelScopeName, LabelScopeVersion, LabelLeafCluster, LabelStatus,
			increaseFromBirth(s(MetricDataPlaneCalls, status...), window))
	}
	notOK := LabelStatus + `!~"` + strings.Join(d.BackendOKStatuses, "|") + `"`
	return []Rule{
		{
			// A share of each channel's RPCs, by the cluster and the
			// outcome that failed them.
			Alert: AlertRPCsFailing,
			Expr: w.both(func(window string) string {
				return withoutScope("sum", rateOf(s(MetricDataPlanePicks, LabelOutcome+`=~"`+controlPlaneOutcomes+`"`), window)) +
					" / ignoring (" + LabelBackendService + ", " + LabelOutcome + ") group_left () " + allPicks(window) + " > " + ratio(d.FailingRatio)
			}),
			For:      d.FailingFor,
			Severity: "critical",
			Summary:  "RPCs of {{ $labels.xdslens_channel_target }} fail with {{ $labels.outcome }}",
			Description: "{{ $value | humanizePercentage }} of the RPCs of the xdslens " + channelWhere +
				" fail with outcome {{ $labels.outcome }} at cluster \"{{ $labels.grpc_lb_backend_service }}\" (\"\" when no cluster was chosen), " +
				"above " + percent(d.FailingRatio) + " over " + w.long + " (and over the last " + w.short + ") for more than " + promDuration(d.FailingFor) +
				": the xDS configuration the channel routes by, or the endpoints it names, fail them with UNAVAILABLE " +
				"(config_error: no usable listener or route configuration; no_route: no route matches; unsupported_action: the route cannot forward; " +
				"cluster_error: the cluster's resource failed; no_endpoint: no endpoint of the cluster can take the RPC)." + resolves,
			RunbookURL: runbook(AlertRPCsFailing),
		},
		{
			// The share of the calls of each channel and cluster that
			// ended with another status than the OK ones.
			Alert: AlertBackendErrors,
			Expr: w.both(func(window string) string {
				return calls(window, notOK) + " / " + calls(window) + " > " + ratio(d.BackendErrorRatio)
			}),
			For:      d.BackendErrorFor,
			Severity: "critical",
			Summary:  "RPCs of {{ $labels.xdslens_channel_target }} to cluster {{ $labels.grpc_lb_backend_service }} fail",
			Description: "{{ $value | humanizePercentage }} of the RPCs the xdslens " + channelWhere +
				" sent to cluster {{ $labels.grpc_lb_backend_service }} ended with a status other than " + strings.Join(d.BackendOKStatuses, ", ") +
				", above " + percent(d.BackendErrorRatio) + " over " + w.long + " (and over the last " + w.short + ") for more than " + promDuration(d.BackendErrorFor) +
				": the RPCs reached an endpoint and failed there, or on the way (UNAVAILABLE, DEADLINE_EXCEEDED), " +
				"or the backends answer with an error (UNIMPLEMENTED: they do not serve the method). " +
				"The panel Calls by status code shows which codes." + resolves,
			RunbookURL: runbook(AlertBackendErrors),
		},
		{
			Alert: AlertRPCsDropped,
			Expr: w.both(func(window string) string {
				return withoutScope("sum", rateOf(s(MetricDataPlaneDrops), window)) +
					" / ignoring (" + LabelLeafCluster + ", " + LabelCategory + ") group_left () " + allPicks(window) + " > " + ratio(d.DroppedRatio)
			}),
			For:      d.DroppedFor,
			Severity: "warning",
			Summary:  "Cluster {{ $labels.xdslens_leaf_cluster }} drops RPCs of {{ $labels.xdslens_channel_target }} ({{ $labels.category }})",
			Description: "{{ $value | humanizePercentage }} of the RPCs of the xdslens " + channelWhere +
				" are dropped by the drop_overloads category {{ $labels.category }} of cluster {{ $labels.xdslens_leaf_cluster }}, " +
				"above " + percent(d.DroppedRatio) + " over " + w.long + " (and over the last " + w.short + ") for more than " + promDuration(d.DroppedFor) +
				": the control plane sheds that share of the load; the RPCs fail with UNAVAILABLE before they leave the process.",
			RunbookURL: runbook(AlertRPCsDropped),
		},
		{
			Alert: AlertCircuitBreaking,
			Expr: w.both(func(window string) string {
				return withoutScope("sum", rateOf(s(MetricDataPlanePicks, LabelOutcome+`="overloaded"`), window)) + " > 0"
			}),
			For:      d.CircuitBreakingFor,
			Severity: "warning",
			Summary:  "Circuit breaking fails RPCs of {{ $labels.xdslens_channel_target }} to {{ $labels.grpc_lb_backend_service }}",
			Description: "The circuit breaker of cluster {{ $labels.grpc_lb_backend_service }} has failed RPCs of the xdslens " + channelWhere +
				" for more than " + promDuration(d.CircuitBreakingFor) + " ({{ $value | printf \"%.3g\" }} per second over " + w.long +
				"): the cluster had max_requests RPCs in flight (gRFC A32), and every RPC beyond fails with UNAVAILABLE, wait-for-ready or not.",
			RunbookURL: runbook(AlertCircuitBreaking),
		},
		{
			// The gauges have no channel: the channels of an xDS client
			// share the circuit breakers.
			Alert: AlertNearMaxRequests,
			Expr: withoutScope("max", s(MetricDataPlaneInFlight)) + " / " + withoutScope("max", s(MetricDataPlaneMaxRequests)) +
				" >= " + ratio(d.NearMaxRequestsRatio),
			For:      d.NearMaxRequestsFor,
			Severity: "warning",
			Summary:  "RPCs in flight to {{ $labels.xdslens_leaf_cluster }} near its max_requests",
			Description: "The RPCs in flight to cluster {{ $labels.xdslens_leaf_cluster }} from the channels of the xDS client " +
				"{{ $labels.grpc_target }} on {{ $labels.instance }} (job {{ $labels.job }}) have stayed at {{ $value | humanizePercentage }} " +
				"of the cluster's max_requests or more for more than " + promDuration(d.NearMaxRequestsFor) +
				" (the threshold is " + percent(d.NearMaxRequestsRatio) + "): a little more load and the circuit breaker fails RPCs (gRFC A32).",
			RunbookURL: runbook(AlertNearMaxRequests),
		},
		endpointsEjectedRule(d, s, runbook),
	}
}

// endpointsEjectedRule returns the alert on the share of a cluster's
// endpoints that outlier detection keeps ejected in a channel: the most
// ejected within EjectedWindow over those under outlier detection (none
// once its outlier detection is off), while the channel sends RPCs to
// the cluster.
func endpointsEjectedRule(d DataPlaneAlertOptions, s func(string, ...string) string, runbook func(string) string) Rule {
	window := promDuration(d.EjectedWindow)
	percent := strconv.FormatFloat(d.EjectedRatio*100, 'g', -1, 64) + "%"
	return Rule{
		Alert: AlertEndpointsEjected,
		Expr: withoutScope("max", "max_over_time("+s(MetricDataPlaneEjectedEndpoints)+"["+window+"])") +
			" / " + withoutScope("max", s(MetricDataPlaneOutlierEndpoints)+" > 0") +
			" > " + strconv.FormatFloat(d.EjectedRatio, 'g', -1, 64) +
			" and " + sendingTo(s(MetricDataPlaneCalls), promDuration(d.RateWindow)),
		For:      d.EjectedFor,
		Severity: "warning",
		Summary:  "Outlier detection ejects {{ $value | humanizePercentage }} of cluster {{ $labels.grpc_lb_backend_service }}",
		Description: "Outlier detection (gRFC A50) in the xdslens " + channelWhere + " has kept {{ $value | humanizePercentage }} " +
			"of the endpoints of cluster {{ $labels.grpc_lb_backend_service }} ejected (the most within any " + window +
			", so that an endpoint back between two ejections counts as ejected) for more than " + promDuration(d.EjectedFor) +
			", above " + percent + ": those endpoints fail the RPCs sent to them, or succeed less than the others, and the " +
			"endpoints left take their load. gRFC A50's defaults (max_ejection_percent 10, minimum_hosts 5) never eject " +
			"that many: the cluster's outlier_detection allows it. Only while the channel sends RPCs to the cluster (within " +
			promDuration(d.RateWindow) + "): the gauges of a closed channel keep their last values.",
		RunbookURL: runbook(AlertEndpointsEjected),
	}
}
