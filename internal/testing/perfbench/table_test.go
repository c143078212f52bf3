package perfbench

import (
	"strings"
	"testing"
)

const sampleBench = `goos: linux
BenchmarkPerf/n=10000/update-all/client-2    20  60000000 ns/op  1.000 requests/op  166666 resources/s  26000000 B/op  250000 allocs/op
BenchmarkPerf/n=10000/update-all/client-2    20  50000000 ns/op  1.000 requests/op  200000 resources/s  26000000 B/op  250000 allocs/op
BenchmarkPerf/n=10000/update-all/raw-ads-2   20  40000000 ns/op  250000 resources/s  22000000 B/op  200000 allocs/op
BenchmarkPerf/n=10000/update-one/client-2    20  45000000 ns/op  1.000 requests/op  222222 resources/s  14000000 B/op  150000 allocs/op
BenchmarkPerf/n=10000/update-one/raw-ads-2   20  40000000 ns/op  250000 resources/s  22000000 B/op  240000 allocs/op
BenchmarkPerf/n=10000/update-one/ack-only-2  20  28000000 ns/op  357142 resources/s  12000000 B/op  120000 allocs/op
BenchmarkPerf/n=10000/update-all/delta-2     20  70000000 ns/op  1.000 requests/op  142857 resources/s  26000000 B/op  250000 allocs/op
BenchmarkPerf/n=10000/update-all/delta-push-2 20  60000000 ns/op  1.000 requests/op  166666 resources/s  26000000 B/op  250000 allocs/op
BenchmarkPerf/n=10000/update-one/delta-2     20  5000000 ns/op  1.000 requests/op  2000000 resources/s  2000000 B/op  11000 allocs/op
BenchmarkPerf/n=10000/update-one/delta-push-2 20000  50000 ns/op  1.000 requests/op  200000000 resources/s  4700 B/op  87 allocs/op
BenchmarkPerf/n=10000/unmarshal-2            60  16000000 ns/op  50.00 MB/s  625000 resources/s  10000000 B/op  120000 allocs/op
BenchmarkPerf/n=10000/retained-heap-2         2  400000000 ns/op  12.00 heap/wire  10485760 retained-B  1 B/op  1 allocs/op
PASS
`

func TestParseBenchMedians(t *testing.T) {
	s, err := ParseBench(strings.NewReader(sampleBench))
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := s.Median("Perf/n=10000/update-all/client", "ns/op"); got != 55e6 {
		t.Errorf("median of two runs = %v, want 55e6", got)
	}
	if got, _ := s.Median("Perf/n=10000/unmarshal", "MB/s"); got != 50 {
		t.Errorf("MB/s = %v, want 50", got)
	}
	if _, ok := s.Median("Perf/n=10000/subscribe/client", "ns/op"); ok {
		t.Error("median of a benchmark that did not run is reported")
	}
}

func TestWriteTable(t *testing.T) {
	s, err := ParseBench(strings.NewReader(sampleBench))
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := WriteTable(&b, s); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"| 10000 | update-all | 55.00 | 40.00 | 16.00 | 1.38× | 1.25× | 1.18× | 3.44× | 2.08× | 183333 | 1.0 | ≤ 0.80× raw-ADS, ≤ 150.5k allocs at n=10,000 | **no** |",
		"| 10000 | update-one | 45.00 | 40.00 | 16.00 | 1.12× | 0.62× | 0.64× | 2.81× | 1.25× | 222222 | 1.0 | ≤ 0.70× raw-ADS, ≤ 120.5k allocs at n=10,000 | **no** |",
		"n=10000: 10.0 MiB, 12.00× the response's wire size (**not met**)",
		"ack-only: the response read as bytes, its version and nonce taken, the ACK sent): n=10000 update-one 28.00 ms, 0.70× raw-ADS.",
		"| 10000 | update-all | 55.00 | 70.000 | 60.000 | 0.79× | 0.92× | 250000 | delta-push ≤ 1.2× SotW | yes |",
		"| 10000 | update-one | 45.00 | 5.000 | 0.050 | 9.00× | 900.00× | 11000 | push ≥ 20× faster than SotW at n=10,000 | yes |",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "subscribe") {
		t.Errorf("table has a row for an operation that did not run:\n%s", out)
	}
}
