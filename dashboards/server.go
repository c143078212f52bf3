package dashboards

import (
	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/common"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
)

// serverRow is the overview's row of xDS-enabled servers (package
// xdsserver), from the instruments of telemetry.NewServerMetrics.
func (g *gen) serverRow() row {
	return row{"xDS-enabled servers", []panel{
		{g.servingTimeline(), 12, 7, []string{AlertServerNotServing}},
		{g.serverConnections(), 12, 7, nil},
		{g.refusedDrained(), 6, 8, []string{AlertServerNotServing}},
		{g.drainForcedCloses(), 6, 8, []string{AlertServerGoAwayIgnored}},
		{g.handshakeFailures(), 6, 8, []string{AlertServerHandshakeFailures}},
		{g.rbacDecisions(), 6, 8, []string{AlertServerDenialSpike}},
	}}
}

// servingMapping shows the serving gauge as gRFC A36's modes.
func servingMapping() []dashboard.ValueMapping {
	return []dashboard.ValueMapping{mapping(
		[3]string{"0", "NOT_SERVING", "red"},
		[3]string{"1", "SERVING", "green"},
	)}
}

func (g *gen) servingTimeline() cog.Builder[dashboard.Panel] {
	return stateTimeline("Serving state by address",
		"Whether each listening address of the xDS-enabled servers serves (`xdslens.xds_server.serving`), one row per "+
			"process and address: **SERVING** once its Listener (and the route configurations it names) came and is "+
			"valid; **NOT_SERVING** while it waits for its Listener, or when the Listener does not exist, was rejected, "+
			"was deleted with `fail_on_data_errors`, or names another address (gRFC A36). A NOT_SERVING address closes "+
			"every connection as it comes.\n\n"+
			"**Bad**: NOT_SERVING for more than a moment: the pod takes no traffic (`XdsServerNotServing`).\n\n"+
			"**Do**: read the serving mode callback's error (logged as a warning), or CSDS for the Listener of "+
			"`server_listener_resource_name_template`: its cache state and error.").
		WithTarget(query("A", g.sel(RecordServerServing), g.legend(LabelAddress))).
		Mappings(servingMapping()).
		Thresholds(thresholds("red", 1.0, "green"))
}

func (g *gen) serverConnections() cog.Builder[dashboard.Panel] {
	return timeSeries("Connections by filter chain",
		"Open connections of the xDS-enabled servers by address and filter chain (`xdslens.xds_server.connections`), "+
			"summed over the selected processes, and the connections each chain accepted in each interval of the graph "+
			"(`connections_accepted`, whose series of a chain is born with its first connection: a chain's first "+
			"connection counts too); an unnamed chain has no chain in its legend.\n\n"+
			"**Bad**: connections where no traffic is expected (a chain for another network), or none on the chain "+
			"that should serve the clients.\n\n"+
			"**Do**: compare the chains' filter_chain_match (destination and source prefixes, source type and ports) "+
			"with the clients' addresses; CSDS shows the Listener.").
		WithTarget(query("A",
			sumBy(withoutScope("max", g.sel(MetricServerConnections)), LabelAddress, LabelFilterChain),
			legend(LabelAddress, LabelFilterChain)+" open")).
		WithTarget(query("B",
			sumBy(increaseFromBirth(g.sel(MetricServerConnectionsAccepted), rateInterval), LabelAddress, LabelFilterChain)+" > 0",
			legend(LabelAddress, LabelFilterChain)+" accepted")).
		Unit("short").
		Min(0)
}

func (g *gen) refusedDrained() cog.Builder[dashboard.Panel] {
	return timeSeries("Refused and drained connections, serving changes",
		"Connections the xDS-enabled servers closed as they came, per minute, by reason "+
			"(`xdslens.xds_server.connections_refused`: not_serving, no_filter_chain), and connections told to go away "+
			"with an HTTP/2 GOAWAY (`connections_drained`: listener_changed when their chain changed, not_serving), and the "+
			"serving mode changes of the addresses (`serving_mode_changes`, to SERVING or NOT_SERVING).\n\n"+
			"**Bad**: refused not_serving: the address does not serve; no_filter_chain: clients from addresses no chain "+
			"matches, and the Listener has no default chain. Drains at every Listener update: the control plane "+
			"changes the chains (their filters, routes or TLS) more than it needs to.\n\n"+
			"**Do**: see *Serving state by address*; for no_filter_chain, the chains' matches.").
		WithTarget(query("A",
			"60 * "+sumBy(rate(g.sel(MetricServerConnectionsRefused)), LabelAddress, LabelReason)+" > 0",
			legend(LabelAddress)+" refused "+legend(LabelReason))).
		WithTarget(query("B",
			"60 * "+sumBy(rate(g.sel(MetricServerConnectionsDrained)), LabelAddress, LabelReason)+" > 0",
			legend(LabelAddress)+" drained "+legend(LabelReason))).
		WithTarget(query("C",
			"60 * "+sumBy(rate(g.sel(MetricServerModeChanges)), LabelAddress, LabelMode)+" > 0",
			legend(LabelAddress)+" to "+legend(LabelMode))).
		Unit("suffix: /min").
		Min(0).
		DrawStyle(common.GraphDrawStyleBars).
		FillOpacity(60)
}

