package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xdslens/xdslens/internal/testing/testmain"
)

// TestRun prints the table from a file and from standard input alike, and
// names a file it cannot read.
func TestRun(t *testing.T) {
	bench := "BenchmarkPerf/n=1000/subscribe/client-2  20  5000000 ns/op  2.000 requests/op  200000 resources/s  100 B/op  10 allocs/op\n" +
		"BenchmarkPerf/n=1000/subscribe/raw-ads-2  20  4000000 ns/op  250000 resources/s  80 B/op  8 allocs/op\n"
	file := filepath.Join(t.TempDir(), "perf.txt")
	if err := os.WriteFile(file, []byte(bench), 0o600); err != nil {
		t.Fatal(err)
	}
	var fromFile, fromStdin bytes.Buffer
	if err := run([]string{file}, nil, &fromFile); err != nil {
		t.Fatal(err)
	}
	if err := run(nil, strings.NewReader(bench), &fromStdin); err != nil {
		t.Fatal(err)
	}
	if fromFile.String() != fromStdin.String() || !strings.Contains(fromFile.String(), "| 1000 | subscribe | 5.00 | 4.00 |") {
		t.Errorf("from a file:\n%s\nfrom stdin:\n%s", fromFile.String(), fromStdin.String())
	}
	if err := run([]string{filepath.Join(t.TempDir(), "missing.txt")}, nil, &fromFile); err == nil || !strings.Contains(err.Error(), "missing.txt") {
		t.Errorf("missing file: %v, want an error naming it", err)
	}
}

// TestMain ends the test binary without the race detector's pause at exit.
func TestMain(m *testing.M) { testmain.Run(m) }
