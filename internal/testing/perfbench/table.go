package perfbench

import (
	"bufio"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Samples holds benchmark results by benchmark name (without the
// GOMAXPROCS suffix) and unit, one value per run.
type Samples map[string]map[string][]float64

var benchLine = regexp.MustCompile(`^Benchmark(\S+?)(?:-\d+)?\s+\d+\s+(.*)$`)

// ParseBench reads the output of go test -bench, as many runs as it holds,
// and returns every value of every benchmark.
func ParseBench(r io.Reader) (Samples, error) {
	s := Samples{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for sc.Scan() {
		m := benchLine.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		fields := strings.Fields(m[2])
		for i := 0; i+1 < len(fields); i += 2 {
			v, err := strconv.ParseFloat(fields[i], 64)
			if err != nil {
				return nil, fmt.Errorf("benchmark %s: value %q: %v", m[1], fields[i], err)
			}
			if s[m[1]] == nil {
				s[m[1]] = map[string][]float64{}
			}
			s[m[1]][fields[i+1]] = append(s[m[1]][fields[i+1]], v)
		}
	}
	return s, sc.Err()
}

// Median returns the median of the values of a benchmark in a unit, and
// false when there are none.
func (s Samples) Median(name, unit string) (float64, bool) {
	vs := slices.Clone(s[name][unit])
	if len(vs) == 0 {
		return 0, false
	}
	slices.Sort(vs)
	if n := len(vs); n%2 == 0 {
		return (vs[n/2-1] + vs[n/2]) / 2, true
	}
	return vs[len(vs)/2], true
}

// sizesIn returns the N of every BenchmarkPerf/n=N, in increasing order.
func (s Samples) sizesIn() []int {
	var ns []int
	for name := range s {
		rest, ok := strings.CutPrefix(name, "Perf/n=")
		if !ok {
			continue
		}
		n, err := strconv.Atoi(strings.SplitN(rest, "/", 2)[0])
		if err == nil && !slices.Contains(ns, n) {
			ns = append(ns, n)
		}
	}
	slices.Sort(ns)
	return ns
}

// target is one of the targets, checked on medians.
type target struct {
	text string
	met  func(client, raw func(unit string) float64, n int) bool
}

var targets = map[string]target{
	"subscribe": {"≤ 1.3× raw-ADS at n=10,000", func(client, raw func(string) float64, n int) bool {
		return n != 10000 || client("sec/op") <= 1.3*raw("sec/op")
	}},
	"update-all": {"≤ 0.80× raw-ADS, ≤ 150.5k allocs at n=10,000", func(client, raw func(string) float64, n int) bool {
		return n != 10000 || client("sec/op") <= 0.80*raw("sec/op") && client("allocs/op") <= 150_500
	}},
	"update-one": {"≤ 0.70× raw-ADS, ≤ 120.5k allocs at n=10,000", func(client, raw func(string) float64, n int) bool {
		return n != 10000 || client("sec/op") <= 0.70*raw("sec/op") && client("allocs/op") <= 120_500
	}},
}

// heapTarget is the most heap the client may retain, as a multiple of the
// response's size on the wire, at every size measured.
const heapTarget = 2

// WriteTable writes the table, as Markdown, from the medians of s:
// for every size and operation, the client's time, allocations and
// resources/s, and its ratios to the raw-ADS floor of the same operation
// and to the unmarshal floor, with the target and whether the medians meet
// it. go test reports time as ns/op; the table shows milliseconds.
func WriteTable(w io.Writer, s Samples) error {
	ns := s.sizesIn()
	if len(ns) == 0 {
		return fmt.Errorf("no BenchmarkPerf results")
	}
	fmt.Fprintln(w, "| N | operation | client ms/op | raw-ADS ms/op | unmarshal ms/op | × raw-ADS time | × raw-ADS allocs | × raw-ADS bytes | × unmarshal time | × unmarshal allocs | client resources/s | requests/op | target | met |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
	for _, n := range ns {
		prefix := fmt.Sprintf("Perf/n=%d/", n)
		floor := func(unit string) float64 { v, _ := s.Median(prefix+"unmarshal", unit); return v }
		for _, op := range []string{"subscribe", "update-all", "update-one"} {
			if _, ok := s.Median(prefix+op+"/client", "ns/op"); !ok {
				continue
			}
			client := func(unit string) float64 { return median(s, prefix+op+"/client", unit) }
			raw := func(unit string) float64 { return median(s, prefix+op+"/raw-ads", unit) }
			t := targets[op]
			met := "yes"
			switch {
			case raw("ns/op") == 0:
				met = "–" // no floor measured at this size
			case !t.met(client, raw, n):
				met = "**no**"
			}
			fmt.Fprintf(w, "| %d | %s | %.2f | %.2f | %.2f | %s | %s | %s | %s | %s | %.0f | %.1f | %s | %s |\n",
				n, op, client("ns/op")/1e6, raw("ns/op")/1e6, floor("ns/op")/1e6,
				ratio(client("ns/op"), raw("ns/op")), ratio(client("allocs/op"), raw("allocs/op")), ratio(client("B/op"), raw("B/op")),
				ratio(client("ns/op"), floor("ns/op")), ratio(client("allocs/op"), floor("allocs/op")),
				client("resources/s"), client("requests/op"), t.text, met)
		}
	}
	writeAckOnly(w, s, ns)
	writeDeltaTable(w, s, ns)
	var heap []string
	for _, n := range ns {
		name := fmt.Sprintf("Perf/n=%d/retained-heap", n)
		if r, ok := s.Median(name, "heap/wire"); ok {
			b, _ := s.Median(name, "retained-B")
			met := ""
			if r > heapTarget {
				met = " (**not met**)"
			}
			heap = append(heap, fmt.Sprintf("n=%d: %.1f MiB, %.2f× the response's wire size%s", n, b/(1<<20), r, met))
		}
	}
	if len(heap) > 0 {
		fmt.Fprintf(w, "\nRetained heap (target ≤ %d× the wire size): %s.\n", heapTarget, strings.Join(heap, "; "))
	}
	return nil
}

// writeAckOnly writes, for every size and update measured with it, the
// floor under any State of the World client (ack-only) and its ratio to
// raw-ADS: what a ratio target leaves for the client's own work.
func writeAckOnly(w io.Writer, s Samples, ns []int) {
	var floors []string
	for _, n := range ns {
		prefix := fmt.Sprintf("Perf/n=%d/", n)
		for _, op := range []string{"update-all", "update-one"} {
			a, ok := s.Median(prefix+op+"/ack-only", "ns/op")
			if !ok {
				continue
			}
			floors = append(floors, fmt.Sprintf("n=%d %s %.2f ms, %s raw-ADS", n, op, a/1e6, ratio(a, median(s, prefix+op+"/raw-ads", "ns/op"))))
		}
	}
	if len(floors) > 0 {
		fmt.Fprintf(w, "\nFloor under any State of the World client (ack-only: the response read as bytes, its version and nonce taken, the ACK sent): %s.\n", strings.Join(floors, "; "))
	}
}

// deltaTargets are the targets of delta against State of the World (SotW),
// checked on the medians of State of the World and of the server that does
// only the work of what changed (push): the linear cache's rows are shown
// but have no target.
var deltaTargets = map[string]struct {
	text string
	met  func(sotw, push float64, n int) bool
}{
	"subscribe":  {"delta-push ≤ 1.2× SotW", func(sotw, push float64, _ int) bool { return push > 0 && push <= 1.2*sotw }},
	"update-all": {"delta-push ≤ 1.2× SotW", func(sotw, push float64, _ int) bool { return push > 0 && push <= 1.2*sotw }},
	"update-one": {"push ≥ 20× faster than SotW at n=10,000", func(sotw, push float64, n int) bool {
		return n != 10000 || (push > 0 && sotw >= 20*push)
	}},
}

// writeDeltaTable writes, for every size and operation measured over delta,
// the times of the client over State of the World ("client"), over delta
// from go-control-plane's linear cache ("delta") and over delta from the
// server that does only the work of what changed ("delta-push"), with the
// speed-ups.
func writeDeltaTable(w io.Writer, s Samples, ns []int) {
	header := false
	for _, n := range ns {
		prefix := fmt.Sprintf("Perf/n=%d/", n)
		for _, op := range []string{"subscribe", "update-all", "update-one"} {
			d, okD := s.Median(prefix+op+"/delta", "ns/op")
			p, okP := s.Median(prefix+op+"/delta-push", "ns/op")
			if !okD && !okP {
				continue
			}
			if !header {
				fmt.Fprintln(w, "\n| N | operation | SotW ms/op | delta ms/op | delta-push ms/op | SotW ÷ delta | SotW ÷ delta-push | delta allocs/op | target | met |")
				fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|---|")
				header = true
			}
			sw := median(s, prefix+op+"/client", "ns/op")
			t := deltaTargets[op]
			met := "yes"
			if !t.met(sw, p, n) {
				met = "**no**"
			}
			fmt.Fprintf(w, "| %d | %s | %.2f | %s | %s | %s | %s | %.0f | %s | %s |\n",
				n, op, sw/1e6, msOrDash(d, okD), msOrDash(p, okP), ratio(sw, d), ratio(sw, p),
				median(s, prefix+op+"/delta", "allocs/op"), t.text, met)
		}
	}
}

func msOrDash(ns float64, ok bool) string {
	if !ok {
		return "–"
	}
	return fmt.Sprintf("%.3f", ns/1e6)
}

// median is Samples.Median, converting sec/op (as benchstat names it) to
// the ns/op that go test reports.
func median(s Samples, name, unit string) float64 {
	if unit == "sec/op" {
		v, _ := s.Median(name, "ns/op")
		return v / 1e9
	}
	v, _ := s.Median(name, unit)
	return v
}

func ratio(a, b float64) string {
	if b == 0 {
		return "–"
	}
	return fmt.Sprintf("%.2f×", a/b)
}
