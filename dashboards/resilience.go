package dashboards

import (
	"fmt"
	"strconv"

	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/common"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
)

// resilienceRow is the overview's row of what the channels do to keep RPCs
// going when backends fail: outlier detection (gRFC A50), retries (gRFC
// A44) and the faults the control plane injects (gRFC A33), from the
// instruments of package telemetry/dataplane. Their counters' series are
// born with their first event, so the panels count with
// increaseFromBirth: a single ejection, retry or fault shows.
func (g *gen) resilienceRow() row {
	ejected := []string{AlertEndpointsEjected}
	backend := []string{AlertBackendErrors}
	return row{"Resilience", []panel{
		{g.ejections(), 12, 8, ejected},
		{g.ejectedShare(), 12, 8, ejected},
		{g.retries(), 8, 8, backend},
		{g.retryShare(), 8, 8, backend},
		{g.faults(), 8, 8, nil},
	}}
}

// increaseBy is the increase of the counter metric of the selected
// processes and targets over each interval of the graph, a series' first
// event counted, summed by labels.
func (g *gen) increaseBy(metric string, labels ...string) string {
	return sumBy(increaseFromBirth(g.sel(metric, mTarget), rateInterval), labels...)
}

// eventBars is a panel of bars: the events of the counter metric in each
// interval of the graph, a series' first event counted, by labels, over
// the selected processes and targets.
func (g *gen) eventBars(title, description, metric string, labels ...string) cog.Builder[dashboard.Panel] {
	return timeSeries(title, description).
		WithTarget(query("A", g.increaseBy(metric, labels...)+" > 0", legend(labels...))).
		Unit("short").
		Min(0).
		DrawStyle(common.GraphDrawStyleBars).
		FillOpacity(60)
}

func (g *gen) ejections() cog.Builder[dashboard.Panel] {
	return g.eventBars("Ejections by cluster and algorithm",
		"Endpoints ejected by outlier detection (gRFC A50) in each interval of the graph, by leaf cluster and the "+
			"algorithm that ejected them (`xdslens.data_plane.ejections`: success_rate or failure_percentage), summed "+
			"over the selected processes, targets and channels; each channel runs its own outlier detection, so an "+
			"endpoint that fails every channel's RPCs is ejected once per channel. A series is born with its first "+
			"ejection, which counts too.\n\n"+
			"**Bad**: ejections that go on at one cluster: some of its endpoints keep failing (or, for success_rate, "+
			"fail more than the others) and are put back only to be ejected again, each time for longer; the other "+
			"endpoints carry their load. Ejections at every cluster at once: a shared cause (network, a dependency "+
			"of all the backends).\n\n"+
			"**Do**: `xdswatch xds:///LISTENER` with the same bootstrap prints an `ejection` line per ejection and "+
			"return, with the endpoint and the figures that decided; check those backends' own health and logs, and "+
			"the cluster's `outlier_detection` in CSDS.",
		MetricDataPlaneEjections, LabelBackendService, LabelAlgorithm)
}

// ejectedShareOf is the share of the endpoints under outlier detection
// that are ejected, per process, channel and leaf cluster of the selected
// processes and targets, while the channel sends RPCs to the cluster; a
// cluster whose outlier detection is off (no endpoint under it) has none.
func (g *gen) ejectedShareOf() string {
	return g.sel(MetricDataPlaneEjectedEndpoints, mTarget) + " / (" + g.sel(MetricDataPlaneOutlierEndpoints, mTarget) + " > 0)" +
		" and " + sendingTo(g.sel(MetricDataPlaneCalls, mTarget), promDuration(g.alerts.DataPlane.RateWindow))
}

// sendingTo returns an "ignoring (...)" matching and the channels that
// sent RPCs to each leaf cluster within window (calls selects
// MetricDataPlaneCalls), with the leaf cluster as grpc_lb_backend_service,
// the label the ejection gauges give it. "x and sendingTo(...)" keeps the
// series of x of a channel and leaf cluster with RPCs: the ejection
// gauges of a channel that was closed, or of a cluster that left its
// config, keep their last values, which no ejection or return changes any
// more.
func sendingTo(calls, window string) string {
	return fmt.Sprintf(`ignoring (%s, %s, %s) label_replace(sum without (%s, %s, %s, %s) (rate(%s[%s])) > 0, "%s", "$1", "%s", "(.*)")`,
		LabelLeafCluster, LabelScopeName, LabelScopeVersion,
		LabelScopeName, LabelScopeVersion, LabelBackendService, LabelStatus, calls, window,
		LabelBackendService, LabelLeafCluster)
}

