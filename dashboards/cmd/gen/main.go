// Command gen writes the generated files of package dashboards (the
// Grafana dashboard JSON, the provisioning example and the Prometheus
// alerting rules) into the current directory, which `go generate` sets to
// the dashboards directory.
//
// Usage:
//
//	go generate ./dashboards/...
//	go run ./dashboards/cmd/gen -dir dashboards
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
	flag.Parse()
	if err := write(*dir); err != nil {
		fmt.Fprintf(os.Stderr, "gen: %v\n", err)
		os.Exit(1)
	}
}

// write writes every file of dashboards.Files under dir.
func write(dir string) error {
	files, err := dashboards.Files()
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
