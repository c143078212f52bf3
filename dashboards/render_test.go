package dashboards_test

// Pictures of two overview panels, drawn as SVG from data in Prometheus
// with the panels' own queries and colors. The demo script's test and the
// end-to-end test draw them when XDSLENS_DASHBOARD_PICTURES names a
// directory; README.md shows the committed ones.

import (
	"fmt"
	"html"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/xdslens/xdslens/dashboards"
	"github.com/xdslens/xdslens/internal/testing/promtest"
)

// grafanaColors are the hex values of the Grafana named colors (dark
// theme) that the pictures use.
var grafanaColors = map[string]string{
	"green":              "#73BF69",
	"blue":               "#5794F2",
	"red":                "#F2495C",
	"purple":             "#B877D9",
	"orange":             "#FF9830",
	"yellow":             "#FADE2A",
	"super-light-red":    "#FFA6B0",
	"super-light-purple": "#DEB6F2",
	"super-light-orange": "#FFCB7D",
	"dark-red":           "#C4162A",
	"dark-orange":        "#FA6400",
}

// valuesAt returns the values of s by timestamp.
func valuesAt(s promtest.RangeSeries) map[float64]float64 {
	out := map[float64]float64{}
	for _, v := range s.Values {
		ts, _ := v[0].(float64)
		f, err := strconv.ParseFloat(fmt.Sprint(v[1]), 64)
		if err == nil && !math.IsNaN(f) {
			out[ts] = f
		}
	}
	return out
}

