package promtest_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/xdslens/xdslens/internal/testing/promtest"
)

// TestRun runs Prometheus scraping itself, and checks that the helpers see
// what it scraped: an instant query, labels, and a range query.
func TestRun(t *testing.T) {
	t.Parallel() // waits on Prometheus
	bin := promtest.Binary(t)
	srv := promtest.Run(t, bin, t.TempDir(), func(addr string) string {
		return fmt.Sprintf("global: {scrape_interval: 1s}\nscrape_configs:\n- job_name: self\n  static_configs: [{targets: [%q]}]\n", addr)
	})
	addr := strings.TrimPrefix(srv.Base, "http://")
	up := srv.WaitUntil(t, "Prometheus scraping itself", `up{job="self"}`, func(s []promtest.Sample) bool {
		return len(s) == 1 && s[0].Float() == 1
	})
	if got := promtest.LabelValues(up, "instance"); !got[addr] {
		t.Errorf("instance labels %v, want %s", got, addr)
	}
	srv.ExpectLabels(t, "up's job", `up`, "job", "self")
	r, err := srv.QueryRange(`up`, time.Now().Add(-time.Minute), time.Now(), time.Second)
	if err != nil || len(r) != 1 || len(r[0].Values) == 0 {
		t.Errorf("range query: %v %v, want one series with values", r, err)
	}
	firing, err := srv.Firing()
	if err != nil || len(firing) != 0 {
		t.Errorf("alerts firing %v %v, want none (no rules)", firing, err)
	}
	srv.Stop(t)
}
