package dashboards

import (
	"bytes"
	"encoding/json"
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
	// LatencyQuantile, LatencySLO, LatencyWindow and LatencyFor:
	// XdsClientFetchLatencyHigh fires when the LatencyQuantile quantile of
	// the answered fetches over LatencyWindow stays above LatencySLO for
	// LatencyFor.
	LatencyQuantile float64
	LatencySLO      time.Duration
	LatencyWindow   time.Duration
	LatencyFor      time.Duration
	// RunbookURL is the address of RUNBOOK.md; each alert's runbook_url
	// annotation is RunbookURL#alertname-in-lower-case.
	RunbookURL string
}

// DefaultAlertOptions returns the thresholds of the committed rule file.
func DefaultAlertOptions() AlertOptions {
	return AlertOptions{
		DisconnectedFor:  5 * time.Minute,
		FlapWindow:       30 * time.Minute,
		FlapFailures:     3,
		NACKedFor:        5 * time.Minute,
		MissingFor:       5 * time.Minute,
		ReceivedErrorFor: 5 * time.Minute,
		FallbackFor:      5 * time.Minute,
		LatencyQuantile:  0.99,
		LatencySLO:       5 * time.Second,
		LatencyWindow:    10 * time.Minute,
		LatencyFor:       15 * time.Minute,
		RunbookURL:       "https://github.com/xdslens/xdslens/blob/main/dashboards/RUNBOOK.md",
	}
}

// Rule is one Prometheus alerting rule.
type Rule struct {
	// Alert is the alert name, also the RUNBOOK.md section title.
	Alert string
	// Expr is the PromQL expression; every series it returns is an alert.
	Expr string
	// For is how long Expr must keep returning a series before the alert
	// fires.
	For time.Duration
	// Severity is the severity label: "critical" or "warning".
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
)

// fallbackExpr finds the authorities that use a fallback server (gRFC
// A71): the server in use is not the first of the authority's list.
var fallbackExpr = sel(MetricAuthorityServer, LabelPriority+`!="0"`) + " == 1"

// where is the description text that locates a client process.
const where = "client {{ $labels.grpc_target }} on {{ $labels.instance }} (job {{ $labels.job }})"

// AlertRules returns the alerting rules for the xDS client metrics with
// the thresholds of o.
func AlertRules(o AlertOptions) []RuleGroup {
	runbook := func(alert string) string {
		return o.RunbookURL + "#" + strings.ToLower(alert)
	}
	resources := func(states ...string) string {
		return sel(MetricResources, LabelCacheState+`=~"`+strings.Join(states, "|")+`"`) + " > 0"
	}
	rules := []Rule{
		{
			Alert:    AlertServerDisconnected,
			Expr:     sel(MetricConnected) + " == 0",
			For:      o.DisconnectedFor,
			Severity: "critical",
			Summary:  "xDS client has no working ADS stream to {{ $labels.grpc_xds_server }}",
			Description: "The xDS " + where + " has had no working ADS stream to xDS server " +
				"{{ $labels.grpc_xds_server }} for more than " + promDuration(o.DisconnectedFor) +
				". It gets no configuration updates from that server and serves what it has cached; " +
				"resources it has not cached cannot be resolved unless it falls back to another server.",
			RunbookURL: runbook(AlertServerDisconnected),
		},
		{
			// The counter of a server appears at its first failure, so
			// increase() sees the failures after the first one.
			Alert:    AlertServerFlapping,
			Expr:     fmt.Sprintf("increase(%s[%s]) >= %d", MetricServerFailures, promDuration(o.FlapWindow), o.FlapFailures),
			Severity: "warning",
			Summary:  "xDS server {{ $labels.grpc_xds_server }} keeps failing",
			Description: "xDS server {{ $labels.grpc_xds_server }} went from healthy to unhealthy " +
				"{{ $value | printf \"%.0f\" }} times in the last " + promDuration(o.FlapWindow) + " for the xDS " + where +
				": connectivity failures, or ADS streams that end before a response (gRFC A57).",
			RunbookURL: runbook(AlertServerFlapping),
		},
		{
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
		{
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
		{
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
		{
			Alert:    AlertOnFallback,
			Expr:     fallbackExpr,
			For:      o.FallbackFor,
			Severity: "warning",
			Summary:  "xDS client uses fallback server {{ $labels.grpc_xds_server }} for authority {{ $labels.grpc_xds_authority }}",
			Description: "For more than " + promDuration(o.FallbackFor) + " the xDS " + where +
				" has taken authority {{ $labels.grpc_xds_authority }} from {{ $labels.grpc_xds_server }} " +
				"while another of its servers is disconnected and used by no authority: the authority " +
				"has fallen back from a failing primary (gRFC A71).",
			RunbookURL: runbook(AlertOnFallback),
		},
		{
			Alert: AlertFetchLatencyHigh,
			Expr: fmt.Sprintf("histogram_quantile(%s, %s) > %s",
				strconv.FormatFloat(o.LatencyQuantile, 'g', -1, 64),
				sumBy(fmt.Sprintf("rate(%s[%s])",
					sel(MetricFetchDuration+"_bucket", LabelOutcome+`=~"`+outcomesAnswered+`"`),
					promDuration(o.LatencyWindow)),
					"le", "job", "instance", LabelTarget, LabelServer, LabelResourceType),
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
	}
	return []RuleGroup{{Name: "xdslens-xds-client", Rules: rules}}
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

// AlertRulesYAML renders groups as a Prometheus rule file.
func AlertRulesYAML(groups []RuleGroup) []byte {
	var b bytes.Buffer
	b.WriteString("# Prometheus alerting rules for xdslens xDS clients.\n")
	b.WriteString("# Generated by `go generate ./dashboards/...` from alerts.go; do not edit.\n")
	b.WriteString("# Runbook: dashboards/RUNBOOK.md.\n")
	b.WriteString("groups:\n")
	for _, g := range groups {
		fmt.Fprintf(&b, "  - name: %s\n", yamlString(g.Name))
		b.WriteString("    rules:\n")
		for _, r := range g.Rules {
			fmt.Fprintf(&b, "      - alert: %s\n", yamlString(r.Alert))
			if strings.Contains(r.Expr, "\n") {
				b.WriteString("        expr: |-\n")
				for _, line := range strings.Split(r.Expr, "\n") {
					b.WriteString("          " + line + "\n")
				}
			} else {
				fmt.Fprintf(&b, "        expr: %s\n", yamlString(r.Expr))
			}
			if r.For > 0 {
				fmt.Fprintf(&b, "        for: %s\n", promDuration(r.For))
			}
			b.WriteString("        labels:\n")
			fmt.Fprintf(&b, "          severity: %s\n", yamlString(r.Severity))
			b.WriteString("        annotations:\n")
			fmt.Fprintf(&b, "          summary: %s\n", yamlString(r.Summary))
			fmt.Fprintf(&b, "          description: %s\n", yamlString(r.Description))
			fmt.Fprintf(&b, "          runbook_url: %s\n", yamlString(r.RunbookURL))
		}
	}
	return b.Bytes()
}

// yamlString quotes s as a YAML double-quoted scalar (the JSON string
// syntax, which YAML accepts as is).
func yamlString(s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s); err != nil {
		// Encoding a string cannot fail.
		panic(err)
	}
	return strings.TrimSuffix(b.String(), "\n")
}
