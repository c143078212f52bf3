package dashboards

import (
	"fmt"
	"strings"

	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/common"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/heatmap"
	"github.com/grafana/grafana-foundation-sdk/go/prometheus"
)

// Dashboard UIDs, stable across regenerations so that links and
// provisioning keep pointing at the same dashboards.
const (
	// OverviewUID is the UID of the "xDS client overview" dashboard.
	OverviewUID = "xdslens-xds-client-overview"
	// DrillDownUID is the UID of the "xDS resource drill-down" dashboard.
	DrillDownUID = "xdslens-xds-resource-drilldown"
)

// Overview returns the "xDS client overview" dashboard: is each process
// scraped, is each client connected, is the configuration it receives
// valid, which resources are not ACKed, is it on a fallback server, how
// fast the control plane answers, and what becomes of the RPCs of the
// channels it routes. It reads the recorded series of [RecordingRules].
func Overview(opts ...Option) (dashboard.Dashboard, error) {
	c, err := newConfig(opts)
	if err != nil {
		return dashboard.Dashboard{}, err
	}
	return (&gen{config: c}).overview()
}

// connected is the connected gauge of the selected clients and servers (0
// also for a server never reached), one series per process, client and
// server.
func (g *gen) connected() string {
	return g.sel(RecordConnected, mTarget, mServer)
}

// notAcked counts the cache entries outside acked, per process, target,
// authority, type and state.
func (g *gen) notAcked() string {
	return sumBy(g.sel(RecordResources, mTarget, mAuthority, mType, LabelCacheState+`!="acked"`),
		g.by(LabelTarget, LabelAuthority, LabelResourceType, LabelCacheState)...) + " > 0"
}

// fetchBuckets is the increase of the fetch latency buckets of the
// selected processes, clients, servers and types, a series' first fetch
// counted (increaseFromBirth); answered adds the outcome matcher of the
// fetches the server answered.
func (g *gen) fetchBuckets(answered bool) string {
	m := []string{mTarget, mServer, mType}
	if answered {
		m = append(m, LabelOutcome+`=~"`+outcomesAnswered+`"`)
	}
	return increaseFromBirth(g.sel(MetricFetchDuration+"_bucket", m...), rateInterval)
}

func (g *gen) overview() (dashboard.Dashboard, error) {
	b := g.newDashboard("xDS client overview", OverviewUID,
		"Health of xdslens xDS clients: scrapes, connections to xDS servers, configuration updates, cache states, fallback, control-plane latency, the RPCs of the channels they route, and load reporting.")
	return build(g.layout(b,
		g.connectionRow(),
		row{"Configuration updates", []panel{
			{g.updatesValidInvalid(), 12, 8, []string{AlertResourcesNACKed, AlertResourcesError}},
			{g.notificationsByKind(), 12, 8, nil},
		}},
		row{"Cache", []panel{
			{g.resourcesByState(), 12, 9, cacheAlerts},
			{g.notAckedTable(), 12, 9, cacheAlerts},
		}},
		row{"Fallback", []panel{
			{g.activeServerTimeline(), 12, 8, []string{AlertOnFallback}},
			{g.activeServerTable(), 12, 8, []string{AlertOnFallback}},
		}},
		row{"Control plane latency", []panel{
			{g.fetchHeatmap(), 12, 8, []string{AlertFetchLatencyHigh}},
			{g.fetchQuantiles(), 12, 8, []string{AlertFetchLatencyHigh}},
			{g.fetchOutcomes(), 24, 8, []string{AlertResourcesDoesNotExist}},
		}},
		g.dataPlaneRow(),
		g.latencyRow(),
		g.resilienceRow(),
		g.loadBalancingRow(),
		g.serverRow(),
		g.loadReportingRow(),
	), OverviewUID)
}

// cacheAlerts are the alerts on cache states.
var cacheAlerts = []string{AlertResourcesNACKed, AlertResourcesDoesNotExist, AlertResourcesError}

