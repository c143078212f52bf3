package dashboards_test

import (
	"fmt"
	"time"

	"github.com/xdslens/xdslens/dashboards"
)

// EndpointsEjectedResolveBound is how soon after an ejected endpoint
// returns for good XdsClientEndpointsEjected must be resolved, with the
// committed rules and an evaluation every minute: EjectedWindow and one
// evaluation. RUNBOOK.md gives it.
const EndpointsEjectedResolveBound = 2 * time.Minute

// endpointsEjectedTests returns the tests of XdsClientEndpointsEjected of
// o: it fires on a cluster a third of whose endpoints stay ejected, an
// endpoint back for a scrape between two ejections included; not on a
// cluster under the threshold, one ejected for less than EjectedFor, one
// whose outlier detection was turned off, or one the channel sends no
// RPC to (the gauges of a closed channel keep their last values); and it
// resolves once the endpoint is back for good, or once the channel's RPCs
// to the cluster stop.
func endpointsEjectedTests(o dashboards.AlertOptions) []ruleTest {
	d := o.DataPlane
	// gauge is one of the two gauges of a leaf cluster in the channel;
	// their grpc_lb_backend_service is the leaf cluster.
	gauge := func(metric, cluster string) string {
		return fmt.Sprintf(`%s{%s, %s, %s, grpc_lb_backend_service=%q}`, metric, pod, channel, scope, cluster)
	}
	ejected := func(cluster string) string { return gauge(dashboards.MetricDataPlaneEjectedEndpoints, cluster) }
	endpoints := func(cluster string) string { return gauge(dashboards.MetricDataPlaneOutlierEndpoints, cluster) }
	// okCalls are the calls the channel sent to leaf cluster leaf of the
	// route's cluster agg that succeeded.
	okCalls := func(leaf string) string {
		return fmt.Sprintf(`%s{%s, %s, %s, grpc_lb_backend_service="agg", xdslens_leaf_cluster=%q, grpc_status="OK"}`,
			dashboards.MetricDataPlaneCalls, pod, channel, scope, leaf)
	}
	const scrape = 15 * time.Second
	c1 := channelLabels(dashboards.LabelBackendService, "c1")
	return []ruleTest{
		{
			name:     dashboards.AlertEndpointsEjected,
			interval: scrape,
			series: map[string]string{
				// c1: 1 of 3 ejected, back for one scrape every 2m15s
				// (at 2m, 4m15s...: its ejection time over, ejected
				// again at the next interval), which an evaluation at
				// 2m sees.
				ejected("c1"):   "1x7 0 1x7 0 1x7 0 1x7 0 1x7",
				endpoints("c1"): "3x44",
				// c2: 2 of 10 ejected (20 %), under the threshold.
				ejected("c2"):   "2x44",
				endpoints("c2"): "10x44",
				// c3: 1 of 2 ejected for 3 minutes, then back.
				ejected("c3"):   "1x11 0x32",
				endpoints("c3"): "2x44",
				// c4: 1 of 2 ejected, then outlier detection turned
				// off: the return leaves both gauges at 0.
				ejected("c4"):   "1x3 0x40",
				endpoints("c4"): "2x3 0x40",
				// c5: 1 of 2 ejected, and no RPC: the channel was
				// closed, or the cluster left its config, long ago.
				ejected("c5"):   "1x44",
				endpoints("c5"): "2x44",
				okCalls("c1"):   "0+10x44",
				okCalls("c2"):   "0+10x44",
				okCalls("c3"):   "0+10x44",
				okCalls("c4"):   "0+10x44",
				okCalls("c5"):   "100x44",
			},
			// The calls' rate needs two samples: pending from 1m.
			evals: beforeAndAt(dashboards.AlertEndpointsEjected, time.Minute+d.EjectedFor, firing{c1, 1.0 / 3}),
		},
		{
			name:     dashboards.AlertEndpointsEjected + " resolves",
			interval: scrape,
			series: map[string]string{
				// 1 of 3 ejected for 10 minutes, then back for good.
				ejected("c1"):   "1x39 0x40",
				endpoints("c1"): "3x80",
				okCalls("c1"):   "0+10x80",
			},
			evals: []ruleEval{
				{at: 10 * time.Minute, alert: dashboards.AlertEndpointsEjected, want: []firing{{c1, 1.0 / 3}}},
				{at: 10*time.Minute + EndpointsEjectedResolveBound, alert: dashboards.AlertEndpointsEjected},
			},
		},
		{
			name:     dashboards.AlertEndpointsEjected + " resolves without RPCs",
			interval: scrape,
			series: map[string]string{
				// 1 of 3 ejected as the channel closes at 10m: the
				// gauges stay, the calls stop.
				ejected("c1"):   "1x80",
				endpoints("c1"): "3x80",
				okCalls("c1"):   "0+10x39 400x40",
			},
			evals: []ruleEval{
				{at: 10 * time.Minute, alert: dashboards.AlertEndpointsEjected, want: []firing{{c1, 1.0 / 3}}},
				{at: 10*time.Minute + d.RateWindow + time.Minute, alert: dashboards.AlertEndpointsEjected},
			},
		},
	}
}