func (g *gen) drainForcedCloses() cog.Builder[dashboard.Panel] {
	return timeSeries("Drained connections closed with their RPCs",
		"Drained connections the xDS-enabled servers closed themselves, per minute, by address, filter chain and reason "+
			"(`xdslens.xds_server.drain_forced_closes`): goaway_ignored when the client opened a stream after the final "+
			"GOAWAY (the server closes the connection before reading it, so that no RPC starts under a chain the Listener "+
			"no longer has); grace_time when the connection was still open at the drain grace time (`WithDrainGraceTime`, "+
			"10 minutes by default). The RPCs still on the connection fail at their clients (UNAVAILABLE).\n\n"+
			"**Bad**: goaway_ignored at all (`XdsServerGoAwayIgnored`): a client that does not keep HTTP/2's GOAWAY, not a "+
			"gRPC library. grace_time at every Listener update: streams that outlive the grace time, cut at each drain.\n\n"+
			"**Do**: the server's hooks (xdsserver.Hooks.GoAwayIgnored, DrainGraceExpired) give the peer, and the "+
			"server logs a warning for each goaway_ignored; for grace_time, make the control plane change the chains less often, or the grace time longer than "+
			"the streams.").
		WithTarget(query("A",
			"60 * "+sumBy(rate(g.sel(MetricServerDrainForcedCloses)), LabelAddress, LabelFilterChain, LabelReason)+" > 0",
			legend(LabelAddress, LabelFilterChain)+" "+legend(LabelReason))).
		Unit("suffix: /min").
		Min(0).
		DrawStyle(common.GraphDrawStyleBars).
		FillOpacity(60)
}

func (g *gen) handshakeFailures() cog.Builder[dashboard.Panel] {
	return timeSeries("TLS handshake failures",
		"Failed handshakes of connections to the xDS-enabled servers per minute, by address and filter chain "+
			"(`xdslens.xds_server.handshake_failures`): chains with a DownstreamTlsContext serve TLS with certificates "+
			"of the bootstrap's certificate providers (gRFC A29); with `require_client_certificate`, a client without a "+
			"certificate, or with one the chain's roots do not verify, fails here.\n\n"+
			"**Bad**: a steady rate, or a share of the accepted connections (`XdsServerHandshakeFailures`): clients "+
			"without the mesh's certificates, expired or rotated certificates, clients speaking plaintext to a TLS "+
			"chain, or the server's certificate files unreadable.\n\n"+
			"**Do**: the server's hooks (xdsserver.Hooks.HandshakeFailed) give the peer and the error; check the "+
			"certificate provider's files and the clients' credentials.").
		WithTarget(query("A",
			"60 * "+sumBy(rate(g.sel(MetricServerHandshakeFailures)), LabelAddress, LabelFilterChain)+" > 0",
			legend(LabelAddress, LabelFilterChain))).
		Unit("suffix: /min").
		Min(0).
		DrawStyle(common.GraphDrawStyleBars).
		FillOpacity(60).
		ColorScheme(dashboard.NewFieldColorBuilder().Mode(dashboard.FieldColorModeIdFixed).FixedColor("red"))
}

func (g *gen) rbacDecisions() cog.Builder[dashboard.Panel] {
	return timeSeries("RBAC decisions by policy",
		"Decisions of the RBAC filters of the xDS-enabled servers in each interval of the graph "+
			"(`xdslens.xds_server.rbac_decisions`, gRFC A41), by filter, the policy that matched and allow (above the "+
			"axis) or deny (below); the series of a policy and decision is born with its first decision, which counts "+
			"too, so a single denial shows. A denial that matched no policy (an ALLOW rule set none of whose policies "+
			"matched) has no policy in its legend.\n\n"+
			"**Bad**: denials rising (`XdsServerRBACDenialSpike`): a new client without the right identity, a policy "+
			"change that locks out a caller, or someone probing. Denied RPCs fail PERMISSION_DENIED.\n\n"+
			"**Do**: the audit loggers of the RBAC config (gRFC A59) log each denial with the method and the peer's "+
			"identity; compare with the policies in the Listener (CSDS).").
		WithTarget(query("A",
			sumBy(increaseFromBirth(g.sel(MetricServerRBACDecisions, LabelRBACDecision+`="allow"`), rateInterval), LabelRBACFilter, LabelRBACPolicy),
			legend(LabelRBACFilter, LabelRBACPolicy)+" allow")).
		WithTarget(query("B",
			sumBy(increaseFromBirth(g.sel(MetricServerRBACDecisions, LabelRBACDecision+`="deny"`), rateInterval), LabelRBACFilter, LabelRBACPolicy)+" > 0",
			legend(LabelRBACFilter, LabelRBACPolicy)+" deny")).
		Unit("short").
		OverrideByQuery("B", []dashboard.DynamicConfigValue{
			{Id: "custom.transform", Value: "negative-Y"},
			{Id: "custom.fillOpacity", Value: 50},
			fixedColor("red"),
		})
}
