package dashboards

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// AlertOptions are the thresholds of the alerting rules. The zero value is
// not useful; start from [DefaultAlertOptions].
type AlertOptions struct {
	// DisconnectedFor is how long a server must stay disconnected before
	// XdsClientServerDisconnected fires.
	DisconnectedFor time.Duration
	// FlapWindow and FlapFailures: XdsClientServerFailuresFlapping fires
	// when a server failed at least FlapFailures times within FlapWindow.
	FlapWindow   time.Duration
	FlapFailures int
	// NACKedFor is how long resources must stay NACKed before
	// XdsClientResourcesNACKed fires.
	NACKedFor time.Duration
	// MissingFor is how long resources must stay does-not-exist or timed
	// out before XdsClientResourcesDoesNotExist fires.
	MissingFor time.Duration
	// ReceivedErrorFor is how long resources must keep an error sent by
	// the server before XdsClientResourcesReceivedError fires.
	ReceivedErrorFor time.Duration
	// FallbackFor is how long an authority must use a server other than
	// its primary before XdsClientOnFallbackServer fires.
	FallbackFor time.Duration
	// LoadReportingWindow and LoadReportingFor:
	// XdsClientLoadReportingFailing fires when, for LoadReportingFor, the
	// LRS streams to a server have failed within the last
	// LoadReportingWindow and no load report went out in it.
	LoadReportingWindow time.Duration
	LoadReportingFor    time.Duration
	// LatencyQuantile, LatencySLO, LatencyWindow and LatencyFor:
	// XdsClientFetchLatencyHigh fires when the LatencyQuantile quantile of
	// the answered fetches over LatencyWindow stays above LatencySLO for
	// LatencyFor.
	LatencyQuantile float64
	LatencySLO      time.Duration
	LatencyWindow   time.Duration
	LatencyFor      time.Duration
	// ScrapeFailedFor is how long Prometheus must fail to scrape a
	// process before XdsClientScrapeFailed fires, and how long the jobs of
	// JobSelector must have no target before XdsClientJobAbsent fires.
	ScrapeFailedFor time.Duration
	// JobSelector restricts every alert to the processes it matches: PromQL
	// label matchers without braces, such as `job="payments"` or
	// `job=~"payments|checkout", namespace="prod"`. With it set,
	// XdsClientScrapeFailed watches `up` of exactly those jobs (so a
	// process that never exported a metric is seen too) and
	// XdsClientJobAbsent fires when they have no target at all. Empty (the
	// default) means every job; XdsClientScrapeFailed then watches the
	// processes that exported xDS client metrics within ScrapeLookback, and
	// there is no XdsClientJobAbsent.
	JobSelector string
	// ScrapeLookback is how far back XdsClientScrapeFailed looks for xDS
	// client metrics of a process it cannot scrape, when JobSelector is
	// empty: a process dead for longer than that is no longer alerted on.
	ScrapeLookback time.Duration
	// RunbookURL is the address of RUNBOOK.md; each alert's runbook_url
	// annotation is RunbookURL#alertname-in-lower-case.
	RunbookURL string
	// DataPlane are the thresholds of the alerts on the RPCs of xdslens
	// channels.
	DataPlane DataPlaneAlertOptions
	// Server are the thresholds of the alerts on xDS-enabled servers.
	Server ServerAlertOptions
}

// DefaultAlertOptions returns the thresholds of the committed rule file.
func DefaultAlertOptions() AlertOptions {
	return AlertOptions{
		DisconnectedFor:     5 * time.Minute,
		FlapWindow:          30 * time.Minute,
		FlapFailures:        3,
		NACKedFor:           5 * time.Minute,
		MissingFor:          5 * time.Minute,
		ReceivedErrorFor:    5 * time.Minute,
		FallbackFor:         5 * time.Minute,
		LoadReportingWindow: 10 * time.Minute,
		LoadReportingFor:    5 * time.Minute,
		LatencyQuantile:     0.99,
		LatencySLO:          5 * time.Second,
		LatencyWindow:       10 * time.Minute,
		LatencyFor:          15 * time.Minute,
		ScrapeFailedFor:     5 * time.Minute,
		ScrapeLookback:      time.Hour,
		RunbookURL:          "https://github.com/xdslens/xdslens/blob/main/dashboards/RUNBOOK.md",
		DataPlane:           defaultDataPlaneAlertOptions(),
		Server:              defaultServerAlertOptions(),
	}
}

