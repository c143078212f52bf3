package dashboards

import (
	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
)

// loadBalancingRow is the overview's row of the endpoint policies of the
// xdslens channels: gRFC A78's load-balancing metrics, from
// package telemetry/dataplane.
func (g *gen) loadBalancingRow() row {
	return row{"Load balancing", []panel{
		{g.connectionAttempts(), 12, 8, nil},
		{g.wrrWeights(), 12, 8, nil},
	}}
}

func (g *gen) connectionAttempts() cog.Builder[dashboard.Panel] {
	return timeSeries("Connections to endpoints by cluster",
		"Connection attempts of the channels' endpoint policies per minute, by leaf cluster, summed over the selected "+
			"processes and targets (gRFC A78's pick_first metrics, counted for every endpoint policy, each of which "+
			"connects with pick_first): attempts that succeeded above the axis, attempts that failed and "+
			"disconnections of READY connections below it.\n\n"+
			"**Bad**: failed attempts that go on, or disconnections that repeat: the cluster's endpoints refuse or "+
			"drop connections (a backend down, a port closed, TLS refused), and its RPCs go to fewer endpoints.\n\n"+
			"**Do**: check the cluster's endpoints (CSDS, EDS) against the backends that run; *RPCs by cluster and "+
			"outcome* shows whether RPCs fail with no_endpoint.").
		WithTarget(query("A",
			"60 * "+sumBy(rate(g.sel(MetricPickFirstAttemptsSucceeded, mTarget)), LabelBackendService),
			legend(LabelBackendService)+" connected")).
		WithTarget(query("B",
			"60 * "+sumBy(rate(g.sel(MetricPickFirstAttemptsFailed, mTarget)), LabelBackendService)+" > 0",
			legend(LabelBackendService)+" failed")).
		WithTarget(query("C",
			"60 * "+sumBy(rate(g.sel(MetricPickFirstDisconnections, mTarget)), LabelBackendService)+" > 0",
			legend(LabelBackendService)+" disconnected")).
		Unit("per minute").
		OverrideByQuery("B", []dashboard.DynamicConfigValue{{Id: "custom.transform", Value: "negative-Y"}}).
		OverrideByQuery("C", []dashboard.DynamicConfigValue{{Id: "custom.transform", Value: "negative-Y"}})
}

func (g *gen) wrrWeights() cog.Builder[dashboard.Panel] {
	return timeSeries("Endpoint weights (weighted_round_robin)",
		"The median and the 90th percentile of the weights weighted_round_robin gives endpoints (gRFC A58: "+
			"requests per second over utilization, from the backends' ORCA reports), by leaf cluster, over the "+
			"selected processes and targets; and, per minute, its scheduler updates that fell back to round robin "+
			"for want of usable weights (`grpc.lb.wrr.rr_fallback`).\n\n"+
			"**Bad**: fallbacks that go on: the backends send no ORCA load reports (or not within the weight "+
			"expiration period), so traffic is not weighted; a weight of 0 at the median: most endpoints have none "+
			"usable yet.\n\n"+
			"**Do**: check that the backends report ORCA utilization (per call, or out of band when the cluster "+
			"asks for it) and that the cluster's blackout and expiration periods suit their reporting rate.").
		WithTarget(query("A",
			"histogram_quantile(0.5, "+sumBy(increaseFromBirth(g.sel(MetricWRREndpointWeights+"_bucket", mTarget), rateInterval), LabelBackendService, "le")+")",
			legend(LabelBackendService)+" median")).
		WithTarget(query("B",
			"histogram_quantile(0.9, "+sumBy(increaseFromBirth(g.sel(MetricWRREndpointWeights+"_bucket", mTarget), rateInterval), LabelBackendService, "le")+")",
			legend(LabelBackendService)+" p90")).
		WithTarget(query("C",
			"60 * "+sumBy(rate(g.sel(MetricWRRRRFallback, mTarget)), LabelBackendService)+" > 0",
			legend(LabelBackendService)+" fallbacks/min"))
}