func (g *gen) connectionRow() row {
	disconnected := []string{AlertServerDisconnected}
	return row{"Connection to xDS servers", []panel{
		{g.scrapeHealth(), 6, 6, []string{AlertScrapeFailed, AlertJobAbsent}},
		{g.connectedStat(), 6, 6, disconnected},
		{g.connectedTimeline(), 12, 6, disconnected},
		{g.serverFailures(), 8, 8, []string{AlertServerFlapping}},
		{g.disconnectedTime(), 8, 8, disconnected},
		{g.adsStreams(), 8, 8, []string{AlertServerFlapping}},
	}}
}

func (g *gen) scrapeHealth() cog.Builder[dashboard.Panel] {
	return statPanel("Scrape health",
		"Whether Prometheus scrapes each selected process now (`up`): UP, or DOWN when the last scrape "+
			"failed. NO TARGETS when the selected jobs and instances have no scrape target at all.\n\n"+
			"**Bad**: DOWN or NO TARGETS: the process is dead, restarting or unreachable, and every other panel "+
			"shows nothing for it (its series end), which is not the same as healthy.\n\n"+
			"**Do**: check the process (crash loop, OOM kill, rollout), its metrics port and the scrape "+
			"configuration (*Status → Targets* in Prometheus shows the scrape error).").
		WithTarget(instant("A", sel("up", g.fleet()...), g.legend())).
		WithTarget(instant("B", "absent("+sel("up", g.fleet()...)+")", "no target")).
		Mappings([]dashboard.ValueMapping{mapping(
			[3]string{"0", "DOWN", "red"},
			[3]string{"1", "UP", "green"},
		)}).
		Thresholds(thresholds("red", 1.0, "green")).
		OverrideByQuery("B", []dashboard.DynamicConfigValue{
			{Id: "mappings", Value: []dashboard.ValueMapping{mapping([3]string{"1", "NO TARGETS", "red"})}},
			fixedColor("red"),
		})
}

func (g *gen) connectedStat() cog.Builder[dashboard.Panel] {
	return statPanel("Server connection",
		"Whether each xDS client has a working ADS stream to each xDS server "+
			"(`grpc.xds_client.connected`, gRFC A78).\n\n"+
			"**CONNECTED**: the current ADS stream has received a response. "+
			"**DISCONNECTED**: the channel is in TRANSIENT_FAILURE or the last stream ended before any response (gRFC A57).\n\n"+
			"**Bad**: a DISCONNECTED primary while a fallback server is CONNECTED means the client runs on fallback; "+
			"DISCONNECTED everywhere means the client gets no updates and serves what it has cached.\n\n"+
			"**Do**: check that the server URI in the bootstrap resolves and is reachable from the client "+
			"(network policy, TLS, credentials), then the control plane's health and logs. "+
			"The client reconnects with backoff by itself. A process that is gone shows no tile: see *Scrape health*.").
		WithTarget(instant("A", g.connected(), g.legend(LabelServer, LabelTarget))).
		Mappings(connectedMapping()).
		Thresholds(thresholds("red", 1.0, "green")).
		Min(0).
		Max(1)
}

func (g *gen) connectedTimeline() cog.Builder[dashboard.Panel] {
	return stateTimeline("Server connection over time",
		"The connected gauge over time, one row per process, client and server: red stretches are periods "+
			"without a working ADS stream; gaps are periods the process was not scraped.\n\n"+
			"**Bad**: many short red stretches are a flapping connection (see *Server failures*); "+
			"one long red stretch is an outage of that server for that client.\n\n"+
			"**Do**: line the start up with control-plane deploys, restarts and network changes; "+
			"check proxies or load balancers that cut long-lived gRPC streams.").
		WithTarget(query("A", g.connected(), g.legend(LabelServer, LabelTarget))).
		Mappings(connectedMapping()).
		Thresholds(thresholds("red", 1.0, "green"))
}

