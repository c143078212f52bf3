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
	// RecordInFlight is [MetricDataPlaneInFlight] without the scope labels.
	RecordInFlight = "instance:" + MetricDataPlaneInFlight + ":max"
	// RecordMaxRequests is [MetricDataPlaneMaxRequests] without the scope
	// labels.
	RecordMaxRequests = "instance:" + MetricDataPlaneMaxRequests + ":max"
)

// RecordingRules returns the recording rules of the recorded series
// ([RecordConnected], [RecordResources], [RecordAuthorityServer],
// [RecordInFlight], [RecordMaxRequests], [RecordServerServing]).
func RecordingRules() RuleGroup {
	return RuleGroup{Name: "xdslens-xds-client-records", Rules: []Rule{
		{Record: RecordConnected, Expr: withoutScope("max", MetricConnected)},
		{Record: RecordResources, Expr: withoutScope("sum", MetricResources)},
		{Record: RecordAuthorityServer, Expr: withoutScope("max", MetricAuthorityServer)},
		{Record: RecordInFlight, Expr: withoutScope("max", MetricDataPlaneInFlight)},
		{Record: RecordMaxRequests, Expr: withoutScope("max", MetricDataPlaneMaxRequests)},
		{Record: RecordServerServing, Expr: withoutScope("max", MetricServerServing)},
	}}
}
