package promtest

import (
	"fmt"
	"net"
	"strings"
	"testing"

	"github.com/xdslens/xdslens/internal/testing/xdstest"
)

// TestRunTakesAnotherAddress gives Run an address another listener holds
// first: Prometheus cannot bind it, and Run starts it again elsewhere.
func TestRunTakesAnotherAddress(t *testing.T) {
	t.Parallel() // waits on Prometheus
	bin := Binary(t)
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	var given []string
	freeAddr := func(t testing.TB) string {
		addr := xdstest.ClosedAddr(t)
		if len(given) == 0 {
			addr = taken.Addr().String()
		}
		given = append(given, addr)
		return addr
	}

	srv := run(t, bin, t.TempDir(), func(addr string) string {
		return fmt.Sprintf("global: {scrape_interval: 1s}\nscrape_configs:\n- job_name: self\n  static_configs: [{targets: [%q]}]\n", addr)
	}, freeAddr)
	if len(given) != 2 || srv.Base != "http://"+given[1] {
		t.Fatalf("addresses tried %v, Prometheus at %s; want the taken one, then another", given, srv.Base)
	}
	srv.WaitUntil(t, "Prometheus scraping itself at its second address", `up{job="self"}`, func(s []Sample) bool {
		return len(s) == 1 && s[0].Float() == 1 && strings.HasSuffix(srv.Base, s[0].Metric["instance"])
	})
	srv.Stop(t)
}
