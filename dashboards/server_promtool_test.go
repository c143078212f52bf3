package dashboards_test

import (
	"fmt"
	"time"

	"github.com/xdslens/xdslens/dashboards"
)

// serverPod are the labels of one scraped process with an xDS-enabled
// server: no xDS client target.
const serverPod = `job="xds", instance="pod-1:9464"`

// serverLabelsOf returns the labels of serverPod plus more, as a map.
func serverLabelsOf(more ...string) map[string]string {
	out := map[string]string{"job": "xds", "instance": "pod-1:9464"}
	for i := 0; i+1 < len(more); i += 2 {
		out[more[i]] = more[i+1]
	}
	return out
}

// serverTests returns the tests of the alerts on xDS-enabled servers of o.
func serverTests(o dashboards.AlertOptions) []ruleTest {
	v := o.Server
	const addr = `xdslens_address="0.0.0.0:8443"`
	serving := func(address string) string {
		return fmt.Sprintf(`%s{%s, %s, xdslens_address=%q, xdslens_listener="grpc/server?xds.resource.listening_address=%s"}`,
			dashboards.MetricServerServing, serverPod, scope, address, address)
	}
	perChain := func(metric, chain string) string {
		return fmt.Sprintf(`%s{%s, %s, %s, xdslens_filter_chain=%q}`, metric, serverPod, scope, addr, chain)
	}
	decisions := func(filter, decision string) string {
		return fmt.Sprintf(`%s{%s, %s, %s, xdslens_filter_chain="mtls", xdslens_rbac_filter=%q, xdslens_rbac_decision=%q}`,
			dashboards.MetricServerRBACDecisions, serverPod, scope, addr, filter, decision)
	}
	forced := func(chain, reason string) string {
		return fmt.Sprintf(`%s{%s, %s, %s, xdslens_filter_chain=%q, reason=%q}`, dashboards.MetricServerDrainForcedCloses, serverPod, scope, addr, chain, reason)
	}
	// Rates need two samples: pending from 1m.
	rated := time.Minute
	// The denials jump from 1 a minute to 60 a minute at 70m: pending
	// from 71m.
	spikeStart := 71 * time.Minute
	return []ruleTest{
		{
			name: dashboards.AlertServerNotServing,
			series: map[string]string{
				serving("0.0.0.0:8443"): "0x20",
				serving("0.0.0.0:9443"): "1x20",
				// Not serving for less than the alert's for.
				serving("0.0.0.0:10443"): "1 0x3 1x20",
			},
			evals: beforeAndAt(dashboards.AlertServerNotServing, v.NotServingFor,
				firing{serverLabelsOf(dashboards.LabelAddress, "0.0.0.0:8443", dashboards.LabelListener, "grpc/server?xds.resource.listening_address=0.0.0.0:8443"), 0}),
		},
		{
			name: dashboards.AlertServerHandshakeFailures,
			series: map[string]string{
				// Per minute on chain mtls: 10 connections, 2 failed
				// handshakes (20 %); on chain plain, none fails.
				perChain(dashboards.MetricServerConnectionsAccepted, "mtls"):  "0+10x30",
				perChain(dashboards.MetricServerHandshakeFailures, "mtls"):    "0+2x30",
				perChain(dashboards.MetricServerConnectionsAccepted, "plain"): "0+10x30",
				perChain(dashboards.MetricServerHandshakeFailures, "plain"):   "0x30",
			},
			evals: beforeAndAt(dashboards.AlertServerHandshakeFailures, rated+v.HandshakeFailuresFor,
				firing{serverLabelsOf(dashboards.LabelAddress, "0.0.0.0:8443", dashboards.LabelFilterChain, "mtls"), 0.2}),
		},
		{
			name: dashboards.AlertServerGoAwayIgnored,
			series: map[string]string{
				// Chain mtls: one connection closed at 10m; chain plain:
				// connections closed at the drain grace time only.
				forced("mtls", "goaway_ignored"):  "0x9 1x20",
				forced("mtls", "grace_time"):      "0x30",
				forced("plain", "goaway_ignored"): "0x30",
				forced("plain", "grace_time"):     "0+1x30",
			},
			evals: []ruleEval{
				{at: 9 * time.Minute, alert: dashboards.AlertServerGoAwayIgnored},
				{at: 11 * time.Minute, alert: dashboards.AlertServerGoAwayIgnored, want: []firing{
					{serverLabelsOf(dashboards.LabelAddress, "0.0.0.0:8443", dashboards.LabelFilterChain, "mtls", dashboards.LabelReason, "goaway_ignored"), 1}}},
				// Resolved once the window no longer holds the close.
				{at: 10*time.Minute + v.RateWindow + time.Minute, alert: dashboards.AlertServerGoAwayIgnored},
			},
		},
		{
			name: dashboards.AlertServerDenialSpike,
			series: map[string]string{
				// authz denies one RPC a minute for 70 minutes, then one a
				// second; steady denies one a minute throughout; allowed
				// RPCs are no denials.
				decisions("authz", "deny"):   "0+1x70 130+60x30",
				decisions("steady", "deny"):  "0+1x100",
				decisions("authz", "allow"):  "0+600x100",
				decisions("steady", "allow"): "0+600x100",
			},
			evals: beforeAndAt(dashboards.AlertServerDenialSpike, spikeStart+v.DenialSpikeFor,
				firing{serverLabelsOf(dashboards.LabelAddress, "0.0.0.0:8443", dashboards.LabelFilterChain, "mtls",
					dashboards.LabelRBACFilter, "authz", dashboards.LabelRBACDecision, "deny"), 1}),
		},
	}
}