// Rule is one Prometheus rule: an alerting rule when Alert is set, a
// recording rule when Record is.
type Rule struct {
	// Alert is the alert name, also the RUNBOOK.md section title.
	Alert string
	// Record is the name of the series a recording rule writes.
	Record string
	// Expr is the PromQL expression; every series it returns is an alert,
	// or a recorded series.
	Expr string
	// For is how long Expr must keep returning a series before the alert
	// fires.
	For time.Duration
	// Severity is the severity label of an alert: "critical" or "warning".
	Severity string
	// Summary and Description are the annotations; Description names the
	// labels that locate the problem with {{ $labels.name }}.
	Summary     string
	Description string
	// RunbookURL is the runbook_url annotation.
	RunbookURL string
}

// RuleGroup is a named group of rules, as in a Prometheus rule file.
type RuleGroup struct {
	// Name is the group name.
	Name string
	// Rules are the group's rules, in order.
	Rules []Rule
}

// Alert names, in the order of the rule file.
const (
	// AlertScrapeFailed: Prometheus cannot scrape a process.
	AlertScrapeFailed = "XdsClientScrapeFailed"
	// AlertJobAbsent: the jobs of AlertOptions.JobSelector have no target.
	AlertJobAbsent = "XdsClientJobAbsent"
	// AlertServerDisconnected: a server disconnected, or never reached.
	AlertServerDisconnected = "XdsClientServerDisconnected"
	// AlertServerFlapping: a server fails again and again.
	AlertServerFlapping = "XdsClientServerFailuresFlapping"
	// AlertResourcesNACKed: resources in nacked or nacked_but_cached.
	AlertResourcesNACKed = "XdsClientResourcesNACKed"
	// AlertResourcesDoesNotExist: resources in does_not_exist,
	// does_not_exist_but_cached or timeout.
	AlertResourcesDoesNotExist = "XdsClientResourcesDoesNotExist"
	// AlertResourcesError: resources in received_error or
	// received_error_but_cached.
	AlertResourcesError = "XdsClientResourcesReceivedError"
	// AlertOnFallback: an authority uses a fallback server.
	AlertOnFallback = "XdsClientOnFallbackServer"
	// AlertFetchLatencyHigh: the control plane answers new subscriptions
	// slower than the SLO.
	AlertFetchLatencyHigh = "XdsClientFetchLatencyHigh"
	// AlertLoadReportingFailing: the LRS streams to a server fail and no
	// load report goes out.
	AlertLoadReportingFailing = "XdsClientLoadReportingFailing"
)

// where is the description text that locates a client process.
const where = "client {{ $labels.grpc_target }} on {{ $labels.instance }} (job {{ $labels.job }})"

