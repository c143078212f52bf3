package dashboards

import (
	"fmt"
	"strings"

	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/common"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/prometheus"
	"github.com/grafana/grafana-foundation-sdk/go/stat"
	"github.com/grafana/grafana-foundation-sdk/go/statetimeline"
	"github.com/grafana/grafana-foundation-sdk/go/table"
	"github.com/grafana/grafana-foundation-sdk/go/timeseries"
)

// Template variable names shared by both dashboards (and the group label
// of [WithGroupLabel], whose variable has the label's name).
const (
	varDatasource   = "datasource"
	varJob          = "job"
	varInstance     = "instance"
	varTarget       = "target"
	varServer       = "server"
	varResourceType = "resource_type"
	varAuthority    = "authority"
)

// Label matchers that apply the client variables.
const (
	mTarget    = LabelTarget + `=~"$` + varTarget + `"`
	mServer    = LabelServer + `=~"$` + varServer + `"`
	mType      = LabelResourceType + `=~"$` + varResourceType + `"`
	mAuthority = LabelAuthority + `=~"$` + varAuthority + `"`
)

// unitPerSecond is a Grafana custom unit "things/s", for rates of what is
// not a request.
func unitPerSecond(things string) string {
	return "suffix: " + things + "/s"
}

// colorInterrupted is the color of the interrupted fetch outcome, which
// is not a cache state: grey, a color no state has.
const colorInterrupted = "#8E8E8E"

// stateColumns renames the label columns of a table of cache entries.
func stateColumns() map[string]string {
	return map[string]string{
		"instance":        "Instance",
		LabelTarget:       "Target",
		LabelAuthority:    "Authority",
		LabelResourceType: "Resource type",
		LabelCacheState:   "State",
		"Value":           "Resources",
	}
}

// rateInterval is Grafana's rate window, which adapts to the scrape
// interval and the zoom.
const rateInterval = "$__rate_interval"

// sel returns the selector metric{matchers...}, or metric alone without
// matchers.
func sel(metric string, matchers ...string) string {
	if len(matchers) == 0 {
		return metric
	}
	return metric + "{" + strings.Join(matchers, ", ") + "}"
}

// rate returns rate(selector[$__rate_interval]).
func rate(selector string) string {
	return "rate(" + selector + "[" + rateInterval + "])"
}

// increaseFromBirth returns the increase of the counter series of
// selector over window, a series born within the window counting from
// zero: the increase() of each series that had a sample at the window's
// start, and the whole value of each series born since. increase() and
// rate() cannot count a series' first sample, and a histogram's series
// (an OpenTelemetry histogram has no point before its first observation)
// are born with their first observation, which would go uncounted.
func increaseFromBirth(selector, window string) string {
	before := selector + " offset " + window
	return "(increase(" + selector + "[" + window + "]) and " + before + ") or (" + selector + " unless " + before + ")"
}

// sumBy returns sum by (labels) (expr).
func sumBy(expr string, labels ...string) string {
	return "sum by (" + strings.Join(labels, ", ") + ") (" + expr + ")"
}

// legend returns a Grafana legend format that joins the labels, such as
// "{{grpc_target}} {{grpc_xds_server}}".
func legend(labels ...string) string {
	parts := make([]string, len(labels))
	for i, l := range labels {
		parts[i] = "{{" + l + "}}"
	}
	return strings.Join(parts, " ")
}

// datasourceRef points panels and variables at the datasource variable.
func datasourceRef() common.DataSourceRef {
	return common.DataSourceRef{
		Type: cog.ToPtr("prometheus"),
		Uid:  cog.ToPtr("${" + varDatasource + "}"),
	}
}

// promQuery returns a query of the datasource variable.
func promQuery(refID, expr string) *prometheus.DataqueryBuilder {
	return prometheus.NewDataqueryBuilder().
		Datasource(datasourceRef()).
		RefId(refID).
		Expr(expr)
}

// instant returns an instant query with a legend: what a stat or bar
// gauge shows is the value now, and a process that is gone shows no value
// rather than its last one.
func instant(refID, expr, legendFormat string) *prometheus.DataqueryBuilder {
	return promQuery(refID, expr).LegendFormat(legendFormat).Instant()
}

