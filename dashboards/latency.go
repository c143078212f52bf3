package dashboards

import (
	"fmt"
	"strings"

	"github.com/grafana/grafana-foundation-sdk/go/bargauge"
	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/common"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
)

// Prometheus names of the per-call instruments of gRFC A66 that
// dataplane.WithPerCallMetrics records, after the default OpenTelemetry to
// Prometheus translation. Their grpc_target is the channel's own target
// (A66's grpc.target), the xdslens_channel_target of the data-plane
// series.
const (
	// MetricAttemptDuration is the name stem of the histogram
	// grpc.client.attempt.duration: seconds from an attempt's start, its
	// pick included, to its end, by [LabelMethod], [LabelStatus],
	// [LabelBackendService] (the leaf cluster of the attempt's last pick)
	// and [LabelLocality] (empty for an attempt that reached no
	// endpoint). Prometheus stores it as the _bucket, _sum and _count
	// series.
	MetricAttemptDuration = "grpc_client_attempt_duration_seconds"
	// MetricAttemptStarted is the counter grpc.client.attempt.started, by
	// [LabelMethod].
	MetricAttemptStarted = "grpc_client_attempt_started_total"
	// MetricCallDuration is the name stem of the histogram
	// grpc.client.call.duration: seconds an RPC took as its caller saw it,
	// every attempt included, by [LabelMethod] and [LabelStatus].
	MetricCallDuration = "grpc_client_call_duration_seconds"
	// LabelMethod is grpc.method on the per-call series: the method
	// without its leading slash, or "other" for one called without
	// grpc.StaticMethod.
	LabelMethod = "grpc_method"
)

// latencyRow is the overview's row of the per-call metrics of gRFC A66
// (dataplane.WithPerCallMetrics): how long the attempts of the xdslens
// channels take and how many fail, by the cluster and the locality that
// took them. It answers "which cluster is slow".
func (g *gen) latencyRow() row {
	backend := []string{AlertBackendErrors}
	return row{"Latency and errors by cluster", []panel{
		{g.attemptLatencyByCluster(), 12, 8, nil},
		{g.attemptLatencyByLocality(), 12, 8, nil},
		{g.slowestClusters(), 8, 8, nil},
		{g.attemptsByCluster(), 8, 8, nil},
		{g.attemptErrorShare(), 8, 8, backend},
	}}
}

// channelsOf returns, for the selected processes, one series per channel
// that routes with a selected xDS client, whose grpc_target is the
// channel's own target: the per-call series of gRFC A66 carry the
// channel's target as grpc.target, while the variable target selects xDS
// clients, whose channels the data-plane series name in
// xdslens_channel_target (their config_updates series exist from each
// channel's start).
func (g *gen) channelsOf() string {
	return fmt.Sprintf(`label_replace(group by (%s) (%s), "%s", "$1", "%s", "(.*)")`,
		strings.Join(g.by(LabelChannelTarget), ", "), g.sel(MetricDataPlaneConfigs, mTarget),
		LabelTarget, LabelChannelTarget)
}

// ofSelectedChannels keeps the series of expr, per-call series of the
// selected processes, whose channel routes with a selected xDS client.
func (g *gen) ofSelectedChannels(expr string) string {
	return "(" + expr + ") and on (" + strings.Join(g.by(LabelTarget), ", ") + ") " + g.channelsOf()
}

// attempts is the increase over window of the per-call series metric (a
// counter, or a histogram's _bucket or _count) of the selected channels
// whose labels match, a series' first observation counted: the
// histogram's series are born with their first attempt.
func (g *gen) attempts(metric, window string, matchers ...string) string {
	return g.ofSelectedChannels(increaseFromBirth(g.sel(metric, matchers...), window))
}

// sentToEndpoint matches the attempts that reached an endpoint: the others
// (no route, no endpoint, a drop) have no locality, and take no time a
// backend could be blamed for.
const sentToEndpoint = LabelLocality + `!=""`

// attemptQuantile is the quantile q of the duration of the attempts of the
// selected channels sent to an endpoint, over window, by labels.
func (g *gen) attemptQuantile(q, window string, labels ...string) string {
	return fmt.Sprintf("histogram_quantile(%s, %s)", q,
		sumBy(g.attempts(MetricAttemptDuration+"_bucket", window, sentToEndpoint), append([]string{"le"}, labels...)...))
}

func (g *gen) attemptLatencyByCluster() cog.Builder[dashboard.Panel] {
	return timeSeries("Attempt latency p50 / p99 by cluster",
		"Median (solid) and 99th percentile (dashed) of the time the attempts of the xdslens channels took, from the pick to "+
			"the end, by the cluster that took them (`grpc.client.attempt.duration`, gRFC A66, labelled with "+
			"`grpc.lb.backend_service`, gRFC A89: the leaf cluster for an aggregate one), over the selected processes and the "+
			"channels of the selected xDS clients. Only the attempts sent to an endpoint count; the first attempts of a "+
			"cluster count too (a histogram's series is born with them). Needs `dataplane.WithPerCallMetrics` and "+
			"`dataplane.WithMeterProvider` on the channels.\n\n"+
			"**Bad**: one cluster's line far above the others, or above what its backends take by their own "+
			"metrics: that cluster is slow (its backends, or the network to them). A p99 far above the p50: some endpoints or "+
			"localities are slow (see *Attempt latency p99 by locality*).\n\n"+
			"**Do**: compare the localities of the cluster, then the backends' own latency and load; an RPC's trace names "+
			"the cluster, locality and endpoint of each attempt (`xds.leaf_cluster`, `xds.locality`, `xds.endpoint`).").
		WithTarget(query("A", g.attemptQuantile("0.5", rateInterval, LabelBackendService), "p50 "+legend(LabelBackendService))).
		WithTarget(query("B", g.attemptQuantile("0.99", rateInterval, LabelBackendService), "p99 "+legend(LabelBackendService))).
		Unit("s").
		Min(0).
		OverrideByQuery("B", []dashboard.DynamicConfigValue{
			{Id: "custom.lineStyle", Value: map[string]any{"fill": "dash", "dash": []int{10, 10}}},
		})
}

