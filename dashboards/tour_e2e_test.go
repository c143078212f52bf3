package dashboards_test

// Every panel over the demo tour: xdswatch walks its embedded control plane
// through every cache state while it routes RPCs (--demo-tour), a real
// Prometheus scrapes it every second, and every panel of the committed
// dashboards, with the variable target set to xdswatch's xDS client and
// evaluated over the tour as Grafana draws it,
// shows something (a query returns a value other than 0 and NaN at some
// point), but those listed in zeroOnTour.

import (
	"bytes"
	"fmt"
	"maps"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/xdslens/xdslens/internal/testing/promtest"
	"github.com/xdslens/xdslens/internal/testing/xdstest"
)

// tourRateInterval is the $__rate_interval Grafana gives a data source
// scraped every second: four scrapes.
const tourRateInterval = "4s"

// zeroOnTour are the panels ("file: title") that show nothing over the
// demo tour by design, and why.
var zeroOnTour = map[string]string{
	"xds-client-overview.json: Drops by category":                       "the demo's endpoints have no drop_overloads",
	"xds-client-overview.json: Endpoint weights (weighted_round_robin)": "the demo's cluster is round_robin",
	"xds-client-overview.json: TLS handshake failures":                  "the tour's client has the mesh's certificate: no handshake fails",
	"xds-client-overview.json: Drained connections closed with their RPCs": "the tour's clients are gRPC's, which keep the GOAWAY, and its " +
		"streams end within the drain grace time",
}

// mayBeZeroOnTour are the panels whose values over the tour depend on
// timing alone, and why: neither "shows something" nor "shows nothing"
// holds in every run. Another test checks that they show data.
var mayBeZeroOnTour = map[string]string{
	"xds-client-overview.json: In flight / max_requests": "the demo's RPCs end within milliseconds: a scrape sees one in flight " +
		"only if it comes while one is (TestDataPlaneOnPrometheus has a cluster whose RPCs stay in flight)",
}

// signalWriter closes seen once what it is written contains want.
type signalWriter struct {
	want []byte
	seen chan struct{}

	mu   sync.Mutex
	tail []byte // the last bytes written, shorter than want
	once sync.Once
}

func (w *signalWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	b := append(w.tail, p...)
	if bytes.Contains(b, w.want) {
		w.once.Do(func() { close(w.seen) })
	}
	if keep := len(w.want) - 1; len(b) > keep {
		b = b[len(b)-keep:]
	}
	w.tail = slices.Clone(b)
	return len(p), nil
}

func TestEveryPanelOverTheTour(t *testing.T) {
	t.Parallel() // waits on the tour and on Prometheus's scrapes
	if testing.Short() {
		t.Skip("end-to-end test: runs xdswatch's demo tour and Prometheus")
	}
	promBin := promtest.Binary(t)
	dir := t.TempDir()
	// Prometheus first, scraping the address xdswatch will serve on, so
	// that it scrapes xdswatch from its first second: Prometheus's first
	// scrape comes seconds after it starts, and the tour's first steps
	// would come before it.
	addr := xdstest.ClosedAddr(t)
	prom := startPrometheus(t, promBin, dir, addr)
	up := fmt.Sprintf(`up{job=%q}`, xdswatchJob)
	prom.WaitFor(t, "a scrape before xdswatch", up+" == 0")
	over := &signalWriter{want: []byte("xdswatch: tour over"), seen: make(chan struct{})}
	start := time.Now()
	// Two seconds a step: each state the tour reaches lasts at least two
	// of Prometheus's 1 s scrapes, so that a scrape that comes late under
	// load still sees it (an ejection held for one step was missed once).
	watch := startXdswatchLogging(t, over, "--demo-tour", "--demo-tour-step", "2s", "--metrics-addr", addr, "--output", "json")
	timer := time.NewTimer(3 * time.Minute)
	defer timer.Stop()
	select {
	case <-over.seen:
	case <-watch.Done:
		t.Fatalf("xdswatch ended before the tour was over: %v", watch.Err)
	case <-timer.C:
		t.Fatal("the tour was not over within 3 minutes")
	}
	// From the first scrape of xdswatch to two scrapes after the end of
	// the tour.
	end := time.Now()
	prom.WaitFor(t, "a scrape after the tour", fmt.Sprintf(`timestamp(%s) > %d`, up, end.Unix()+2))
	end = time.Now()
	start = firstAt(t, prom, up+" == 1", start, end)

	// The variable target set to xdswatch's xDS client: it selects the
	// client's series and those of the channels that route with it, on
	// every panel.
	values := map[string]string{"__range": fmt.Sprintf("%ds", int(end.Sub(start).Seconds())+1), "target": "xdswatch"}
	maps.Copy(values, fleetOf(watch))
	// A panel shows something when one of its queries returns a number
	// other than 0 at some point: a panel of zeros, or of NaN (a quantile
	// of no observation), draws nothing a person could read.
	shown := map[string]int{}
	for _, q := range allPanelQueries(t) {
		panel := filepath.Base(q.file) + ": " + q.title
		expr := substitute(q.expr, tourRateInterval, values)
		r, err := prom.QueryRange(expr, start, end, time.Second)
		if err != nil {
			t.Errorf("%s: %v", q.name(), err)
			continue
		}
		shown[panel] += 0
		for _, s := range r {
			for _, v := range s.Values {
				str, _ := v[1].(string)
				if f, err := strconv.ParseFloat(str, 64); err == nil && f != 0 && !math.IsNaN(f) {
					shown[panel]++
				}
			}
		}
	}
	for _, panel := range slices.Sorted(maps.Keys(shown)) {
		if _, either := mayBeZeroOnTour[panel]; either {
			continue
		}
		why, zero := zeroOnTour[panel]
		switch points := shown[panel]; {
		case zero && points > 0:
			t.Errorf("%s: listed as showing nothing over the tour (%s), but its queries return %d points", panel, why, points)
		case !zero && points == 0:
			t.Errorf("%s: no query returns a value other than 0 over the tour", panel)
		}
	}
	for panel := range zeroOnTour {
		if _, ok := shown[panel]; !ok {
			t.Errorf("zeroOnTour lists %s, which no dashboard has", panel)
		}
	}
	for panel := range mayBeZeroOnTour {
		if _, ok := shown[panel]; !ok {
			t.Errorf("mayBeZeroOnTour lists %s, which no dashboard has", panel)
		}
	}
	watch.Stop(t)
	prom.Stop(t)
}