// query returns a range query with a legend.
func query(refID, expr, legendFormat string) *prometheus.DataqueryBuilder {
	return promQuery(refID, expr).LegendFormat(legendFormat).Range()
}

// instantTable returns an instant query whose result is a table.
func instantTable(refID, expr string) *prometheus.DataqueryBuilder {
	return promQuery(refID, expr).
		Format(prometheus.PromQueryFormatTable).
		Instant()
}

// variables returns the template variables of both dashboards: the
// data source, the fleet (group label, job, instance), then the client's
// labels, each narrowed by the ones before it.
func (g *gen) variables() []cog.Builder[dashboard.VariableModel] {
	all := dashboard.VariableOption{
		Selected: cog.ToPtr(true),
		Text:     dashboard.StringOrArrayOfString{ArrayOfString: []string{"All"}},
		Value:    dashboard.StringOrArrayOfString{ArrayOfString: []string{"$__all"}},
	}
	queryVar := func(name, label, description, q string) *dashboard.QueryVariableBuilder {
		return dashboard.NewQueryVariableBuilder(name).
			Label(label).
			Description(description).
			Datasource(datasourceRef()).
			Query(dashboard.StringOrMap{String: cog.ToPtr(q)}).
			Definition(q).
			Current(all).
			Refresh(dashboard.VariableRefreshOnTimeRangeChanged).
			Sort(dashboard.VariableSortAlphabeticalAsc).
			Multi(true).
			IncludeAll(true).
			AllValue(".*")
	}
	fleet := g.fleet()
	var groupMatchers []string
	vars := []cog.Builder[dashboard.VariableModel]{
		dashboard.NewDatasourceVariableBuilder(varDatasource).
			Label("Data source").
			Description("The Prometheus that scrapes the xdslens clients.").
			Type("prometheus"),
	}
	if g.group != "" {
		vars = append(vars, queryVar(g.group, g.group,
			"The "+g.group+" label of the scraped processes.",
			fmt.Sprintf("label_values(%s, %s)", MetricConnected, g.group)))
		groupMatchers = fleet[:1]
	}
	// "All" jobs is the list of jobs with xDS clients, not ".*", so that
	// the scrape health panel reads `up` of those jobs alone.
	job := queryVar(varJob, "Job",
		"The Prometheus job of the processes with xDS clients.",
		fmt.Sprintf("label_values(%s, job)", sel(MetricConnected, groupMatchers...)))
	job.AllValue("")
	vars = append(vars, job,
		queryVar(varInstance, "Instance",
			"The scraped process (host:port): each process has its own xDS clients, even when they share a target name.",
			fmt.Sprintf("label_values(%s, instance)", sel(MetricConnected, fleet[:len(fleet)-1]...))),
		queryVar(varTarget, "Target",
			"The xDS client's target (grpc.target): one xDS client per target in a pool. It selects the client's own series and those of every channel that routes with it (the channel's own target is xdslens_channel_target, the same unless the channel shares the client of another target).",
			fmt.Sprintf("label_values(%s, %s)", sel("", append([]string{`__name__=~"` + MetricConnected + "|" + MetricResources + "|" + MetricDataPlanePicks + `"`}, fleet...)...), LabelTarget)),
		queryVar(varServer, "xDS server",
			"The xDS server URI from the bootstrap (grpc.xds.server).",
			fmt.Sprintf("label_values(%s, %s)", sel("", append([]string{`__name__=~"` + MetricConnected + "|" + MetricServerFailures + `"`}, append(fleet, mTarget)...)...), LabelServer)),
		queryVar(varResourceType, "Resource type",
			"The xDS resource type (grpc.xds.resource_type), such as envoy.config.cluster.v3.Cluster.",
			fmt.Sprintf("label_values(%s, %s)", g.sel(MetricResources, mTarget), LabelResourceType)),
		queryVar(varAuthority, "Authority",
			`The xDS authority of the resource names (grpc.xds.authority): "#old" for names that are not xdstp:// URIs.`,
			fmt.Sprintf("label_values(%s, %s)", g.sel(MetricResources, mTarget), LabelAuthority)),
	)
	return vars
}

