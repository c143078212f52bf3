package dashboards

import (
	"fmt"

	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
)

// DrillDown returns the "xDS resource drill-down" dashboard: the cache by
// authority, resource type and state over time, a panel per resource type,
// and updates, fetch latency and notifications per type, to find which
// resources of which authority are in trouble and since when.
func DrillDown(opts ...Option) (dashboard.Dashboard, error) {
	c, err := newConfig(opts)
	if err != nil {
		return dashboard.Dashboard{}, err
	}
	return (&gen{config: c}).drillDown()
}

func (g *gen) drillDown() (dashboard.Dashboard, error) {
	b := g.newDashboard("xDS resource drill-down", DrillDownUID,
		"xdslens xDS client cache by authority, resource type and cache state over time, with updates, fetch latency and watcher notifications per type.")
	return build(g.layout(b,
		row{"Cache by authority, type and state", []panel{
			{g.resourcesByAuthority(), 12, 8, nil},
			{g.resourcesByType(), 12, 8, nil},
			{g.resourcesByAuthorityTypeState(), 24, 10, cacheAlerts},
			{g.notAckedTimeline(), 24, 8, cacheAlerts},
			{g.cacheTable(), 24, 8, cacheAlerts},
		}},
		row{"Per resource type", []panel{
			{g.statesOfType(), 8, 8, cacheAlerts},
		}},
		row{"Updates, latency and notifications by type", []panel{
			{g.updatesByTypeServer("valid"), 12, 8, nil},
			{g.updatesByTypeServer("invalid"), 12, 8, []string{AlertResourcesNACKed, AlertResourcesError}},
			{g.fetchP99ByTypeOutcome(), 12, 8, []string{AlertFetchLatencyHigh}},
			{g.notificationsByTypeKind(), 12, 8, nil},
		}},
	), DrillDownUID)
}

func (g *gen) resourcesByAuthority() cog.Builder[dashboard.Panel] {
	return timeSeries("Resources by authority",
		"Cache entries per authority, all states. \"#old\" holds the names that are not xdstp:// URIs.\n\n"+
			"**Bad**: a sudden drop means watches were cancelled or the client restarted; a sudden rise "+
			"means new subscriptions, for example a new service rolled out.\n\n"+
			"**Do**: if a drop was not expected, check the application's watches and restarts.").
		WithTarget(query("A",
			sumBy(g.sel(RecordResources, mTarget, mAuthority, mType), LabelAuthority),
			legend(LabelAuthority))).
		Unit("short").
		Decimals(0).
		Min(0)
}

func (g *gen) resourcesByType() cog.Builder[dashboard.Panel] {
	return timeSeries("Resources by type",
		"Cache entries per resource type, all states.\n\n"+
			"**Bad**: counts that do not add up to the configuration: for example fewer clusters than "+
			"the routes refer to means some were never received, or more endpoints than clusters are "+
			"left from resources that are no longer used.\n\n"+
			"**Do**: compare with the control plane's snapshot for this node.").
		WithTarget(query("A",
			sumBy(g.sel(RecordResources, mTarget, mAuthority, mType), LabelResourceType),
			legend(LabelResourceType))).
		Unit("short").
		Decimals(0).
		Min(0)
}

func (g *gen) resourcesByAuthorityTypeState() cog.Builder[dashboard.Panel] {
	return stateSeries("Resources by authority, type and state",
		"Cache entries per authority, resource type and cache state, stacked, colored by state "+
			"as in every panel (green acked, blue requested, red nacked, purple received_error, orange "+
			"does_not_exist, yellow timeout, and a lighter shade for each _but_cached state, which still "+
			"serves an older version).\n\n"+
			"**Bad**: any band that is not green; the legend says which authority and type, and the "+
			"time axis since when.\n\n"+
			"**Do**: with the authority and type known, ask the client's CSDS endpoint for the names "+
			"and errors, and the control plane serving that authority for its view.").
		WithTarget(query("A",
			sumBy(g.sel(RecordResources, mTarget, mAuthority, mType), LabelAuthority, LabelResourceType, LabelCacheState),
			legend(LabelAuthority, LabelResourceType, LabelCacheState)))
}

func (g *gen) notAckedTimeline() cog.Builder[dashboard.Panel] {
	return colorStates(stateTimeline("Non-acked resources over time",
		"One row per process, target, authority, resource type and non-acked state, in the state's color "+
			"while there are such entries; the value is how many.\n\n"+
			"**Bad**: any colored stretch. A stretch that starts at a deploy of the control plane "+
			"points at that deploy; one that starts at a client restart points at the client's "+
			"bootstrap or its names.\n\n"+
			"**Do**: read the errors with CSDS for that type and authority.").
		WithTarget(query("A", g.notAcked(), g.legend(LabelTarget, LabelAuthority, LabelResourceType, LabelCacheState))))
}