func (g *gen) serverFailures() cog.Builder[dashboard.Panel] {
	return timeSeries("Server failures",
		"How often each server goes from healthy to unhealthy for each client "+
			"(`grpc.xds_client.server_failure`, gRFC A57: a connectivity failure, or an ADS stream "+
			"that ends without a response), in failures per minute.\n\n"+
			"**Bad**: anything above zero. A steady rate means streams keep breaking before the server "+
			"answers: an overloaded or crash-looping control plane, a proxy or load balancer cutting "+
			"gRPC streams (idle timeout, maximum connection age), or TLS and authentication failures.\n\n"+
			"**Do**: read the control plane's logs at those times and the settings of whatever sits "+
			"between client and server. A server that was never reached counts one failure, when the "+
			"client first fails to reach it, and no more: see *Time disconnected*.").
		WithTarget(query("A",
			"60 * "+sumBy(rate(g.sel(MetricServerFailures, mTarget, mServer)), g.by(LabelTarget, LabelServer)...),
			g.legend(LabelServer, LabelTarget))).
		Unit("suffix: /min").
		Min(0).
		DrawStyle(common.GraphDrawStyleBars).
		FillOpacity(60).
		ColorScheme(dashboard.NewFieldColorBuilder().
			Mode(dashboard.FieldColorModeIdFixed).
			FixedColor("red"))
}

func (g *gen) updatesValidInvalid() cog.Builder[dashboard.Panel] {
	return timeSeries("Resource updates: valid vs invalid",
		"Resources received per second by type, summed over the selected processes "+
			"(`grpc.xds_client.resource_updates_valid` and "+
			"`_invalid`). Valid ones passed validation, and count even when nothing changed, so the "+
			"valid rate is the control plane's push rate. Invalid ones (drawn red, below the axis) were "+
			"NACKed or came as an error from the server.\n\n"+
			"**Bad**: any invalid rate: the client keeps the previous version of those resources, or "+
			"has none. A valid rate far above usual means the control plane resends everything often, "+
			"which costs CPU on every client.\n\n"+
			"**Do**: find the resources in *Resources not in acked*, read the NACK reason with CSDS "+
			"(`grpcdebug` or `xdswatch`), and fix the configuration the control plane generates.").
		WithTarget(query("A",
			sumBy(rate(g.sel(MetricUpdatesValid, mTarget, mServer, mType)), LabelResourceType),
			"valid "+legend(LabelResourceType))).
		WithTarget(query("B",
			sumBy(rate(g.sel(MetricUpdatesInvalid, mTarget, mServer, mType)), LabelResourceType),
			"invalid "+legend(LabelResourceType))).
		Unit(unitPerSecond("resources")).
		OverrideByQuery("B", []dashboard.DynamicConfigValue{
			fixedColor("red"),
			{Id: "custom.transform", Value: "negative-Y"},
			{Id: "custom.fillOpacity", Value: 50},
		})
}

func (g *gen) resourcesByState() cog.Builder[dashboard.Panel] {
	return stateSeries("Resources by cache state",
		"Cache entries by state (`grpc.xds_client.resources`) of the selected processes, stacked. Healthy is all green (acked).\n\n"+
			"**Bad**: requested (blue) for more than a few seconds: the server has not answered, because "+
			"it is unreachable or does not know the name. nacked (red): the only version received was "+
			"invalid. received_error (purple): the server sent an error for it (xRFC TP3). does_not_exist "+
			"(orange): the resource is not on the server, or the does-not-exist timer fired; its watchers "+
			"got an error. timeout (yellow): no answer in time from a server with "+
			"`resource_timer_is_transient_error`. The `_but_cached` states, in a lighter shade of the same "+
			"hue, still serve the previous version: stale but working.\n\n"+
			"**Do**: see which ones in *Resources not in acked*, then the *xDS resource drill-down* "+
			"dashboard and the client's CSDS output.").
		WithTarget(query("A",
			sumBy(g.sel(RecordResources, mTarget, mAuthority, mType), LabelCacheState),
			legend(LabelCacheState)))
}

