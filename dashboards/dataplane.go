package dashboards

import (
	"strings"

	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/common"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/timeseries"
)

// dataPlaneRow is the overview's row of the data plane: the RPCs of the
// xdslens channels (package xdsgrpc) that the xDS client routes, from the
// instruments of package telemetry/dataplane.
func (g *gen) dataPlaneRow() row {
	failing := []string{AlertRPCsFailing}
	backend := []string{AlertBackendErrors}
	breaking := []string{AlertCircuitBreaking, AlertNearMaxRequests}
	return row{"Data plane", []panel{
		{g.rpcsByOutcome(), 12, 8, []string{AlertRPCsFailing, AlertRPCsDropped, AlertCircuitBreaking}},
		{g.failedPicks(), 12, 8, failing},
		{g.callsByStatus(), 12, 8, backend},
		{g.backendErrorShare(), 12, 8, backend},
		{g.dropsByCategory(), 8, 8, []string{AlertRPCsDropped}},
		{g.inFlightRatio(), 8, 8, breaking},
		{g.configUpdates(), 8, 8, failing},
	}}
}

// picks is the rate of the picks of the selected processes and targets
// whose outcome matches (sent, or not sent).
func (g *gen) picks(outcome string) string {
	return rate(g.sel(MetricDataPlanePicks, mTarget, LabelOutcome+outcome))
}

// colorOutcomes gives each series of b whose legend ends with a pick
// outcome the outcome's color.
func colorOutcomes(b *timeseries.PanelBuilder) *timeseries.PanelBuilder {
	for _, o := range PickOutcomes {
		b = b.OverrideByRegexp(stateRegexp(o), []dashboard.DynamicConfigValue{fixedColor(PickOutcomeColor(o))})
	}
	return b
}

func (g *gen) rpcsByOutcome() cog.Builder[dashboard.Panel] {
	return colorOutcomes(timeSeries("RPCs by cluster and outcome",
		"RPCs of the xdslens channels per second, summed over the selected processes and targets, by the cluster "+
			"the route chose and the outcome of the pick (`xdslens.data_plane.picks`): sent to an endpoint (green, above "+
			"the axis), or failed before leaving the process (below the axis), with UNAVAILABLE: config_error (red, the "+
			"channel has no usable listener or route configuration), no_route (orange), unsupported_action (yellow, a "+
			"route that cannot forward), cluster_error (purple, the cluster's resource failed), no_endpoint (dark red, "+
			"no endpoint can take the RPC), dropped (blue, drop_overloads), overloaded (dark orange, circuit breaking). "+
			"Failures with no cluster chosen have an empty cluster; an outcome that failed no RPC is not drawn.\n\n"+
			"**Bad**: anything below the axis: those RPCs never reached a backend, because of the xDS configuration or "+
			"the state of the endpoints it names.\n\n"+
			"**Do**: read the failed RPCs' messages (they name the resource, the cause and the node ID), then the "+
			"resources in *Resources not in acked* and CSDS; for dropped and overloaded see the panels beside.").
		WithTarget(query("A",
			sumBy(g.picks(`="sent"`), LabelBackendService),
			legend(LabelBackendService)+" sent")).
		WithTarget(query("B",
			sumBy(g.picks(`!="sent"`), LabelBackendService, LabelOutcome)+" > 0",
			legend(LabelBackendService, LabelOutcome))).
		Unit(unitPerSecond("RPCs")).
		OverrideByQuery("B", []dashboard.DynamicConfigValue{
			{Id: "custom.transform", Value: "negative-Y"},
			{Id: "custom.fillOpacity", Value: 50},
		}))
}

func (g *gen) failedPicks() cog.Builder[dashboard.Panel] {
	return colorOutcomes(timeSeries("Failed picks by outcome",
		"RPCs failed by the xdslens channels before they left the process, per minute, by outcome, summed over the "+
			"selected processes, targets and clusters (`xdslens.data_plane.picks` without sent); each outcome in its "+
			"color of *RPCs by cluster and outcome*.\n\n"+
			"**Bad**: config_error, no_route, unsupported_action, cluster_error and no_endpoint: the configuration "+
			"or its endpoints fail RPCs (`XdsClientRPCsFailing`). dropped and overloaded: the control plane sheds load "+
			"or the circuit breakers are full.\n\n"+
			"**Do**: config_error: see *Config updates vs errors* and the listener's cache state; no_route and "+
			"unsupported_action: the route configuration does not match the RPCs' methods and headers; cluster_error: "+
			"the cluster's cache state; no_endpoint: the endpoints (CSDS, EDS) and the backends' health.").
		WithTarget(query("A",
			"60 * "+sumBy(g.picks(`!="sent"`), LabelOutcome)+" > 0",
			legend(LabelOutcome))).
		Unit("suffix: /min").
		Min(0).
		DrawStyle(common.GraphDrawStyleBars).
		FillOpacity(60))
}