// AlertRules returns the alerting rules for the xDS client metrics with
// the thresholds of o. Every expression aggregates the OpenTelemetry scope
// labels away, so that an alert is one per client and thing at fault,
// whatever the library's version.
func AlertRules(o AlertOptions) RuleGroup {
	runbook := func(alert string) string { return runbookURL(o.RunbookURL, alert) }
	// s is a selector restricted to o.JobSelector.
	s := func(metric string, matchers ...string) string {
		if o.JobSelector != "" {
			matchers = append([]string{o.JobSelector}, matchers...)
		}
		return sel(metric, matchers...)
	}
	resources := func(states ...string) string {
		return withoutScope("sum", s(MetricResources, LabelCacheState+`=~"`+strings.Join(states, "|")+`"`)) + " > 0"
	}
	rules := scrapeRules(o, s, runbook)
	rules = append(rules,
		Rule{
			Alert:    AlertServerDisconnected,
			Expr:     withoutScope("max", s(MetricConnected)) + " == 0",
			For:      o.DisconnectedFor,
			Severity: "critical",
			Summary:  "xDS client has no working ADS stream to {{ $labels.grpc_xds_server }}",
			Description: "The xDS " + where + " has had no working ADS stream to xDS server " +
				"{{ $labels.grpc_xds_server }} for more than " + promDuration(o.DisconnectedFor) +
				" (or has never had one). It gets no configuration updates from that server and serves what it has cached; " +
				"resources it has not cached cannot be resolved unless it falls back to another server.",
			RunbookURL: runbook(AlertServerDisconnected),
		},
		Rule{
			// The counter of a server starts at 0 when the client first
			// has a channel to it, so increase() sees the first failure
			// once a scrape has seen that 0; and it extrapolates to the
			// window, so its value is an estimate.
			Alert:    AlertServerFlapping,
			Expr:     fmt.Sprintf("%s >= %d", withoutScope("sum", fmt.Sprintf("increase(%s[%s])", s(MetricServerFailures), promDuration(o.FlapWindow))), o.FlapFailures),
			Severity: "warning",
			Summary:  "xDS server {{ $labels.grpc_xds_server }} keeps failing",
			Description: "xDS server {{ $labels.grpc_xds_server }} keeps going from healthy to unhealthy for the xDS " + where +
				": Prometheus estimates {{ $value | printf \"%.1f\" }} failures in the last " + promDuration(o.FlapWindow) +
				fmt.Sprintf(" (the threshold is %d; increase() extrapolates from the samples in the window). ", o.FlapFailures) +
				"Each is a connectivity failure, or an ADS stream that ended before a response (gRFC A57).",
			RunbookURL: runbook(AlertServerFlapping),
		},
		Rule{
			Alert:    AlertResourcesNACKed,
			Expr:     resources("nacked", "nacked_but_cached"),
			For:      o.NACKedFor,
			Severity: "warning",
			Summary:  "xDS client rejects {{ $labels.grpc_xds_resource_type }} resources",
			Description: "The xDS " + where + " has {{ $value }} {{ $labels.grpc_xds_resource_type }} " +
				"resources of authority {{ $labels.grpc_xds_authority }} in state " +
				"{{ $labels.grpc_xds_cache_state }} for more than " + promDuration(o.NACKedFor) +
				": the control plane sent versions that fail validation. nacked_but_cached still serves " +
				"the previous version; nacked has nothing to serve.",
			RunbookURL: runbook(AlertResourcesNACKed),
		},
		Rule{
			Alert:    AlertResourcesDoesNotExist,
			Expr:     resources("does_not_exist", "does_not_exist_but_cached", "timeout"),
			For:      o.MissingFor,
			Severity: "warning",
			Summary:  "xDS client is missing {{ $labels.grpc_xds_resource_type }} resources",
			Description: "The xDS " + where + " has {{ $value }} {{ $labels.grpc_xds_resource_type }} " +
				"resources of authority {{ $labels.grpc_xds_authority }} in state " +
				"{{ $labels.grpc_xds_cache_state }} for more than " + promDuration(o.MissingFor) +
				": the server says they do not exist, or did not answer for them in time. Watchers of " +
				"does_not_exist and timeout resources have nothing to use; does_not_exist_but_cached " +
				"still serves a resource the server deleted.",
			RunbookURL: runbook(AlertResourcesDoesNotExist),
		},
		Rule{
			Alert:    AlertResourcesError,
			Expr:     resources("received_error", "received_error_but_cached"),
			For:      o.ReceivedErrorFor,
			Severity: "warning",
			Summary:  "xDS server sends errors for {{ $labels.grpc_xds_resource_type }} resources",
			Description: "The xDS " + where + " has {{ $value }} {{ $labels.grpc_xds_resource_type }} " +
				"resources of authority {{ $labels.grpc_xds_authority }} in state " +
				"{{ $labels.grpc_xds_cache_state }} for more than " + promDuration(o.ReceivedErrorFor) +
				": the control plane answers them with an error (xRFC TP3) instead of the resource.",
			RunbookURL: runbook(AlertResourcesError),
		},
		Rule{
			// The server in use is not the first of the authority's
			// list (gRFC A71).
			Alert:    AlertOnFallback,
			Expr:     withoutScope("max", s(MetricAuthorityServer, LabelPriority+`!="0"`)) + " == 1",
			For:      o.FallbackFor,
			Severity: "warning",
			Summary:  "xDS client uses fallback server {{ $labels.grpc_xds_server }} for authority {{ $labels.grpc_xds_authority }}",
			Description: "For more than " + promDuration(o.FallbackFor) + " the xDS " + where +
				" has taken authority {{ $labels.grpc_xds_authority }} from {{ $labels.grpc_xds_server }}, " +
				"which is at index {{ $labels.priority }} of the authority's server list in the bootstrap (0 is the primary): " +
				"the servers before it failed while some resource was not cached, and the client fell back (gRFC A71).",
			RunbookURL: runbook(AlertOnFallback),
		},
		Rule{
			Alert: AlertFetchLatencyHigh,
			Expr: fmt.Sprintf("histogram_quantile(%s, %s) > %s",
				strconv.FormatFloat(o.LatencyQuantile, 'g', -1, 64),
				fmt.Sprintf("sum without (%s, %s, %s) (rate(%s[%s]))", LabelScopeName, LabelScopeVersion, LabelOutcome,
					s(MetricFetchDuration+"_bucket", LabelOutcome+`=~"`+outcomesAnswered+`"`),
					promDuration(o.LatencyWindow)),
				strconv.FormatFloat(o.LatencySLO.Seconds(), 'g', -1, 64)),
			For:      o.LatencyFor,
			Severity: "warning",
			Summary:  "xDS server {{ $labels.grpc_xds_server }} answers {{ $labels.grpc_xds_resource_type }} subscriptions slowly",
			Description: fmt.Sprintf("The p%s of the time xDS server {{ $labels.grpc_xds_server }} takes to "+
				"answer new {{ $labels.grpc_xds_resource_type }} subscriptions of the xDS %s is "+
				"{{ $value | humanizeDuration }} over the last %s, above the SLO of %s.",
				strconv.FormatFloat(o.LatencyQuantile*100, 'g', -1, 64), where,
				promDuration(o.LatencyWindow), o.LatencySLO),
			RunbookURL: runbook(AlertFetchLatencyHigh),
		},
		loadReportingRule(o, s, runbook),
	)
	rules = append(rules, dataPlaneRules(o, s, runbook)...)
	rules = append(rules, serverRules(o, s, runbook)...)
	return RuleGroup{Name: "xdslens-xds-client-alerts", Rules: rules}
}

