package dashboards

import (
	"strconv"
	"time"
)

// Alert names of xDS-enabled servers, after the data plane's in the rule
// file.
const (
	// AlertServerNotServing: an address of an xDS-enabled server does not
	// serve.
	AlertServerNotServing = "XdsServerNotServing"
	// AlertServerHandshakeFailures: many TLS handshakes to an xDS-enabled
	// server fail.
	AlertServerHandshakeFailures = "XdsServerHandshakeFailures"
	// AlertServerGoAwayIgnored: an xDS-enabled server closed drained
	// connections whose clients opened a stream after the final GOAWAY.
	AlertServerGoAwayIgnored = "XdsServerGoAwayIgnored"
	// AlertServerDenialSpike: RBAC denies many more RPCs than it did.
	AlertServerDenialSpike = "XdsServerRBACDenialSpike"
)

// ServerAlertOptions are the thresholds of the alerts on xDS-enabled
// servers, part of [AlertOptions].
type ServerAlertOptions struct {
	// NotServingFor is how long an address must stay NOT_SERVING before
	// XdsServerNotServing fires.
	NotServingFor time.Duration
	// RateWindow is the window of the rates the server alerts compare.
	RateWindow time.Duration
	// HandshakeFailureRatio and HandshakeFailuresFor:
	// XdsServerHandshakeFailures fires when more than
	// HandshakeFailureRatio of the connections a filter chain accepts fail
	// their handshake for HandshakeFailuresFor.
	HandshakeFailureRatio float64
	HandshakeFailuresFor  time.Duration
	// DenialSpikeFactor, DenialBaseline, DenialMinRate and DenialSpikeFor:
	// XdsServerRBACDenialSpike fires when an RBAC filter denies more than
	// DenialMinRate RPCs per second over RateWindow, and more than
	// DenialSpikeFactor times its rate over the DenialBaseline before,
	// for DenialSpikeFor.
	DenialSpikeFactor float64
	DenialBaseline    time.Duration
	DenialMinRate     float64
	DenialSpikeFor    time.Duration
}

// defaultServerAlertOptions are the server thresholds of the committed
// rule file.
func defaultServerAlertOptions() ServerAlertOptions {
	return ServerAlertOptions{
		NotServingFor:         5 * time.Minute,
		RateWindow:            5 * time.Minute,
		HandshakeFailureRatio: 0.1,
		HandshakeFailuresFor:  10 * time.Minute,
		DenialSpikeFactor:     3,
		DenialBaseline:        time.Hour,
		DenialMinRate:         0.1,
		DenialSpikeFor:        5 * time.Minute,
	}
}

// serverWhere is the description text that locates an address of a
// server.
const serverWhere = "address {{ $labels.xdslens_address }} of the xDS-enabled server on {{ $labels.instance }} (job {{ $labels.job }})"

// serverRules returns the alerts on xDS-enabled servers of o; s is a
// selector restricted to the job selector.
func serverRules(o AlertOptions, s func(string, ...string) string, runbook func(string) string) []Rule {
	v := o.Server
	window := promDuration(v.RateWindow)
	rateOf := func(sel, w string) string { return "rate(" + sel + "[" + w + "])" }
	num := func(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }
	denyRate := withoutScopeAnd("sum", rateOf(s(MetricServerRBACDecisions, LabelRBACDecision+`="deny"`), window), LabelRBACPolicy)
	baseline := withoutScopeAnd("sum", "rate("+s(MetricServerRBACDecisions, LabelRBACDecision+`="deny"`)+"["+promDuration(v.DenialBaseline)+"] offset "+window+")", LabelRBACPolicy)
	return []Rule{
		{
			Alert:    AlertServerNotServing,
			Expr:     withoutScope("max", s(MetricServerServing)) + " == 0",
			For:      v.NotServingFor,
			Severity: "critical",
			Summary:  "xDS-enabled server address {{ $labels.xdslens_address }} is not serving",
			Description: "The " + serverWhere + " has not served for more than " + promDuration(v.NotServingFor) +
				": its Listener {{ $labels.xdslens_listener }} has not come, does not exist, was rejected or deleted, or names another address " +
				"(gRFC A36). The address closes every connection as it comes, so the process takes no traffic on it.",
			RunbookURL: runbook(AlertServerNotServing),
		},
		{
			Alert: AlertServerHandshakeFailures,
			Expr: withoutScope("sum", rateOf(s(MetricServerHandshakeFailures), window)) +
				" / " + withoutScope("sum", rateOf(s(MetricServerConnectionsAccepted), window)) + " > " + num(v.HandshakeFailureRatio),
			For:      v.HandshakeFailuresFor,
			Severity: "warning",
			Summary:  "TLS handshakes to {{ $labels.xdslens_address }} fail",
			Description: "{{ $value | humanizePercentage }} of the connections that filter chain {{ $labels.xdslens_filter_chain }} of the " + serverWhere +
				" accepted failed their TLS handshake over " + window + ", above " + num(v.HandshakeFailureRatio*100) + "% for more than " +
				promDuration(v.HandshakeFailuresFor) + ": clients without a certificate the chain's roots verify (with require_client_certificate), " +
				"plaintext clients on a TLS chain, or certificates the server cannot read.",
			RunbookURL: runbook(AlertServerHandshakeFailures),
		},
		{
			Alert:    AlertServerGoAwayIgnored,
			Expr:     withoutScope("sum", "increase("+s(MetricServerDrainForcedCloses, LabelReason+`="goaway_ignored"`)+"["+window+"])") + " > 0",
			Severity: "warning",
			Summary:  "Clients of {{ $labels.xdslens_address }} ignore the GOAWAY of drained connections",
			Description: "The " + serverWhere + " closed {{ $value | printf \"%.3g\" }} drained connections of filter chain {{ $labels.xdslens_filter_chain }} over " + window +
				" because their clients opened a stream after the final GOAWAY: clients that do not keep HTTP/2's GOAWAY (not gRPC libraries). " +
				"The RPCs still on those connections failed.",
			RunbookURL: runbook(AlertServerGoAwayIgnored),
		},
		{
			Alert: AlertServerDenialSpike,
			Expr: denyRate + " > " + num(v.DenialSpikeFactor) + " * (" + baseline + " or " + denyRate + " * 0)" +
				" and " + denyRate + " > " + num(v.DenialMinRate),
			For:      v.DenialSpikeFor,
			Severity: "warning",
			Summary:  "RBAC filter {{ $labels.xdslens_rbac_filter }} of {{ $labels.xdslens_address }} denies more RPCs",
			Description: "RBAC filter {{ $labels.xdslens_rbac_filter }} of filter chain {{ $labels.xdslens_filter_chain }} of the " + serverWhere +
				" denies {{ $value | printf \"%.3g\" }} RPCs per second over " + window + ", more than " + num(v.DenialSpikeFactor) +
				" times its rate over the " + promDuration(v.DenialBaseline) + " before and above " + num(v.DenialMinRate) + " per second, for more than " +
				promDuration(v.DenialSpikeFor) + ": a caller without the right identity, a policy change that locks one out, or someone probing. " +
				"The denied RPCs fail PERMISSION_DENIED.",
			RunbookURL: runbook(AlertServerDenialSpike),
		},
	}
}

// withoutScopeAnd is withoutScope that also aggregates labels away.
func withoutScopeAnd(agg, expr string, labels ...string) string {
	l := LabelScopeName + ", " + LabelScopeVersion
	for _, x := range labels {
		l += ", " + x
	}
	return agg + " without (" + l + ") (" + expr + ")"
}
