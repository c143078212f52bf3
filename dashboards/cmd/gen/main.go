// Command gen writes the generated files of package dashboards (the
// Grafana dashboard JSON, the provisioning example and the Prometheus
// recording and alerting rules) into the current directory, which `go
// generate` sets to the dashboards directory.
//
// Usage:
//
//	go generate ./dashboards/...
//	go run ./dashboards/cmd/gen -dir dashboards
//	go run ./dashboards/cmd/gen -dir /tmp/mine -group-label cluster -job-selector 'job="payments"'
//
// The flags -group-label and -job-selector are dashboards.WithGroupLabel
// and AlertOptions.JobSelector; without them the files are the committed
// ones.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/xdslens/xdslens/dashboards"
)

func main() {
	dir := flag.String("dir", ".", "the dashboards directory to write into")
	group := flag.String("group-label", "", "a label that groups processes above the job, such as cluster, as one more dashboard variable")
	jobs := flag.String("job-selector", "", `PromQL label matchers that select the jobs of the alerts, such as job="payments"`)
	flag.Parse()
	alerts := dashboards.DefaultAlertOptions()
	alerts.JobSelector = *jobs
	opts := []dashboards.Option{dashboards.WithAlertOptions(alerts)}
	if *group != "" {
		opts = append(opts, dashboards.WithGroupLabel(*group))
	}
	if err := write(*dir, opts...); err != nil {
		fmt.Fprintf(os.Stderr, "gen: %v\n", err)
		os.Exit(1)
	}
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