func (g *gen) cacheTable() cog.Builder[dashboard.Panel] {
	return tablePanel("Cache entries now",
		"How many cache entries each process, target, authority, resource type and state has now.\n\n"+
			"**Bad**: rows in a state other than acked (colored by state).\n\n"+
			"**Do**: filter the columns to the authority or type at fault, then read the entries with "+
			"CSDS (`grpcdebug ADDR xds status`).",
		stateColumns()).
		WithTarget(instantTable("A",
			sumBy(g.sel(RecordResources, mTarget, mAuthority, mType),
				g.by(LabelTarget, LabelAuthority, LabelResourceType, LabelCacheState)...))).
		OverrideByName(LabelCacheState, []dashboard.DynamicConfigValue{
			{Id: "mappings", Value: stateMapping()},
			{Id: "custom.cellOptions", Value: map[string]any{"type": "color-text"}},
		})
}

func (g *gen) statesOfType() cog.Builder[dashboard.Panel] {
	return stateSeries("Cache states: $"+varResourceType,
		"Cache entries of one resource type by state, stacked; the panel repeats for each type "+
			"selected in the Resource type variable.\n\n"+
			"**Bad**: any state but acked (green). One type in trouble while the others are green "+
			"points at the configuration of that type (for example an invalid cluster template), "+
			"not at the connection.\n\n"+
			"**Do**: read the NACK or error reason with CSDS and fix what the control plane generates "+
			"for that type.").
		WithTarget(query("A",
			sumBy(g.sel(RecordResources, mTarget, mAuthority, LabelResourceType+`=~"$`+varResourceType+`"`), LabelCacheState),
			legend(LabelCacheState))).
		Repeat(varResourceType).
		RepeatDirection(dashboard.PanelRepeatDirectionH).
		MaxPerRow(3)
}

func (g *gen) updatesByTypeServer(kind string) cog.Builder[dashboard.Panel] {
	metric, title, desc := MetricUpdatesValid, "Valid updates by type and server",
		"Resources that passed validation, per second, by type and server. They count even when "+
			"the resource did not change, so this is how often the server sends each type.\n\n"+
			"**Bad**: a type at zero while others flow means the server stopped sending it; a rate far "+
			"above usual is churn that costs CPU on every client.\n\n"+
			"**Do**: compare with the control plane's push logs; for churn, look for a resource that "+
			"changes on every snapshot (timestamps, random ordering)."
	if kind == "invalid" {
		metric, title, desc = MetricUpdatesInvalid, "Invalid updates by type and server",
			"Resources that failed validation or came as an error from the server, per second, by "+
				"type and server.\n\n"+
				"**Bad**: anything above zero: those resources are NACKed, and the client keeps the "+
				"previous version or has none.\n\n"+
				"**Do**: read the NACK reason with CSDS (`grpcdebug ADDR xds status`) and fix the "+
				"configuration the server generates; if only one server sends invalid resources, "+
				"compare its version with the others."
	}
	p := timeSeries(title, desc).
		WithTarget(query("A",
			sumBy(rate(g.sel(metric, mTarget, mServer, mType)), LabelResourceType, LabelServer),
			legend(LabelResourceType, LabelServer))).
		Unit(unitPerSecond("resources")).
		Min(0)
	if kind == "invalid" {
		p.ColorScheme(dashboard.NewFieldColorBuilder().
			Mode(dashboard.FieldColorModeIdFixed).
			FixedColor("red"))
	}
	return p
}

func (g *gen) fetchP99ByTypeOutcome() cog.Builder[dashboard.Panel] {
	return timeSeries("Fetch latency p99 by type and outcome",
		"99th percentile of the time from a subscription to its first answer, per resource type and "+
			"outcome. The timeout outcome sits at the resource timeout by construction.\n\n"+
			"**Bad**: answered fetches (resource, error) with a p99 above the latency SLO (5 s in the "+
			"alert); any timeout series at all.\n\n"+
			"**Do**: for slow answers, look at the control plane's load; for timeouts, check that the "+
			"names asked for exist on the server of that authority.").
		WithTarget(query("A",
			fmt.Sprintf("histogram_quantile(0.99, %s)", sumBy(g.fetchBuckets(false), "le", LabelResourceType, LabelOutcome)),
			legend(LabelResourceType, LabelOutcome))).
		Unit("s").
		Min(0)
}

func (g *gen) notificationsByTypeKind() cog.Builder[dashboard.Panel] {
	return timeSeries("Watcher notifications by type and kind",
		"Watcher callbacks per second by resource type and kind: resource, resource_error (stop "+
			"using it), ambient_error (keep using it).\n\n"+
			"**Bad**: resource_error on a type means the traffic that depends on those resources fails; "+
			"ambient_error means degraded but serving.\n\n"+
			"**Do**: match the time with the cache states above and read the errors with CSDS.").
		WithTarget(query("A",
			sumBy(rate(g.sel(MetricWatcherNotifications, mTarget, mType)), LabelResourceType, LabelKind),
			legend(LabelResourceType, LabelKind))).
		Unit(unitPerSecond("callbacks")).
		Min(0).
		OverrideByRegexp("/resource_error$/", []dashboard.DynamicConfigValue{fixedColor("red")}).
		OverrideByRegexp("/ambient_error$/", []dashboard.DynamicConfigValue{fixedColor("orange")})
}
