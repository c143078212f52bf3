// Command perftable prints the table of the xDS client's performance at
// scale, with its ratios to the raw-ADS and unmarshal floors, from the
// output of the perfbench benchmarks:
//
//	go test -run '^$' -bench BenchmarkPerf -benchmem -count 6 ./internal/testing/perfbench > perf.txt
//	go run ./internal/testing/perfbench/perftable perf.txt
//
// With no file arguments it reads standard input. The values are the
// medians of all runs of each benchmark.
package main

import (
	"fmt"
	"io"
	"os"

	"github.com/xdslens/xdslens/internal/testing/perfbench"
)

func main() {
	if err := run(os.Args[1:], os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "perftable:", err)
		os.Exit(1)
	}
}

func run(files []string, stdin io.Reader, out io.Writer) error {
	var in []io.Reader
	for _, name := range files {
		f, err := os.Open(name)
		if err != nil {
			return err
		}
		defer f.Close()
		in = append(in, f)
	}
	if len(in) == 0 {
		in = append(in, stdin)
	}
	s, err := perfbench.ParseBench(io.MultiReader(in...))
	if err != nil {
		return err
	}
	return perfbench.WriteTable(out, s)
}