func (g *gen) notAckedTable() cog.Builder[dashboard.Panel] {
	return tablePanel("Resources not in acked",
		"Every process (instance), target, authority, resource type and cache state with resources outside acked, and "+
			"how many. Empty is healthy.\n\n"+
			"**Bad**: any row; the state column says how (see *Resources by cache state*).\n\n"+
			"**Do**: the metric carries no resource names (they would make too many series). Ask the "+
			"client's CSDS endpoint for them, with the error and the version: `grpcdebug ADDR xds "+
			"status`, or `xdswatch` with the same bootstrap, filtered on this type and state.",
		stateColumns()).
		WithTarget(instantTable("A", g.notAcked())).
		OverrideByName(LabelCacheState, []dashboard.DynamicConfigValue{
			{Id: "mappings", Value: stateMapping()},
			{Id: "custom.cellOptions", Value: map[string]any{"type": "color-text"}},
		})
}

func (g *gen) activeServerTimeline() cog.Builder[dashboard.Panel] {
	return stateTimeline("Server in use per authority",
		"Which xDS server each authority of each client uses over time "+
			"(`xdslens.xds_client.authority_server`), one row per process, authority and server; a bar means "+
			"in use.\n\n"+
			"**Bad**: a bar on a server that is not the first of the authority's list is a fallback "+
			"(gRFC A71): the primary failed while some resource was not cached. Fallback works as "+
			"designed, but the primary is down and the fallback's configuration may be older or "+
			"different.\n\n"+
			"**Do**: fix the primary (see *Server connection*); the client goes back to it as soon as "+
			"it answers.").
		WithTarget(query("A",
			g.sel(RecordAuthorityServer, mTarget, mAuthority, mServer)+" == 1",
			g.legend(LabelAuthority, LabelServer, LabelTarget))).
		Mappings([]dashboard.ValueMapping{mapping([3]string{"1", "in use", "blue"})}).
		ColorScheme(dashboard.NewFieldColorBuilder().
			Mode(dashboard.FieldColorModeIdFixed).
			FixedColor("blue"))
}

func (g *gen) activeServerTable() cog.Builder[dashboard.Panel] {
	return tablePanel("Active server per authority",
		"The server each authority of each client uses now, and whether that server is connected.\n\n"+
			"**Bad**: a server that is not the first of the authority's `xds_servers` list in the "+
			"bootstrap: the client runs on a fallback server (gRFC A71). A server in use that is "+
			"disconnected (red): the authority gets no updates at all.\n\n"+
			"**Do**: find why the primary fails in *Server connection* and *Server failures*.",
		map[string]string{
			"instance":     "Instance",
			LabelTarget:    "Target",
			LabelAuthority: "Authority",
			LabelServer:    "Server",
			"Value":        "Connected",
		}).
		WithTarget(instantTable("A",
			"("+g.sel(RecordAuthorityServer, mTarget, mAuthority, mServer)+" == 1)"+
				" * on ("+strings.Join(g.by(LabelTarget, LabelServer), ", ")+") group_left() "+
				g.connected())).
		OverrideByName("Value", []dashboard.DynamicConfigValue{
			{Id: "mappings", Value: connectedMapping()},
			{Id: "custom.cellOptions", Value: map[string]any{"type": "color-background"}},
		})
}