// loadReportingRule returns the alert on load reporting: LRS streams to a
// server that failed before any response within the window, while no
// report went out in it. A stream that a release or Close ends is no
// failure, and a blip that the next stream repairs sends reports again.
func loadReportingRule(o AlertOptions, s func(string, ...string) string, runbook func(string) string) Rule {
	window := promDuration(o.LoadReportingWindow)
	increase := func(metric string) string {
		return withoutScope("sum", fmt.Sprintf("increase(%s[%s])", s(metric), window)) + " > 0"
	}
	return Rule{
		Alert:    AlertLoadReportingFailing,
		Expr:     increase(MetricLRSStreamFailures) + " unless " + increase(MetricLRSReports),
		For:      o.LoadReportingFor,
		Severity: "warning",
		Summary:  "xDS client cannot report load to {{ $labels.grpc_xds_server }}",
		Description: "The LRS (load reporting) streams of the xDS " + where + " to {{ $labels.grpc_xds_server }} " +
			"keep failing before any response (Prometheus estimates {{ $value | printf \"%.1f\" }} failures in the last " + window +
			") and no load report went out in that window, for more than " + promDuration(o.LoadReportingFor) + ". " +
			"The loads are kept and go out with the next stream's first report, but meanwhile the control plane " +
			"balances traffic on stale figures. During fallback (gRFC A71) the clusters of the fallback server " +
			"report their load to it: a fallback server without LRS fires this alert.",
		RunbookURL: runbook(AlertLoadReportingFailing),
	}
}

