package dashboards_test

import (
	"fmt"
	"os"
	"time"

	"github.com/xdslens/xdslens/dashboards"
)

// Build the overview dashboard and write it as the JSON Grafana imports.
func ExampleOverview() {
	d, err := dashboards.Overview()
	if err != nil {
		fmt.Println(err)
		return
	}
	js, err := dashboards.MarshalDashboard(d)
	if err != nil {
		fmt.Println(err)
		return
	}
	_ = js // os.WriteFile("xds-client-overview.json", js, 0o644)
	fmt.Println(*d.Title, *d.Uid)
	// Output: xDS client overview xdslens-xds-client-overview
}

// Write the rule file with a tighter latency SLO than the default, for
// the processes of one job.
func ExampleAlertRules() {
	o := dashboards.DefaultAlertOptions()
	o.LatencySLO = 2 * time.Second
	o.JobSelector = `job="payments"`
	group := dashboards.AlertRules(o)
	for _, r := range group.Rules {
		fmt.Println(r.Alert, r.Severity)
	}
	_ = os.WriteFile(os.DevNull, dashboards.RulesYAML(dashboards.RecordingRules(), group), 0o644)
	// Output:
	// XdsClientScrapeFailed critical
	// XdsClientJobAbsent critical
	// XdsClientServerDisconnected critical
	// XdsClientServerFailuresFlapping warning
	// XdsClientResourcesNACKed warning
	// XdsClientResourcesDoesNotExist warning
	// XdsClientResourcesReceivedError warning
	// XdsClientOnFallbackServer warning
	// XdsClientFetchLatencyHigh warning
	// XdsClientLoadReportingFailing warning
	// XdsClientRPCsFailing critical
	// XdsClientBackendErrors critical
	// XdsClientRPCsDropped warning
	// XdsClientCircuitBreaking warning
	// XdsClientInFlightNearMaxRequests warning
	// XdsClientEndpointsEjected warning
	// XdsServerNotServing critical
	// XdsServerHandshakeFailures warning
	// XdsServerGoAwayIgnored warning
	// XdsServerRBACDenialSpike warning
}
