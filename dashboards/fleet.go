package dashboards

import "slices"

// gen builds the panels of both dashboards for one configuration: every
// selector it writes carries the fleet matchers (the optional group label,
// job and instance), and the legends of per-process series name the
// process.
type gen struct {
	config
}

// fleet returns the matchers that apply the fleet variables.
func (g *gen) fleet() []string {
	var m []string
	if g.group != "" {
		m = append(m, g.group+`=~"$`+g.group+`"`)
	}
	return append(m, `job=~"$`+varJob+`"`, `instance=~"$`+varInstance+`"`)
}

// sel returns metric{fleet matchers, matchers...}.
func (g *gen) sel(metric string, matchers ...string) string {
	return sel(metric, append(g.fleet(), matchers...)...)
}

// process returns the labels that name one scraped process: the group
// label, job and instance.
func (g *gen) process() []string {
	var l []string
	if g.group != "" {
		l = append(l, g.group)
	}
	return append(l, "job", "instance")
}

// by returns the labels of a per-process aggregation: the process labels,
// then labels.
func (g *gen) by(labels ...string) []string {
	return append(g.process(), labels...)
}

// legend returns the legend of a per-process series: the instance (and
// the group label), then labels. The job is left out: instances are
// host:port pairs, unique within a Prometheus.
func (g *gen) legend(labels ...string) string {
	l := slices.DeleteFunc(g.process(), func(s string) bool { return s == "job" })
	return legend(append(l, labels...)...)
}

// hiddenColumns are the label columns tables leave out: the name, the
// job (the instance names the process) and the OpenTelemetry scope.
func hiddenColumns() map[string]any {
	return map[string]any{
		"Time": true, "__name__": true, "job": true,
		LabelScopeName: true, LabelScopeVersion: true,
	}
}

// withoutScope returns agg without (otel_scope_name, otel_scope_version)
// (expr): every series carries the OpenTelemetry scope of the instrument,
// which says nothing about the client and changes with the library's
// version.
func withoutScope(agg, expr string) string {
	return agg + " without (" + LabelScopeName + ", " + LabelScopeVersion + ") (" + expr + ")"
}
