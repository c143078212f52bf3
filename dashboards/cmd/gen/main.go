// Command gen writes the generated files of package dashboards into the
// current directory, which `go generate` sets to the dashboards directory:
// the Grafana dashboard JSON and a provisioning example, the Prometheus
// rule file and a prometheus.yml that loads it, the monitoring mixin
// (mixin.libsonnet, prometheus_alerts.yaml, prometheus_rules.yaml,
// dashboards_out/), and the Kubernetes PrometheusRule, PodMonitor and
// ServiceMonitor.
//
// Usage:
//
//	go generate ./dashboards/...
//	go run ./dashboards/cmd/gen -dir dashboards
//	go run ./dashboards/cmd/gen -dir /tmp/mine -group-label cluster -job-selector 'job="payments"' \
//	    -runbook-url https://wiki.example.com/xds/RUNBOOK.md
//
// The flags -group-label, -job-selector and -runbook-url are
// dashboards.WithGroupLabel, AlertOptions.JobSelector and
// AlertOptions.RunbookURL (the address of RUNBOOK.md, which the alerts'
// runbook_url annotations and the panels' runbook links point into);
// without them the files are the committed ones.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"

	"github.com/xdslens/xdslens/dashboards"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stderr))
}

// run runs the command with args and returns its exit status: 0, 1 when
// the files could not be written, 2 for bad flags.
func run(args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("gen", flag.ContinueOnError)
	fs.SetOutput(stderr)
	defaults := dashboards.DefaultAlertOptions()
	dir := fs.String("dir", ".", "the dashboards directory to write into")
	group := fs.String("group-label", "", "a label that groups processes above the job, such as cluster, as one more dashboard variable")
	jobs := fs.String("job-selector", "", `PromQL label matchers that select the jobs of the alerts, such as job="payments"`)
	runbook := fs.String("runbook-url", defaults.RunbookURL, "the address of RUNBOOK.md: alerts and panels link to its sections")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "gen: unexpected arguments %q\n", fs.Args())
		return 2
	}
	alerts := defaults
	alerts.JobSelector = *jobs
	alerts.RunbookURL = *runbook
	opts := []dashboards.Option{dashboards.WithAlertOptions(alerts)}
	if *group != "" {
		opts = append(opts, dashboards.WithGroupLabel(*group))
	}
	if err := write(*dir, opts...); err != nil {
		fmt.Fprintf(stderr, "gen: %v\n", err)
		return 1
	}
	return 0
}

// write writes every file of dashboards.Files(opts...) under dir.
func write(dir string, opts ...dashboards.Option) error {
	files, err := dashboards.Files(opts...)
	if err != nil {
		return err
	}
	paths := make([]string, 0, len(files))
	for p := range files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(full, files[p], 0o644); err != nil {
			return err
		}
	}
	return nil
}
