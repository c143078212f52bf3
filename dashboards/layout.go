package dashboards

import (
	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
)

// row is one titled row of a dashboard and its panels, in order. A
// dashboard is a list of rows (see overview and drillDown): a new row is a
// function that returns one.
type row struct {
	title  string
	panels []panel
}

// panel is a panel of a row: its builder, its size in the grid (24
// columns wide; the dashboard builder chooses x and y), and the alerts it
// shows the cause of, whose runbook sections it links to.
type panel struct {
	b      cog.Builder[dashboard.Panel]
	w, h   uint32
	alerts []string
}

// layout adds rows to b.
func (g *gen) layout(b *dashboard.DashboardBuilder, rows ...row) *dashboard.DashboardBuilder {
	for _, r := range rows {
		b = b.WithRow(dashboard.NewRowBuilder(r.title))
		for _, p := range r.panels {
			b = b.WithPanel(placed{panel: p, runbook: g.alerts.RunbookURL})
		}
	}
	return b
}

// placed builds a panel with its size and runbook links.
type placed struct {
	panel
	// runbook is the address of RUNBOOK.md (AlertOptions.RunbookURL).
	runbook string
}

// Build builds the panel, sets its size and adds a link to the runbook
// section of each of its alerts.
func (p placed) Build() (dashboard.Panel, error) {
	built, err := p.b.Build()
	if err != nil {
		return built, err
	}
	built.GridPos = &dashboard.GridPos{W: p.w, H: p.h}
	for _, alert := range p.alerts {
		link, err := dashboard.NewDashboardLinkBuilder(RunbookLinkPrefix + alert).
			Type(dashboard.DashboardLinkTypeLink).
			Url(runbookURL(p.runbook, alert)).
			Tooltip("What " + alert + " means, its impact, and how to diagnose and fix it").
			Icon("doc").
			TargetBlank(true).
			Build()
		if err != nil {
			return built, err
		}
		built.Links = append(built.Links, link)
	}
	return built, nil
}

// RunbookLinkPrefix starts the title of a panel's link to the runbook
// section of an alert, which the alert's name ends.
const RunbookLinkPrefix = "Runbook: "
