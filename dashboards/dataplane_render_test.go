package dashboards_test

// Pictures of two panels of the Data plane row, drawn as SVG from data in
// Prometheus with the panels' own queries and colors, like those of
// render_test.go.

import (
	"fmt"
	"html"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/xdslens/xdslens/dashboards"
	"github.com/xdslens/xdslens/internal/testing/promtest"
)

// svgLine is one series of a line chart.
type svgLine struct {
	name, color string
	values      map[float64]float64
}

// svgThreshold is a dashed horizontal line of a chart.
type svgThreshold struct {
	value float64
	color string
}

// drawDataPlanePictures writes SVG pictures of the panels *RPCs by
// cluster and outcome* and *In flight / max_requests* into dir, their file
// names starting with prefix.
func drawDataPlanePictures(t *testing.T, p *promtest.Server, dir, prefix string, start, end time.Time) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	// Some twenty seconds of data, for lines rather than points.
	p.WaitFor(t, "twenty seconds of scrapes", `count_over_time(up{job="`+xdswatchJob+`"}[1m]) >= 20`)
	end = time.Now()
	step := 500 * time.Millisecond
	queryRange := func(expr string) []promtest.RangeSeries {
		r, err := p.QueryRange(expr, start, end, step)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	write := func(name, svg string) {
		if err := os.WriteFile(filepath.Join(dir, prefix+name), []byte(svg), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	const rpcs = "RPCs by cluster and outcome"
	var lines []svgLine
	for _, s := range queryRange(panelRefExpr(t, rpcs, "A")) {
		lines = append(lines, svgLine{s.Metric[dashboards.LabelBackendService] + " sent", dashboards.PickOutcomeColor("sent"), valuesAt(s)})
	}
	for _, s := range queryRange(panelRefExpr(t, rpcs, "B")) {
		// Failures are drawn below the axis, as the panel does.
		v := valuesAt(s)
		for ts := range v {
			v[ts] = -v[ts]
		}
		o := s.Metric[dashboards.LabelOutcome]
		lines = append(lines, svgLine{strings.TrimSpace(s.Metric[dashboards.LabelBackendService] + " " + o), dashboards.PickOutcomeColor(o), v})
	}
	write("rpcs-by-cluster-and-outcome.svg", linesSVG(rpcs, "RPCs/s", lines, nil))

	const inFlight = "In flight / max_requests"
	palette := []string{"blue", "purple", "yellow", "green", "orange"}
	lines = nil
	for i, s := range queryRange(panelExpr(t, inFlight)) {
		lines = append(lines, svgLine{s.Metric[dashboards.LabelLeafCluster], palette[i%len(palette)], valuesAt(s)})
	}
	write("in-flight-max-requests.svg", linesSVG(inFlight, "share of max_requests", lines,
		[]svgThreshold{{dashboards.DefaultAlertOptions().DataPlane.NearMaxRequestsRatio, "orange"}, {1, "red"}}))
}

// linesSVG draws one line per series in its color, with a legend, the
// zero line and the thresholds as dashed lines; unit names the values.
func linesSVG(title, unit string, lines []svgLine, thresholds []svgThreshold) string {
	var b strings.Builder
	var ts []float64
	seen := map[float64]bool{}
	lo, hi := 0.0, 0.0
	for _, l := range lines {
		for x, v := range l.values {
			if !seen[x] {
				seen[x] = true
				ts = append(ts, x)
			}
			lo, hi = math.Min(lo, v), math.Max(hi, v)
		}
	}
	if len(ts) == 0 {
		svgHeader(&b, title+": no data")
		b.WriteString("</svg>\n")
		return b.String()
	}
	sort.Float64s(ts)
	for _, th := range thresholds {
		lo, hi = math.Min(lo, th.value), math.Max(hi, th.value*1.1)
	}
	if hi == lo {
		hi = lo + 1
	}
	sort.SliceStable(lines, func(i, j int) bool { return lines[i].name < lines[j].name })
	xOf := func(x float64) float64 { return plotX + plotW*(x-ts[0])/math.Max(ts[len(ts)-1]-ts[0], 1) }
	yOf := func(v float64) float64 { return plotY + plotH - plotH*(v-lo)/(hi-lo) }
	svgHeader(&b, title+" ("+unit+")")
	tick := niceStep((hi - lo) / 5)
	for v := math.Ceil(lo/tick) * tick; v <= hi; v += tick {
		fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="%s"/>`, plotX, plotX+plotW, yOf(v), yOf(v), svgGrid)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" fill="%s" text-anchor="end">%.3g</text>`+"\n", plotX-6, yOf(v)+4, svgText, v)
	}
	for _, th := range thresholds {
		fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="%s" stroke-dasharray="6 4"/>`+"\n",
			plotX, plotX+plotW, yOf(th.value), yOf(th.value), grafanaColors[th.color])
	}
	legendY := plotY + 6
	for _, l := range lines {
		color := grafanaColors[l.color]
		var pts []string
		flush := func() {
			if len(pts) > 0 {
				fmt.Fprintf(&b, `<polyline points="%s" fill="none" stroke="%s" stroke-width="1.5"/>`+"\n", strings.Join(pts, " "), color)
			}
			pts = nil
		}
		for _, x := range ts {
			v, ok := l.values[x]
			if !ok {
				flush() // a gap, as the panel's spanNulls false draws it
				continue
			}
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", xOf(x), yOf(v)))
		}
		flush()
		fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="14" height="4" fill="%s"/><text x="%.1f" y="%.1f" fill="%s">%s</text>`+"\n",
			plotX+plotW+20, legendY-4, color, plotX+plotW+40, legendY+1, svgText, html.EscapeString(l.name))
		legendY += 18
	}
	fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" fill="%s" text-anchor="middle">%s (%s)</text>`+"\n",
		plotX+plotW/2, plotY+plotH+24, svgText, secondsPerPixelNote, span(ts))
	b.WriteString("</svg>\n")
	return b.String()
}

// niceStep rounds d up to 1, 2 or 5 times a power of ten.
func niceStep(d float64) float64 {
	if d <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(d)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= d {
			return m * p
		}
	}
	return 10 * p
}