func (g *gen) ejectedShare() cog.Builder[dashboard.Panel] {
	d := g.alerts.DataPlane
	return timeSeries("Ejected endpoints by cluster",
		"The share of a leaf cluster's endpoints that outlier detection has ejected, in the channel where that share is "+
			"highest, over the selected processes and targets (`xdslens.data_plane.ejected_endpoints` / "+
			"`outlier_detection_endpoints`, as of the cluster's last ejection or return; a cluster shows from its first "+
			"ejection). `XdsClientEndpointsEjected` fires when a channel's share stays above the red line, "+
			formatPercent(d.EjectedRatio)+".\n\n"+
			"**Bad**: a share near the cluster's `max_ejection_percent` (10 % unless the control plane says otherwise): "+
			"outlier detection ejects no more, and the failing endpoints beyond it take RPCs again (see *Calls failing "+
			"at backends by cluster*). A high share: the endpoints left carry the whole load.\n\n"+
			"**Do**: find the ejected endpoints in xdswatch's `ejection` lines, and their backends' health; compare the "+
			"cluster's capacity with its load while they are out.").
		WithTarget(query("A",
			"max by ("+LabelBackendService+") ("+g.ejectedShareOf()+")",
			legend(LabelBackendService))).
		Unit("percentunit").
		Min(0).
		AxisSoftMax(1).
		Thresholds(thresholds("green", d.EjectedRatio, "red")).
		ThresholdsStyle(common.NewGraphThresholdsStyleConfigBuilder().Mode(common.GraphThresholdsStyleModeDashed))
}

func (g *gen) retries() cog.Builder[dashboard.Panel] {
	return g.eventBars("Retries by cluster and code",
		"Attempts the channels made again under a route's `retry_policy` (gRFC A44) in each interval of the graph, by "+
			"the cluster the route chose and the status code of the attempt that failed (`xdslens.data_plane.retries`), "+
			"summed over the selected processes and targets. A series is born with its first retry, which counts "+
			"too.\n\n"+
			"**Bad**: retries rising: the cluster's backends fail with codes the route retries on (UNAVAILABLE most "+
			"often). Retries hide the failures from the callers while they succeed, but they add load and latency, "+
			"and an RPC whose attempts run out fails with the last code.\n\n"+
			"**Do**: *Calls by status code* and *Calls failing at backends by cluster* show the failures behind the "+
			"retries; check the backends, and whether outlier detection ejects the failing endpoints.",
		MetricDataPlaneRetries, LabelBackendService, LabelStatus)
}

func (g *gen) retryShare() cog.Builder[dashboard.Panel] {
	calls := g.callsOf()
	return timeSeries("Retries as a share of calls",
		"Retries as a share of the calls sent to each cluster, over the selected processes and targets "+
			"(`xdslens.data_plane.retries` / `calls`, both counted from a series' first event). Every attempt sent to "+
			"an endpoint is a call, so this is the share of the attempts that were retries: 50 % means every RPC took "+
			"two attempts. A cluster with calls and no retry reads 0.\n\n"+
			"**Bad**: a share that grows: more and more of the load the backends see is retries of failed RPCs, which "+
			"can keep a struggling cluster from recovering (gRFC A44 bounds it only per RPC, by `num_retries` and the "+
			"5-attempt cap).\n\n"+
			"**Do**: fix what fails the attempts (see *Retries by cluster and code*); if the backends are overloaded, "+
			"ask the control plane's owners to lower `num_retries` or the codes in `retry_on`.").
		WithTarget(query("A",
			"("+g.increaseBy(MetricDataPlaneRetries, LabelBackendService)+" or 0 * "+calls+") / "+calls,
			legend(LabelBackendService))).
		Unit("percentunit").
		Min(0).
		AxisSoftMax(1)
}

func (g *gen) faults() cog.Builder[dashboard.Panel] {
	return g.eventBars("Injected faults by cluster and kind",
		"Faults the fault injection filter of the listener's HTTP filters put on RPCs in each interval of the graph "+
			"(gRFC A33), by the cluster the route chose and the kind (`xdslens.data_plane.faults`): delay (the RPC "+
			"waits before it goes out) or abort (it fails with the configured status and never leaves the process). "+
			"A series is born with its first fault, which counts too.\n\n"+
			"**Bad**: faults nobody planned: a fault drill left on, a per-route override that enables one, or "+
			"callers that send the `x-envoy-fault-*` headers a header-controlled fault obeys. Aborted RPCs fail at the "+
			"caller as if the backends had failed them.\n\n"+
			"**Do**: read the listener's `envoy.filters.http.fault` filter and the `typed_per_filter_config` of its "+
			"routes with CSDS; ask the control plane's owners whether the drill is meant.",
		MetricDataPlaneFaults, LabelBackendService, LabelFault)
}

// formatPercent writes a ratio as a percentage, such as "30 %".
func formatPercent(ratio float64) string {
	return strconv.FormatFloat(ratio*100, 'g', -1, 64) + " %"
}
