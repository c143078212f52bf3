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

// Write the alerting rules with a tighter latency SLO than the default.
func ExampleAlertRules() {
	o := dashboards.DefaultAlertOptions()
	o.LatencySLO = 2 * time.Second
	groups := dashboards.AlertRules(o)
	for _, r := range groups[0].Rules {
		fmt.Println(r.Alert, r.Severity)
	}
	_ = os.WriteFile(os.DevNull, dashboards.AlertRulesYAML(groups), 0o644)
	// Output:
	// XdsClientServerDisconnected critical
	// XdsClientServerFailuresFlapping warning
	// XdsClientResourcesNACKed warning
	// XdsClientResourcesDoesNotExist warning
	// XdsClientResourcesReceivedError warning
	// XdsClientOnFallbackServer warning
	// XdsClientFetchLatencyHigh warning
}