func (g *gen) fetchHeatmap() cog.Builder[dashboard.Panel] {
	return heatmap.NewPanelBuilder().
		Title("Control plane fetch latency").
		Description("How long the control plane takes to answer a new subscription " +
			"(`xdslens.xds_client.resource_fetch_duration`: from the request on a ready ADS stream to " +
			"the first answer, which is the resource, an error, or the does-not-exist timer).\n\n" +
			"**Bad**: a band moving up means a slower control plane; a band at the resource timeout " +
			"(15 s by default) is subscriptions never answered.\n\n" +
			"**Do**: check the control plane's CPU, how long it takes to build a snapshot and how many " +
			"clients it serves; for the timeouts, see *Fetch outcomes*.").
		Datasource(datasourceRef()).
		WithTarget(query("A", sumBy(g.fetchBuckets(false), "le"), "{{le}}").
			Format(prometheus.PromQueryFormatHeatmap)).
		Calculate(false).
		YAxis(heatmap.NewYAxisConfigBuilder().Unit("s")).
		RowsFrame(heatmap.NewRowsHeatmapOptionsBuilder().Layout(common.HeatmapCellLayoutAuto)).
		Color(heatmap.NewHeatmapColorOptionsBuilder().
			Mode(heatmap.HeatmapColorModeScheme).
			Scheme("Oranges").
			Scale(heatmap.HeatmapColorScaleExponential).
			Exponent(0.5).
			Steps(64).
			Fill("dark-orange")).
		CellGap(1).
		ShowValue(common.VisibilityModeNever).
		Tooltip(heatmap.NewHeatmapTooltipBuilder().Mode(common.TooltipDisplayModeSingle).YHistogram(true)).
		ShowLegend()
}

func (g *gen) fetchQuantiles() cog.Builder[dashboard.Panel] {
	q := func(quantile string) string {
		return fmt.Sprintf("histogram_quantile(%s, %s)", quantile, sumBy(g.fetchBuckets(true), "le", LabelResourceType))
	}
	return timeSeries("Fetch latency p50 / p99 by type",
		"Median and 99th percentile of the time the control plane takes to answer a new subscription, "+
			"per resource type over the selected processes, for the fetches the server answered (acked, nacked, received_error); "+
			"fetches ended by the timer are in *Fetch outcomes*.\n\n"+
			"**Bad**: p99 above the latency SLO (the `XdsClientFetchLatencyHigh` alert uses 5 s): new "+
			"listeners, routes and clusters reach this client late, so new traffic fails or waits.\n\n"+
			"**Do**: look for load on the control plane, large snapshots, or one type much slower than "+
			"the others (often EDS when endpoints churn).").
		WithTarget(query("A", q("0.5"), "p50 "+legend(LabelResourceType))).
		WithTarget(query("B", q("0.99"), "p99 "+legend(LabelResourceType))).
		Unit("s").
		Min(0).
		OverrideByQuery("B", []dashboard.DynamicConfigValue{
			{Id: "custom.lineStyle", Value: map[string]any{"fill": "dash", "dash": []int{10, 10}}},
		})
}

func (g *gen) fetchOutcomes() cog.Builder[dashboard.Panel] {
	return colorStates(timeSeries("Fetch outcomes",
		"Subscriptions that got their first answer, per second, by outcome and resource type "+
			"(`xdslens.xds_client.resource_fetches`): acked "+
			"(a valid resource), nacked (an invalid one), received_error (the server sent an error for "+
			"it), does_not_exist or timeout (the does-not-exist timer fired: no answer in time), "+
			"interrupted (the stream broke first).\n\n"+
			"Outcomes that are cache states have the state's color.\n\n"+
			"**Bad**: does_not_exist (orange) and timeout (yellow): the server never answered for those resources "+
			"within the resource timeout, so watchers were told they do not exist. nacked (red) and "+
			"received_error (purple): the answer was unusable. interrupted (grey): streams break "+
			"before the server answers.\n\n"+
			"**Do**: check that the names the clients ask for exist on the control plane (typos, "+
			"wrong xdstp:// authority, a service not yet deployed) and that the server is not stuck.").
		WithTarget(query("A",
			sumBy(rate(g.sel(MetricFetches, mTarget, mServer, mType)), LabelResourceType, LabelOutcome),
			legend(LabelResourceType, LabelOutcome))).
		Unit(unitPerSecond("fetches")).
		Min(0).
		OverrideByRegexp(stateRegexp("interrupted"), []dashboard.DynamicConfigValue{fixedColor(colorInterrupted)}))
}

