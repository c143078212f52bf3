package xdswatch

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// refusingServer listens on a loopback port and closes every connection
// as soon as it is accepted: an xDS server the client never reaches. It
// returns the address and a channel that receives a value per connection.
func refusingServer(t *testing.T) (addr string, accepted <-chan struct{}) {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ch := make(chan struct{}, 100)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := lis.Accept()
			if err != nil {
				return
			}
			c.Close()
			select {
			case ch <- struct{}{}:
			default:
			}
		}
	}()
	t.Cleanup(func() { lis.Close(); <-done })
	return lis.Addr().String(), ch
}

// TestServerNeverReached runs xdswatch in text mode against a server that
// closes every connection at once. The client retries with backoff; the
// resource timer, which starts only once a request is sent (gRFC A57),
// never runs. xdswatch says once that the server was not reached and that
// the resources wait for it, prints one UNAVAILABLE line per watch (not
// one per attempt) and one warning, and no resource times out.
func TestServerNeverReached(t *testing.T) {
	t.Parallel() // waits for a resource timer that never starts
	addr, accepted := refusingServer(t)
	bootstrapFile := filepath.Join(t.TempDir(), "bootstrap.json")
	bs := fmt.Sprintf(`{"xds_servers": [{"server_uri": %q, "channel_creds": [{"type": "insecure"}]}], "node": {"id": %q}}`, addr, testNodeID)
	if err := os.WriteFile(bootstrapFile, []byte(bs), 0o600); err != nil {
		t.Fatal(err)
	}
	p := startRun(t, "--bootstrap", bootstrapFile, "--resource-timeout", "100ms", "cds:c1", "lds:l1")
	// Three connection attempts, each a failure: with backoff (1s, then
	// 1.6s), well over the resource timeout.
	deadline := time.NewTimer(testTimeout)
	defer deadline.Stop()
	for range 3 {
		select {
		case <-accepted:
		case <-deadline.C:
			t.Fatal("the client did not try to connect three times")
		}
	}
	p.interrupt(t)
	stdout, stderr := drain(p.stdout.lines), drain(p.stderr.lines)

	notes, warnings := 0, 0
	for _, l := range stderr {
		if strings.HasPrefix(l, "xdswatch: xDS server "+addr+" not reached yet") {
			notes++
			for _, want := range []string{"wait for it", "--resource-timeout", "gRFC A57"} {
				if !strings.Contains(l, want) {
					t.Errorf("note %q does not say %q", l, want)
				}
			}
		}
		if strings.Contains(l, "level=WARN") {
			warnings++
		}
	}
	if notes != 1 || warnings != 1 {
		t.Errorf("%d notes that the server was not reached and %d warnings, want 1 and 1; standard error:\n%s", notes, warnings, strings.Join(stderr, "\n"))
	}
	lines := map[string]int{}
	for _, l := range stdout {
		if f := strings.Fields(l); len(f) > 4 {
			lines[strings.Join(f[1:5], " ")]++
		}
	}
	want := map[string]int{"cds c1 ERROR UNAVAILABLE:": 1, "lds l1 ERROR UNAVAILABLE:": 1}
	if fmt.Sprint(lines) != fmt.Sprint(want) {
		t.Errorf("standard output %v, want one UNAVAILABLE line per watch and no timeout:\n%s", lines, strings.Join(stdout, "\n"))
	}
}