// newDashboard returns a builder with the settings both dashboards share.
func (g *gen) newDashboard(title, uid, description string) *dashboard.DashboardBuilder {
	return dashboard.NewDashboardBuilder(title).
		Uid(uid).
		Description(description).
		Tags([]string{"xdslens", "xds", "grpc"}).
		Editable().
		Tooltip(dashboard.DashboardCursorSyncCrosshair).
		Refresh("30s").
		Time("now-1h", "now").
		Timezone(common.TimeZoneBrowser).
		Variables(g.variables()).
		Link(dashboard.NewDashboardLinkBuilder("xdslens dashboards").
			Type(dashboard.DashboardLinkTypeDashboards).
			Tags([]string{"xdslens"}).
			AsDropdown(true).
			IncludeVars(true).
			KeepTime(true))
}

// mapping returns a value mapping from exact values to text and color.
func mapping(pairs ...[3]string) dashboard.ValueMapping {
	opts := map[string]dashboard.ValueMappingResult{}
	for i, p := range pairs {
		opts[p[0]] = dashboard.ValueMappingResult{
			Text:  cog.ToPtr(p[1]),
			Color: cog.ToPtr(p[2]),
			Index: cog.ToPtr(int32(i)),
		}
	}
	return dashboard.ValueMapping{ValueMap: &dashboard.ValueMap{
		Type:    dashboard.MappingTypeValueToText,
		Options: opts,
	}}
}

// connectedMapping shows the connected gauge as words.
func connectedMapping() []dashboard.ValueMapping {
	return []dashboard.ValueMapping{mapping(
		[3]string{"0", "DISCONNECTED", "red"},
		[3]string{"1", "CONNECTED", "green"},
	)}
}

// stateMapping colors the cache state names in tables.
func stateMapping() []dashboard.ValueMapping {
	var pairs [][3]string
	for _, s := range CacheStates {
		pairs = append(pairs, [3]string{s, s, CacheStateColor(s)})
	}
	return []dashboard.ValueMapping{mapping(pairs...)}
}

// colorStates gives each series of b whose legend ends with a cache state
// the state's color; props are more properties for every state but acked.
func colorStates[B interface {
	OverrideByRegexp(string, []dashboard.DynamicConfigValue) B
}](b B, props ...dashboard.DynamicConfigValue) B {
	for _, s := range CacheStates {
		p := []dashboard.DynamicConfigValue{fixedColor(CacheStateColor(s))}
		if s != "acked" {
			p = append(p, props...)
		}
		b = b.OverrideByRegexp(stateRegexp(s), p)
	}
	return b
}

// stateRegexp matches a legend that ends with the cache state s, the
// whole word, so that "nacked" does not match "nacked_but_cached".
func stateRegexp(s string) string {
	return "/(^|\\s)" + s + "$/"
}

// thresholds returns absolute thresholds: base color, then value/color
// pairs.
func thresholds(base string, steps ...any) *dashboard.ThresholdsConfigBuilder {
	list := []dashboard.Threshold{{Color: base}}
	for i := 0; i+1 < len(steps); i += 2 {
		list = append(list, dashboard.Threshold{
			Value: cog.ToPtr(steps[i].(float64)),
			Color: steps[i+1].(string),
		})
	}
	return dashboard.NewThresholdsConfigBuilder().
		Mode(dashboard.ThresholdsModeAbsolute).
		Steps(list)
}

// fixedColor is an override property that draws a series in one color.
func fixedColor(color string) dashboard.DynamicConfigValue {
	return dashboard.DynamicConfigValue{
		Id:    "color",
		Value: map[string]any{"mode": "fixed", "fixedColor": color},
	}
}

// legendTable is a legend as a table at the bottom with last and max.
func legendTable() *common.VizLegendOptionsBuilder {
	return common.NewVizLegendOptionsBuilder().
		DisplayMode(common.LegendDisplayModeTable).
		Placement(common.LegendPlacementBottom).
		ShowLegend(true).
		Calcs([]string{"lastNotNull", "max"})
}

// tooltipAll shows every series in the tooltip, largest first.
func tooltipAll() *common.VizTooltipOptionsBuilder {
	return common.NewVizTooltipOptionsBuilder().
		Mode(common.TooltipDisplayModeMulti).
		Sort(common.SortOrderDescending)
}