// scrapeRules returns the alerts on the scrape itself: a process
// Prometheus cannot scrape, and (with a job selector) jobs with no target.
func scrapeRules(o AlertOptions, s func(string, ...string) string, runbook func(string) string) []Rule {
	up := s("up") + " == 0"
	scope := "a process of job {{ $labels.job }}"
	if o.JobSelector == "" {
		// Which jobs hold xDS clients is not known: watch the processes
		// that exported the connected gauge lately.
		up = fmt.Sprintf("%s and on (job, instance) present_over_time(%s[%s])", up, MetricConnected, promDuration(o.ScrapeLookback))
		scope = "a process of job {{ $labels.job }} that exported xDS client metrics in the last " + promDuration(o.ScrapeLookback)
	}
	rules := []Rule{{
		Alert:    AlertScrapeFailed,
		Expr:     up,
		For:      o.ScrapeFailedFor,
		Severity: "critical",
		Summary:  "Prometheus cannot scrape {{ $labels.instance }}",
		Description: "Prometheus has failed to scrape {{ $labels.instance }}, " + scope + ", for more than " +
			promDuration(o.ScrapeFailedFor) + ": the process is down, restarting, or its metrics port is unreachable. " +
			"Its xDS clients are not watched: every other alert is blind to them.",
		RunbookURL: runbook(AlertScrapeFailed),
	}}
	if o.JobSelector != "" {
		rules = append(rules, Rule{
			Alert:    AlertJobAbsent,
			Expr:     "absent(" + s("up") + ")",
			For:      o.ScrapeFailedFor,
			Severity: "critical",
			Summary:  "Prometheus has no target for " + o.JobSelector,
			Description: "For more than " + promDuration(o.ScrapeFailedFor) + " Prometheus has had no target matching " +
				o.JobSelector + " (job {{ $labels.job }}): service discovery finds no xDS client process, so none is watched.",
			RunbookURL: runbook(AlertJobAbsent),
		})
	}
	return rules
}

// promDuration formats d as a Prometheus duration such as "5m" or "1h30m".
func promDuration(d time.Duration) string {
	if d == 0 {
		return "0s"
	}
	var b strings.Builder
	units := []struct {
		size time.Duration
		name string
	}{{time.Hour, "h"}, {time.Minute, "m"}, {time.Second, "s"}, {time.Millisecond, "ms"}}
	for _, u := range units {
		if n := d / u.size; n > 0 {
			fmt.Fprintf(&b, "%d%s", n, u.name)
			d -= n * u.size
		}
	}
	return b.String()
}

// RulesYAML renders groups as a Prometheus rule file.
func RulesYAML(groups ...RuleGroup) []byte {
	return rulesFile("Prometheus recording and alerting rules for xdslens xDS clients.", groups...)
}

// rulesFile renders groups as a Prometheus rule file whose header starts
// with title.
func rulesFile(title string, groups ...RuleGroup) []byte {
	return renderYAML(title+"\n"+generated+"\nRunbook: dashboards/RUNBOOK.md.", yamlMap{{"groups", ruleGroups(groups)}})
}

// generated is the line that heads every generated file.
const generated = "Generated by `go generate ./dashboards/...` from the Go code of package dashboards; do not edit."

// ruleGroups returns groups as the list of a rule file's groups key.
func ruleGroups(groups []RuleGroup) []yamlMap {
	out := make([]yamlMap, len(groups))
	for i, g := range groups {
		rules := make([]yamlMap, len(g.Rules))
		for j, r := range g.Rules {
			rules[j] = r.yaml()
		}
		out[i] = yamlMap{{"name", g.Name}, {"rules", rules}}
	}
	return out
}

// yaml returns r as an entry of a rule group's rules.
func (r Rule) yaml() yamlMap {
	if r.Record != "" {
		return yamlMap{{"record", r.Record}, {"expr", r.Expr}}
	}
	m := yamlMap{{"alert", r.Alert}, {"expr", r.Expr}}
	if r.For > 0 {
		m = append(m, yamlField{"for", promDuration(r.For)})
	}
	return append(m,
		yamlField{"labels", yamlMap{{"severity", r.Severity}}},
		yamlField{"annotations", yamlMap{
			{"summary", r.Summary},
			{"description", r.Description},
			{"runbook_url", r.RunbookURL},
		}})
}

// RuleFile returns the rule file with the recording rules and the alerts
// of o: the file that Prometheus must load for the dashboards and alerts.
func RuleFile(o AlertOptions) []byte {
	return RulesYAML(RecordingRules(), AlertRules(o))
}

// runbookURL is the address of alert's section of the runbook at base.
func runbookURL(base, alert string) string {
	return base + "#" + strings.ToLower(alert)
}
