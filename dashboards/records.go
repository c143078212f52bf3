package dashboards

// Recorded series: the queries the dashboards repeat, evaluated once per
// rule evaluation by the recording rules of [RecordingRules]. Each keeps
// every label of its source series (job, instance, the client's labels)
// but the OpenTelemetry scope. The dashboards read them, so the rule file
// must be loaded where the dashboards' Prometheus runs.
const (
	// RecordConnected is [MetricConnected] without the scope labels.
	RecordConnected = "instance:" + MetricConnected + ":max"
	// RecordResources is [MetricResources] without the scope labels.
	RecordResources = "instance:" + MetricResources + ":sum"
	// RecordAuthorityServer is [MetricAuthorityServer] without the scope
	// labels.
	RecordAuthorityServer = "instance:" + MetricAuthorityServer + ":max"
)

// RecordingRules returns the recording rules of the recorded series
// ([RecordConnected], [RecordResources], [RecordAuthorityServer]).
func RecordingRules() RuleGroup {
	return RuleGroup{Name: "xdslens-xds-client-records", Rules: []Rule{
		{Record: RecordConnected, Expr: withoutScope("max", MetricConnected)},
		{Record: RecordResources, Expr: withoutScope("sum", MetricResources)},
		{Record: RecordAuthorityServer, Expr: withoutScope("max", MetricAuthorityServer)},
	}}
}