// timeSeries returns a time series panel with the shared settings.
func timeSeries(title, description string) *timeseries.PanelBuilder {
	return timeseries.NewPanelBuilder().
		Title(title).
		Description(description).
		Datasource(datasourceRef()).
		LineWidth(1).
		FillOpacity(10).
		ShowPoints(common.VisibilityModeNever).
		SpanNulls(common.BoolOrFloat64{Bool: cog.ToPtr(false)}).
		Legend(legendTable()).
		Tooltip(tooltipAll())
}

// stateSeries returns a stacked time series of resource counts with one
// color per cache state: the series whose legend ends with a state name
// get that state's color, and every state but acked is drawn opaque and
// thick so that it stands out against the acked band.
func stateSeries(title, description string) *timeseries.PanelBuilder {
	return colorStates(timeSeries(title, description).
		Unit("short").
		Decimals(0).
		Min(0).
		FillOpacity(15).
		Stacking(common.NewStackingConfigBuilder().Mode(common.StackingModeNormal)),
		dashboard.DynamicConfigValue{Id: "custom.fillOpacity", Value: 70},
		dashboard.DynamicConfigValue{Id: "custom.lineWidth", Value: 2},
	)
}

// stateTimeline returns a state timeline panel with the shared settings.
func stateTimeline(title, description string) *statetimeline.PanelBuilder {
	return statetimeline.NewPanelBuilder().
		Title(title).
		Description(description).
		Datasource(datasourceRef()).
		ShowValue(common.VisibilityModeNever).
		MergeValues(true).
		RowHeight(0.8).
		FillOpacity(80).
		Legend(common.NewVizLegendOptionsBuilder().
			DisplayMode(common.LegendDisplayModeList).
			Placement(common.LegendPlacementBottom).
			ShowLegend(true)).
		Tooltip(tooltipAll())
}

// statPanel returns a stat panel with the shared settings.
func statPanel(title, description string) *stat.PanelBuilder {
	return stat.NewPanelBuilder().
		Title(title).
		Description(description).
		Datasource(datasourceRef()).
		ReduceOptions(common.NewReduceDataOptionsBuilder().Calcs([]string{"lastNotNull"})).
		ColorMode(common.BigValueColorModeBackground).
		GraphMode(common.BigValueGraphModeNone).
		TextMode(common.BigValueTextModeValueAndName).
		Orientation(common.VizOrientationAuto).
		JustifyMode(common.BigValueJustifyModeCenter)
}

// tablePanel returns a table panel that shows an instant query, hides the
// time column and renames the label columns.
func tablePanel(title, description string, rename map[string]string) *table.PanelBuilder {
	return table.NewPanelBuilder().
		Title(title).
		Description(description).
		Datasource(datasourceRef()).
		CellHeight(common.TableCellHeightSm).
		Filterable(true).
		Footer(common.NewTableFooterOptionsBuilder().
			Show(false).
			Reducer([]string{"sum"}).
			CountRows(false)).
		WithTransformation(dashboard.DataTransformerConfig{
			Id: "organize",
			Options: map[string]any{
				"excludeByName": hiddenColumns(),
				"renameByName":  rename,
			},
		})
}

// build builds b and numbers its panels; errors name the dashboard.
func build(b *dashboard.DashboardBuilder, uid string) (dashboard.Dashboard, error) {
	d, err := b.Build()
	if err != nil {
		return dashboard.Dashboard{}, fmt.Errorf("dashboard %q: %w", uid, err)
	}
	setIDs(&d)
	return d, nil
}

// setIDs numbers the panels and rows of d from 1 in the order they
// appear, as Grafana does when it saves a dashboard.
func setIDs(d *dashboard.Dashboard) {
	var id uint32
	for i := range d.Panels {
		switch p := d.Panels[i]; {
		case p.Panel != nil:
			id++
			p.Panel.Id = cog.ToPtr(id)
		case p.RowPanel != nil:
			id++
			p.RowPanel.Id = id
			for j := range p.RowPanel.Panels {
				id++
				p.RowPanel.Panels[j].Id = cog.ToPtr(id)
			}
		}
	}
}