func (g *gen) notificationsByKind() cog.Builder[dashboard.Panel] {
	return timeSeries("Watcher notifications by kind",
		"Callbacks delivered to watchers per second over the selected processes, by kind "+
			"(`xdslens.xds_client.watcher_notifications`): resource (a new valid resource), "+
			"resource_error (stop using the resource: deleted, absent or invalid with nothing cached), "+
			"ambient_error (an error that leaves watchers on what they have).\n\n"+
			"**Bad**: resource_error: traffic that depends on those resources fails now, treat it as an "+
			"outage of them. A rising ambient_error rate: degraded, still serving.\n\n"+
			"**Do**: find the resources in *Resources not in acked* and the cause in the other panels.").
		WithTarget(query("A",
			sumBy(rate(g.sel(MetricWatcherNotifications, mTarget, mType)), LabelKind),
			legend(LabelKind))).
		Unit(unitPerSecond("callbacks")).
		Min(0).
		OverrideByName("resource", []dashboard.DynamicConfigValue{fixedColor("green")}).
		OverrideByName("resource_error", []dashboard.DynamicConfigValue{fixedColor("red")}).
		OverrideByName("ambient_error", []dashboard.DynamicConfigValue{fixedColor("orange")})
}

func (g *gen) adsStreams() cog.Builder[dashboard.Panel] {
	return timeSeries("ADS streams",
		"ADS streams opened and ended per second, per server, over the selected processes "+
			"(`xdslens.xds_client.streams_started`, `streams_ended` and `streams_start_failed`). An ADS stream normally lives "+
			"for hours; the ends are split by whether the stream had received a response.\n\n"+
			"**Bad**: ended without a response (red): the server or something in between cuts streams "+
			"before answering, each one a server failure (gRFC A57). Failed to start (orange): the "+
			"channel is not connected, so no stream can even be created (a server down or unreachable). "+
			"Many ends with a response: streams are recycled often (maximum connection age, proxy "+
			"timeouts), each one re-subscribing everything.\n\n"+
			"**Do**: compare with *Server failures*, then look at the control plane's stream limits "+
			"and at the proxies between client and server.").
		WithTarget(query("A",
			sumBy(rate(g.sel(MetricStreamsStarted, mTarget, mServer)), LabelServer),
			"started "+legend(LabelServer))).
		WithTarget(query("B",
			sumBy(rate(g.sel(MetricStreamsEnded, mTarget, mServer, LabelResponseReceived+`="true"`)), LabelServer),
			"ended after a response "+legend(LabelServer))).
		WithTarget(query("C",
			sumBy(rate(g.sel(MetricStreamsEnded, mTarget, mServer, LabelResponseReceived+`="false"`)), LabelServer),
			"ended without a response "+legend(LabelServer))).
		WithTarget(query("D",
			sumBy(rate(g.sel(MetricStreamsStartFailed, mTarget, mServer)), LabelServer),
			"failed to start "+legend(LabelServer))).
		Unit(unitPerSecond("streams")).
		Min(0).
		OverrideByQuery("C", []dashboard.DynamicConfigValue{fixedColor("red")}).
		OverrideByQuery("D", []dashboard.DynamicConfigValue{fixedColor("orange")})
}

func (g *gen) disconnectedTime() cog.Builder[dashboard.Panel] {
	return horizontalBars("Time disconnected",
		"The share of the dashboard's time range in which each client had no working ADS stream "+
			"to each server (`grpc.xds_client.connected` == 0, over the scraped samples of the range). A "+
			"server the client has never reached reads 100 %, which *Server failures* cannot show: it "+
			"counts a single failure for it.\n\n"+
			"**Bad**: anything above zero; 100 % means the server was never reached in the range, or was "+
			"lost before it began.\n\n"+
			"**Do**: for a server never reached, check its URI, DNS, TLS and credentials in the bootstrap; "+
			"otherwise see *Server connection over time* for when it happened.").
		WithTarget(instant("A",
			"1 - avg_over_time("+g.connected()+"[$__range])",
			g.legend(LabelServer, LabelTarget))).
		Unit("percentunit").
		Min(0).
		Max(1).
		Thresholds(thresholds("green", 0.001, "red"))
}
