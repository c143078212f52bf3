package dashboards_test

// A test of scripts/demo-prometheus.sh: it starts the xdswatch demo and a
// real Prometheus with the rule file, the test queries that Prometheus,
// then stops the script and checks that both processes are gone. With
// XDSLENS_DASHBOARD_PICTURES set to a directory it draws the README's
// pictures there from the demo's data.

import (
	"bufio"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/xdslens/xdslens/dashboards"
	"github.com/xdslens/xdslens/internal/testing/promtest"
	"github.com/xdslens/xdslens/internal/testing/xdstest"
)

// demoLine matches the lines of the script that name a process: its
// PID and its address.
var demoLine = regexp.MustCompile(`^(xdswatch|prometheus) \(pid (\d+)\):\s+(?:metrics at )?http://([^/ ]+)`)

func TestDemoPrometheusScript(t *testing.T) {
	t.Parallel() // waits on Prometheus's scrapes and rule evaluations
	if testing.Short() {
		t.Skip("runs xdswatch and Prometheus")
	}
	if _, err := exec.LookPath("prometheus"); err != nil {
		t.Skip("prometheus not found: install Debian's prometheus package (.ci/run does)")
	}
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("curl not found: the script waits for Prometheus with it")
	}
	script, err := filepath.Abs(filepath.Join("..", "scripts", "demo-prometheus.sh"))
	if err != nil {
		t.Fatal(err)
	}
	// The script runs the xdswatch the other tests run (XDSWATCH), instead
	// of building its own, and watches what it watches by default, with a
	// resource timeout shorter than the default 15s so that the cluster
	// the demo does not serve is soon does_not_exist; Prometheus scrapes
	// and evaluates every second (PROM_INTERVAL), not every 5s.
	cmd := exec.Command("bash", script, "--resource-timeout", "2s",
		"lds:demo", "rds:demo-route", "cds:demo-cluster", "eds:demo-cluster", "cds:demo-missing")
	xdswatchPath, env := xdswatchExecutable(t)
	cmd.Env = append(env, "PROM_ADDR="+xdstest.ClosedAddr(t), "XDSWATCH="+xdswatchPath, "PROM_INTERVAL=1s")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr := &xdstest.SyncBuffer{}
	cmd.Stderr = stderr
	start := time.Now()
	demo := promtest.Start(t, "demo-prometheus.sh", cmd)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("demo-prometheus.sh stderr:\n%s", stderr.String())
		}
	})

	// The script names both processes, then the rest of its help.
	pids := map[string]int{}
	addrs := map[string]string{}
	found := make(chan error, 1)
	go func() {
		lines := bufio.NewScanner(stdout)
		for lines.Scan() {
			if m := demoLine.FindStringSubmatch(lines.Text()); m != nil {
				pid, _ := strconv.Atoi(m[2])
				pids[m[1]], addrs[m[1]] = pid, m[3]
				if len(pids) == 2 {
					found <- nil
					break
				}
			}
		}
		if len(pids) < 2 {
			found <- errors.New("the script ended its output without naming both processes")
		}
		for lines.Scan() {
		}
	}()
	timer := time.NewTimer(time.Minute)
	defer timer.Stop()
	select {
	case err := <-found:
		if err != nil {
			t.Fatal(err)
		}
	case <-demo.Done:
		t.Fatalf("demo-prometheus.sh ended: %v", demo.Err)
	case <-timer.C:
		t.Fatal("demo-prometheus.sh named no processes within a minute")
	}
	prom := &promtest.Server{Process: demo, Base: "http://" + addrs["prometheus"]}
	if cfg := runningConfig(t, prom); !strings.Contains(cfg, "scrape_interval: 1s") || !strings.Contains(cfg, "evaluation_interval: 1s") {
		t.Errorf("Prometheus runs without PROM_INTERVAL's 1s intervals:\n%s", cfg)
	}

	// Prometheus scrapes the demo, with the recording rules loaded: the
	// demo's four resources are acked, and the cluster it does not serve
	// becomes does_not_exist when the resource timer fires.
	// The job of the committed prometheus.yml, which the script runs.
	job := `{job="` + dashboards.ScrapeJob + `"}`
	states := `sum by (grpc_xds_cache_state) (` + dashboards.RecordResources + job + `)`
	prom.WaitUntil(t, "demo cache states", states, func(r []promtest.Sample) bool {
		got := map[string]string{}
		for _, s := range r {
			got[s.Metric[dashboards.LabelCacheState]] = s.Value[1].(string)
		}
		return got["acked"] == "4" && got["does_not_exist"] == "1"
	})
	prom.ExpectLabels(t, "demo scrape health", panelExpr(t, "Scrape health", map[string]string{"job": dashboards.ScrapeJob}),
		"instance", addrs["xdswatch"])
	// The alerting rules are loaded: the missing cluster's alert is pending.
	prom.WaitFor(t, "does-not-exist alert pending",
		`ALERTS{alertname="`+dashboards.AlertResourcesDoesNotExist+`", alertstate="pending", grpc_xds_cache_state="does_not_exist"}`)

	if dir := os.Getenv("XDSLENS_DASHBOARD_PICTURES"); dir != "" {
		servers, err := prom.Query(dashboards.RecordConnected)
		if err != nil {
			t.Fatal(err)
		}
		names := map[string]string{}
		for _, s := range servers {
			names[s.Metric[dashboards.LabelServer]] = "demo control plane"
		}
		drawPictures(t, prom, dir, "demo-", start, time.Now(), names)
	}

	// SIGTERM (what Ctrl-C is to a script in a terminal) stops both.
	demo.Stop(t)
	for name, pid := range pids {
		if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("%s (pid %d) still exists after the script ended (%v)", name, pid, err)
		}
	}
}

// runningConfig returns the configuration Prometheus runs, as YAML.
func runningConfig(t *testing.T, prom *promtest.Server) string {
	t.Helper()
	resp, err := http.Get(prom.Base + "/api/v1/status/config")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct {
		Data struct{ YAML string } `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatalf("/api/v1/status/config: %v", err)
	}
	return body.Data.YAML
}