// drawPictures writes SVG pictures of two overview panels into dir, their
// file names starting with prefix. names gives a readable name to server
// addresses.
func drawPictures(t *testing.T, p *promtest.Server, dir, prefix string, start, end time.Time, names map[string]string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	step := 250 * time.Millisecond
	states, err := p.QueryRange(panelExpr(t, "Resources by cache state"), start, end, step)
	if err != nil {
		t.Fatal(err)
	}
	write := func(name, svg string) {
		if err := os.WriteFile(filepath.Join(dir, prefix+name), []byte(svg), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("resources-by-cache-state.svg", stackedSVG("Resources by cache state", states))
	conn, err := p.QueryRange(panelExpr(t, "Server connection over time"), start, end, step)
	if err != nil {
		t.Fatal(err)
	}
	write("server-connection-over-time.svg", timelineSVG("Server connection over time", conn, names))
}

const (
	svgW, svgH          = 760.0, 330.0
	plotX, plotY        = 50.0, 36.0
	plotW, plotH        = 470.0, 250.0
	svgBackground       = "#181B1F"
	svgText             = "#CCCCDC"
	svgGrid             = "#2F3237"
	svgFont             = `font-family="Inter, Helvetica, Arial, sans-serif"`
	secondsPerPixelNote = "time →"
)

// svgHeader starts an SVG picture with a panel title.
func svgHeader(b *strings.Builder, title string) {
	fmt.Fprintf(b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" %s font-size="12">`+"\n", svgW, svgH, svgW, svgH, svgFont)
	fmt.Fprintf(b, `<rect width="100%%" height="100%%" fill="%s" rx="4"/>`+"\n", svgBackground)
	fmt.Fprintf(b, `<text x="12" y="22" fill="%s" font-size="14" font-weight="500">%s</text>`+"\n", svgText, html.EscapeString(title))
}

// timestamps returns the evaluation times present in series, in order.
func timestamps(series []promtest.RangeSeries) []float64 {
	seen := map[float64]bool{}
	var out []float64
	for _, s := range series {
		for _, v := range s.Values {
			if ts, ok := v[0].(float64); ok && !seen[ts] {
				seen[ts] = true
				out = append(out, ts)
			}
		}
	}
	sort.Float64s(out)
	return out
}

// span is the time ts covers.
func span(ts []float64) time.Duration {
	if len(ts) < 2 {
		return 0
	}
	return time.Duration((ts[len(ts)-1] - ts[0]) * float64(time.Second)).Round(time.Second)
}

// stackedSVG draws series stacked by cache state, acked at the bottom, in
// the states' colors, as the panel does.
func stackedSVG(title string, series []promtest.RangeSeries) string {
	ts := timestamps(series)
	if len(ts) == 0 {
		var b strings.Builder
		svgHeader(&b, title+": no data")
		b.WriteString("</svg>\n")
		return b.String()
	}
	byState := map[string]map[float64]float64{}
	for _, s := range series {
		byState[s.Metric[dashboards.LabelCacheState]] = valuesAt(s)
	}
	maxSum := 1.0
	for _, x := range ts {
		sum := 0.0
		for _, st := range dashboards.CacheStates {
			sum += byState[st][x]
		}
		maxSum = math.Max(maxSum, sum)
	}
	xOf := func(i int) float64 { return plotX + plotW*(ts[i]-ts[0])/math.Max(ts[len(ts)-1]-ts[0], 1) }
	yOf := func(v float64) float64 { return plotY + plotH - plotH*v/maxSum }
	var b strings.Builder
	svgHeader(&b, title)
	for v := 0.0; v <= maxSum; v += math.Max(1, math.Ceil(maxSum/5)) {
		fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="%s"/>`, plotX, plotX+plotW, yOf(v), yOf(v), svgGrid)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" fill="%s" text-anchor="end">%.0f</text>`+"\n", plotX-6, yOf(v)+4, svgText, v)
	}
	lower := make([]float64, len(ts))
	legendY := plotY + 6
	for _, st := range dashboards.CacheStates {
		vals := byState[st]
		if vals == nil {
			continue
		}
		upper := make([]float64, len(ts))
		var pts []string
		for i, x := range ts {
			upper[i] = lower[i] + vals[x]
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", xOf(i), yOf(upper[i])))
		}
		for i := len(ts) - 1; i >= 0; i-- {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", xOf(i), yOf(lower[i])))
		}
		color := grafanaColors[dashboards.CacheStateColor(st)]
		opacity, width := 0.7, 2
		if st == "acked" {
			opacity, width = 0.15, 1
		}
		fmt.Fprintf(&b, `<polygon points="%s" fill="%s" fill-opacity="%.2f" stroke="%s" stroke-width="%d"/>`+"\n",
			strings.Join(pts, " "), color, opacity, color, width)
		fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="14" height="4" fill="%s"/><text x="%.1f" y="%.1f" fill="%s">%s</text>`+"\n",
			plotX+plotW+20, legendY-4, color, plotX+plotW+40, legendY+1, svgText, html.EscapeString(st))
		legendY += 20
		lower = upper
	}
	fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" fill="%s" text-anchor="middle">%s (%s)</text>`+"\n",
		plotX+plotW/2, plotY+plotH+24, svgText, secondsPerPixelNote, span(ts))
	b.WriteString("</svg>\n")
	return b.String()
}

// timelineSVG draws one row per series, green while the value is 1 and red
// while it is 0, as the state timeline panel does with its value mappings.
func timelineSVG(title string, series []promtest.RangeSeries, names map[string]string) string {
	ts := timestamps(series)
	if len(ts) == 0 {
		var b strings.Builder
		svgHeader(&b, title+": no data")
		b.WriteString("</svg>\n")
		return b.String()
	}
	name := func(s promtest.RangeSeries) string {
		if n, ok := names[s.Metric[dashboards.LabelServer]]; ok {
			return n
		}
		return s.Metric[dashboards.LabelServer]
	}
	sort.Slice(series, func(i, j int) bool { return name(series[i]) < name(series[j]) })
	var b strings.Builder
	svgHeader(&b, title)
	rowH := math.Min(40, plotH/float64(max(len(series), 1)))
	x0, w := plotX+120, plotW-120
	xOf := func(v float64) float64 { return x0 + w*(v-ts[0])/math.Max(ts[len(ts)-1]-ts[0], 1) }
	for r, s := range series {
		y := plotY + float64(r)*rowH
		vals := valuesAt(s)
		for i := 0; i+1 < len(ts); i++ {
			v, ok := vals[ts[i]]
			if !ok {
				continue
			}
			color := grafanaColors["red"]
			if v == 1 {
				color = grafanaColors["green"]
			}
			fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s" fill-opacity="0.8"/>`,
				xOf(ts[i]), y+2, xOf(ts[i+1])-xOf(ts[i])+0.3, rowH-4, color)
		}
		fmt.Fprintf(&b, "\n"+`<text x="%.1f" y="%.1f" fill="%s" text-anchor="end">%s</text>`+"\n",
			plotX+112, y+rowH/2+4, svgText, html.EscapeString(name(s)))
	}
	for i, l := range []struct{ color, text string }{{"green", "CONNECTED"}, {"red", "DISCONNECTED"}} {
		fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="14" height="10" fill="%s"/><text x="%.1f" y="%.1f" fill="%s">%s</text>`+"\n",
			plotX+plotW+20, plotY+float64(i)*20, grafanaColors[l.color], plotX+plotW+40, plotY+float64(i)*20+9, svgText, l.text)
	}
	fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" fill="%s" text-anchor="middle">%s (%s)</text>`+"\n",
		plotX+120+(plotW-120)/2, plotY+plotH+24, svgText, secondsPerPixelNote, span(ts))
	b.WriteString("</svg>\n")
	return b.String()
}
