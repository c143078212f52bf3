package dashboards

import (
	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/common"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
)

// loadReportingRow is the overview's row of LRS load reporting
// (xdsclient.Client.ReportLoad): reports sent, streams, and the calls the
// reports carried.
func (g *gen) loadReportingRow() row {
	return row{"Load reporting (LRS)", []panel{
		{g.lrsReports(), 6, 8, []string{AlertLoadReportingFailing}},
		{g.lrsStreamsOpen(), 6, 8, nil},
		{g.lrsStreamFailures(), 6, 8, []string{AlertLoadReportingFailing}},
		{g.lrsCalls(), 6, 8, nil},
	}}
}

// lrsBy is the aggregation of the load reporting series of one process,
// client and server.
func (g *gen) lrsBy() []string { return g.by(LabelTarget, LabelServer) }

func (g *gen) lrsReports() cog.Builder[dashboard.Panel] {
	return timeSeries("Load reports sent",
		"Load reports written to LRS streams per minute, per process, client and server "+
			"(`xdslens.xds_client.lrs_reports`). A client sends one per `load_reporting_interval` the "+
			"server asked for, while it reports the load of a cluster whose `lrs_server` is set.\n\n"+
			"**Bad**: no reports from a client that routes traffic to such clusters: the LRS stream is "+
			"down (see *LRS streams open*), so the control plane balances load on stale figures.\n\n"+
			"**Do**: see *LRS stream failures*, and the LRS server's logs.").
		WithTarget(query("A",
			"60 * "+sumBy(rate(g.sel(MetricLRSReports, mTarget, mServer)), g.lrsBy()...),
			g.legend(LabelServer, LabelTarget))).
		Unit("suffix: /min").
		Min(0)
}

func (g *gen) lrsStreamsOpen() cog.Builder[dashboard.Panel] {
	by := g.lrsBy()
	return timeSeries("LRS streams open",
		"LRS streams open now per process, client and server: streams created minus streams ended "+
			"(`xdslens.xds_client.lrs_streams_started` minus `lrs_streams_ended`). A client keeps one "+
			"stream per LRS server while it reports load there, and none when it reports nothing.\n\n"+
			"**Bad**: 0 while the client reports load (its reports go nowhere), or a line that keeps "+
			"dropping to 0 and back: streams break and are opened again.\n\n"+
			"**Do**: see *LRS stream failures* for why, and check that the server serves "+
			"`envoy.service.load_stats.v3.LoadReportingService`.").
		WithTarget(query("A",
			sumBy(g.sel(MetricLRSStreamsStarted, mTarget, mServer), by...)+" - "+
				sumBy(g.sel(MetricLRSStreamsEnded, mTarget, mServer), by...),
			g.legend(LabelServer, LabelTarget))).
		Unit("short").
		Decimals(0).
		Min(0)
}

func (g *gen) lrsStreamFailures() cog.Builder[dashboard.Panel] {
	return timeSeries("LRS stream failures",
		"LRS stream attempts that failed, per minute, per server over the selected processes: every attempt "+
			"that failed before a valid LoadStatsResponse (red, `xdslens.xds_client.lrs_stream_failures`; the client "+
			"logs the first of each cause as a warning, backs off and tries again), and the attempts that could "+
			"not create a stream at all (orange; the server is unreachable).\n\n"+
			"**Bad**: anything above zero that lasts: no load report goes out while no stream is open "+
			"(the red series leaves out the streams that a release or Close ended; the alert "+
			"XdsClientLoadReportingFailing fires on it when no report went out either). "+
			"During fallback (gRFC A71) the load of the fallback server's clusters goes to the fallback server.\n\n"+
			"**Do**: check the server address in the cluster's `lrs_server`, that the server implements "+
			"LRS, and its logs for rejected streams.").
		WithTarget(query("A",
			"60 * "+sumBy(rate(g.sel(MetricLRSStreamFailures, mTarget, mServer)), LabelServer),
			"failed "+legend(LabelServer))).
		WithTarget(query("B",
			"60 * "+sumBy(rate(g.sel(MetricLRSStreamsStartFailed, mTarget, mServer)), LabelServer),
			"failed to start "+legend(LabelServer))).
		Unit("suffix: /min").
		Min(0).
		DrawStyle(common.GraphDrawStyleBars).
		FillOpacity(60).
		OverrideByQuery("A", []dashboard.DynamicConfigValue{fixedColor("red")}).
		OverrideByQuery("B", []dashboard.DynamicConfigValue{fixedColor("orange")})
}

// lrsCallColors are the colors of the kinds of call of MetricLRSCalls.
var lrsCallColors = [][2]string{{"issued", "blue"}, {"succeeded", "green"}, {"errored", "red"}, {"dropped", "orange"}}

func (g *gen) lrsCalls() cog.Builder[dashboard.Panel] {
	p := timeSeries("Calls reported by kind",
		"The calls the load reports carried, per second, by kind, summed over the selected processes "+
			"(`xdslens.xds_client.lrs_calls`): issued, succeeded, errored, and dropped by the client "+
			"(drop overloads, circuit breaking). It is the load the control plane was told of.\n\n"+
			"**Bad**: errored or dropped calls rising: backends fail, or the client drops traffic as "+
			"the control plane's drop_overloads or max_requests say.\n\n"+
			"**Do**: compare with the services' own request metrics; for drops, read the cluster's "+
			"circuit breakers and the endpoints' drop_overloads with CSDS.").
		WithTarget(query("A",
			sumBy(rate(g.sel(MetricLRSCalls, mTarget, mServer)), LabelKind),
			legend(LabelKind))).
		Unit(unitPerSecond("calls")).
		Min(0)
	for _, kc := range lrsCallColors {
		p = p.OverrideByName(kc[0], []dashboard.DynamicConfigValue{fixedColor(kc[1])})
	}
	return p
}