func (g *gen) attemptLatencyByLocality() cog.Builder[dashboard.Panel] {
	return timeSeries("Attempt latency p99 by locality",
		"99th percentile of the time the attempts sent to an endpoint took, by cluster and locality (`grpc.lb.locality`, "+
			"gRFC A78: `{region=\"r\", zone=\"z\", sub_zone=\"s\"}`), over the selected processes and the channels of the "+
			"selected xDS clients (`grpc.client.attempt.duration`).\n\n"+
			"**Bad**: one locality of a cluster far above its others: that zone's backends, or the way to them, are slow, "+
			"and locality-weighted balancing keeps sending it its share.\n\n"+
			"**Do**: check the backends of that locality (CSDS lists the endpoints of each locality of the cluster) and the "+
			"network to that zone; the control plane can lower the locality's weight or take it out.").
		WithTarget(query("A", g.attemptQuantile("0.99", rateInterval, LabelBackendService, LabelLocality),
			legend(LabelBackendService, LabelLocality))).
		Unit("s").
		Min(0)
}

func (g *gen) slowestClusters() cog.Builder[dashboard.Panel] {
	return horizontalBars("Slowest clusters (p99 over the range)",
		"The 99th percentile of the time the attempts sent to an endpoint took over the dashboard's whole time "+
			"range, by cluster, slowest first (`grpc.client.attempt.duration`), over the selected processes and the channels "+
			"of the selected xDS clients: which cluster is slow.\n\n"+
			"**Bad**: a cluster at the top far above the next, or above its backends' latency objective.\n\n"+
			"**Do**: narrow the time range to when it began, and read *Attempt latency p99 by locality* for that cluster.").
		WithTarget(instant("A", "sort_desc("+g.attemptQuantile("0.99", "$__range", LabelBackendService)+")",
			legend(LabelBackendService))).
		Unit("s").
		Min(0).
		Thresholds(thresholds("green"))
}

// horizontalBars returns a bar gauge of horizontal bars, one a series,
// each showing the series' last value.
func horizontalBars(title, description string) *bargauge.PanelBuilder {
	return bargauge.NewPanelBuilder().
		Title(title).
		Description(description).
		Datasource(datasourceRef()).
		ReduceOptions(common.NewReduceDataOptionsBuilder().Calcs([]string{"lastNotNull"})).
		Orientation(common.VizOrientationHorizontal).
		DisplayMode(common.BarGaugeDisplayModeBasic).
		ShowUnfilled(true)
}

func (g *gen) attemptsByCluster() cog.Builder[dashboard.Panel] {
	return timeSeries("Attempts by cluster",
		"Attempts of the xdslens channels per second, when they end, by the cluster that took them "+
			"(`grpc.client.attempt.duration` count), over the selected processes and the channels of the selected xDS "+
			"clients; each retry is an attempt. Attempts that failed before a cluster was chosen (no route, no config) have "+
			"no cluster.\n\n"+
			"**Bad**: a cluster's rate dropping to zero while the callers' does not: its RPCs go elsewhere (a route "+
			"changed) or fail before a pick. A rate far above the callers': retries.\n\n"+
			"**Do**: *RPCs by cluster and outcome* says what became of the RPCs; the channel's config history says what "+
			"changed in the routes.").
		WithTarget(query("A",
			sumBy(g.ofSelectedChannels(rate(g.sel(MetricAttemptDuration+"_count"))), LabelBackendService),
			legend(LabelBackendService))).
		Unit(unitPerSecond("attempts")).
		Min(0)
}

func (g *gen) attemptErrorShare() cog.Builder[dashboard.Panel] {
	ok := strings.Join(g.alerts.DataPlane.BackendOKStatuses, "|")
	count := func(matchers ...string) string {
		return sumBy(g.attempts(MetricAttemptDuration+"_count", rateInterval, matchers...), LabelBackendService)
	}
	return timeSeries("Attempt error rate by cluster",
		"The share of the attempts of each cluster that ended with a status other than "+
			strings.Join(g.alerts.DataPlane.BackendOKStatuses, ", ")+" (`grpc.client.attempt.duration` count by "+
			"`grpc.status`), over the selected processes and the channels of the selected xDS clients: those the backends "+
			"failed and those that failed at the pick (no endpoint, a drop, circuit breaking). A cluster with no failed "+
			"attempt reads 0; the first attempts of a status count too.\n\n"+
			"**Bad**: a share that stays above a few percent: the cluster fails RPCs (`XdsClientBackendErrors` fires on the "+
			"calls that reached its endpoints).\n\n"+
			"**Do**: *Calls by status code* says which codes the backends answered; *Failed picks by outcome* which "+
			"failed before; the channel's config history what changed before the errors began.").
		WithTarget(query("A",
			"("+count(LabelStatus+`!~"`+ok+`"`)+" or 0 * "+count()+") / "+count(),
			legend(LabelBackendService))).
		Unit("percentunit").
		Min(0).
		AxisSoftMax(1)
}