func (g *gen) callsByStatus() cog.Builder[dashboard.Panel] {
	return timeSeries("Calls by status code",
		"RPCs sent to an endpoint in each interval of the graph, when they end, by cluster and status code, summed "+
			"over the selected processes and targets (`xdslens.data_plane.calls`). OK is green. These are the RPCs that "+
			"reached a backend; those failed before are in *RPCs by cluster and outcome*. A status's series is born with "+
			"its first call, which counts too: the first UNIMPLEMENTED shows.\n\n"+
			"**Bad**: UNAVAILABLE or DEADLINE_EXCEEDED rising at one cluster: its backends fail or are slow; other "+
			"codes are usually the application's own.\n\n"+
			"**Do**: compare with the backends' own metrics, and with *Calls reported by kind* (what the control "+
			"plane is told through LRS).").
		WithTarget(query("A",
			g.increaseBy(MetricDataPlaneCalls, LabelBackendService, LabelStatus),
			legend(LabelBackendService, LabelStatus))).
		Unit("short").
		Min(0).
		OverrideByRegexp(stateRegexp("OK"), []dashboard.DynamicConfigValue{fixedColor("green")})
}

// callsOf is the increase of the calls of the selected processes and
// targets whose status matches, by cluster, over each interval of the
// graph: a status's series is born with its first call, which counts too
// (increaseFromBirth), so that a cluster's first failures show.
func (g *gen) callsOf(status ...string) string {
	return sumBy(increaseFromBirth(g.sel(MetricDataPlaneCalls, append([]string{mTarget}, status...)...), rateInterval), LabelBackendService)
}

func (g *gen) backendErrorShare() cog.Builder[dashboard.Panel] {
	d := g.alerts.DataPlane
	ok := strings.Join(d.BackendOKStatuses, "|")
	return timeSeries("Calls failing at backends by cluster",
		"The share of the RPCs sent to an endpoint that ended with a status other than "+strings.Join(d.BackendOKStatuses, ", ")+
			", by cluster, over the selected processes and targets (`xdslens.data_plane.calls`): what "+
			"`XdsClientBackendErrors` watches, whose threshold is the red line. A cluster with no failed call "+
			"reads 0; the first calls of a status count too (its series is born with them).\n\n"+
			"**Bad**: a share that stays above the line: the backends of that cluster fail the RPCs (UNAVAILABLE, "+
			"DEADLINE_EXCEEDED) or answer with errors (UNIMPLEMENTED: a method they do not serve, a deployment that "+
			"does not match the route).\n\n"+
			"**Do**: *Calls by status code* says which codes; then the backends' own logs and metrics, and whether the "+
			"route sends the RPCs to the cluster meant to serve them.").
		WithTarget(query("A",
			"("+g.callsOf(LabelStatus+`!~"`+ok+`"`)+" or 0 * "+g.callsOf()+") / "+g.callsOf(),
			legend(LabelBackendService))).
		Unit("percentunit").
		Min(0).
		AxisSoftMax(1).
		Thresholds(thresholds("green", d.BackendErrorRatio, "red")).
		ThresholdsStyle(common.NewGraphThresholdsStyleConfigBuilder().Mode(common.GraphThresholdsStyleModeDashed))
}

func (g *gen) dropsByCategory() cog.Builder[dashboard.Panel] {
	return timeSeries("Drops by category",
		"RPCs dropped per minute by the drop_overloads of a cluster's endpoints (ClusterLoadAssignment "+
			"`policy.drop_overloads`), by cluster and category, summed over the selected processes and targets "+
			"(`xdslens.data_plane.drops`). A dropped RPC fails with UNAVAILABLE before it leaves the process.\n\n"+
			"**Bad**: drops the control plane did not mean to ask for, or a share of the traffic above what it sheds "+
			"on purpose (`XdsClientRPCsDropped`).\n\n"+
			"**Do**: read the cluster's endpoints with CSDS (`drop_overloads`), and ask the control plane's owners why "+
			"it sheds that load: backends overloaded, a rollout, a drill.").
		WithTarget(query("A",
			"60 * "+sumBy(rate(g.sel(MetricDataPlaneDrops, mTarget)), LabelLeafCluster, LabelCategory),
			legend(LabelLeafCluster, LabelCategory))).
		Unit("suffix: /min").
		Min(0).
		DrawStyle(common.GraphDrawStyleBars).
		FillOpacity(60).
		ColorScheme(dashboard.NewFieldColorBuilder().
			Mode(dashboard.FieldColorModeIdFixed).
			FixedColor(PickOutcomeColor("dropped")))
}

func (g *gen) inFlightRatio() cog.Builder[dashboard.Panel] {
	near := g.alerts.DataPlane.NearMaxRequestsRatio
	return timeSeries("In flight / max_requests",
		"RPCs in flight to each cluster as a share of its max_requests (`xdslens.data_plane.in_flight` / "+
			"`max_requests`, circuit breaking, gRFC A32), per process, xDS client and cluster; the channels of one xDS "+
			"client share the circuit breakers, so the target is the client's. The red line at 100 % is max_requests, "+
			"where every further RPC fails with outcome overloaded; the orange one is where "+
			"`XdsClientInFlightNearMaxRequests` starts.\n\n"+
			"**Bad**: a line that stays near 100 %: slow backends hold RPCs, or max_requests is too low for the load.\n\n"+
			"**Do**: check the backends' latency (*Calls by status code*, DEADLINE_EXCEEDED), then ask whether the "+
			"cluster's `circuit_breakers.thresholds.max_requests` (default 1024) fits the traffic.").
		WithTarget(query("A",
			g.sel(RecordInFlight, mTarget)+" / "+g.sel(RecordMaxRequests, mTarget),
			g.legend(LabelLeafCluster, LabelTarget))).
		Unit("percentunit").
		Min(0).
		AxisSoftMax(1).
		Thresholds(thresholds("green", near, "orange", 1.0, "red")).
		ThresholdsStyle(common.NewGraphThresholdsStyleConfigBuilder().Mode(common.GraphThresholdsStyleModeDashed))
}

func (g *gen) configUpdates() cog.Builder[dashboard.Panel] {
	return timeSeries("Config updates vs errors",
		"Configs the xdslens channels started to use (green) and failures of their whole config (red, below the "+
			"axis), per minute, per process and channel (`xdslens.data_plane.config_updates`, by "+
			"`xdslens_channel_target`), for the channels of the selected xDS clients. "+
			"A config is one complete, consistent set of listener, route configuration, clusters and endpoints (gRFC "+
			"A74); every change of any of them is a new one.\n\n"+
			"**Bad**: errors: the channel's listener or route configuration failed (deleted, does not exist), and "+
			"every RPC of the channel fails with config_error until a new config comes. Many configs per minute: "+
			"endpoints churn, each change rebuilding the channel's pickers.\n\n"+
			"**Do**: find the listener or route configuration in *Resources not in acked* and its error with CSDS.").
		WithTarget(query("A",
			"60 * "+sumBy(rate(g.sel(MetricDataPlaneConfigs, mTarget, LabelResult+`="config"`)), g.by(LabelChannelTarget)...),
			"config "+g.legend(LabelChannelTarget))).
		WithTarget(query("B",
			"60 * "+sumBy(rate(g.sel(MetricDataPlaneConfigs, mTarget, LabelResult+`="error"`)), g.by(LabelChannelTarget)...),
			"error "+g.legend(LabelChannelTarget))).
		Unit("suffix: /min").
		DrawStyle(common.GraphDrawStyleBars).
		FillOpacity(60).
		OverrideByQuery("A", []dashboard.DynamicConfigValue{fixedColor("green")}).
		OverrideByQuery("B", []dashboard.DynamicConfigValue{
			fixedColor("red"),
			{Id: "custom.transform", Value: "negative-Y"},
		})
}
