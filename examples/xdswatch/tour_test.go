package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"

	"go.uber.org/goleak"

	adminv3 "github.com/envoyproxy/go-control-plane/envoy/admin/v3"
	statusv3 "github.com/envoyproxy/go-control-plane/envoy/service/status/v3"

	"github.com/xdslens/xdslens/xdsclient/xdsresource"
)

// csdsEntry is what the tour test reads of one CSDS generic_xds_config.
type csdsEntry struct {
	typ, name string
	status    adminv3.ClientResourceStatus
	version   string // of the resource in use, "" when none
	cached    bool
}

func (e csdsEntry) String() string {
	return fmt.Sprintf("%s %s %v version %q cached %v", e.typ, e.name, e.status, e.version, e.cached)
}

// TestDemoTour runs the tour with a short step and reads CSDS on the admin
// port each time the tour says a step took effect: every cache state shows
// up in CSDS (REQUESTED, ACKED, NACKED, RECEIVED_ERROR, DOES_NOT_EXIST,
// TIMEOUT), as do the secondary server's version after the fallback and the
// primary's after the switch back. Standard output stays JSON lines, and
// the NACK, which go-control-plane would resend in a loop, is heard once.
func TestDemoTour(t *testing.T) {
	p := startProc(t, cleanEnv(), "--demo-tour", "--demo-tour-step", "500ms", "--output", "json")
	l := p.event(t)
	if l.Event != eventListening || l.CSDS == nil || *l.CSDS == "" {
		t.Fatalf("first line %+v, want listening with the admin address", l)
	}
	csdsClient := statusv3.NewClientStatusDiscoveryServiceClient(dial(t, *l.CSDS))

	var seen []csdsEntry // in the order first seen
	var tourLines []string
	for {
		line := p.errLine(t)
		if !strings.HasPrefix(line, "xdswatch: tour") {
			continue // the client's own warnings, about the primary going away
		}
		tourLines = append(tourLines, line)
		if strings.Contains(line, "not reached") || strings.Contains(line, "the tour ends here") {
			t.Errorf("tour: %s", line)
		}
		if strings.HasPrefix(line, "xdswatch: tour over") {
			break
		}
		if !strings.Contains(line, " reached: ") {
			continue
		}
		// The tour holds what it reached for a step (500ms) at least:
		// CSDS shows it now.
		resp, err := csdsClient.FetchClientStatus(testContext(t), &statusv3.ClientStatusRequest{})
		if err != nil {
			t.Fatalf("CSDS after %q: %v", line, err)
		}
		if len(resp.GetConfig()) != 1 {
			t.Fatalf("CSDS: %d ClientConfigs, want 1", len(resp.GetConfig()))
		}
		for _, g := range resp.GetConfig()[0].GetGenericXdsConfigs() {
			typ, err := resolveType(g.GetTypeUrl())
			if err != nil {
				t.Fatal(err)
			}
			e := csdsEntry{typ: typeLabel(typ), name: g.GetName(), status: g.GetClientStatus(), version: g.GetVersionInfo(), cached: g.GetXdsConfig() != nil}
			if !slices.Contains(seen, e) {
				seen = append(seen, e)
			}
		}
	}
	if n := strings.Count(strings.Join(tourLines, "\n"), " reached: "); n != 11 {
		t.Errorf("%d goals reached, want 11:\n%s", n, strings.Join(tourLines, "\n"))
	}

	const (
		requested  = adminv3.ClientResourceStatus_REQUESTED
		acked      = adminv3.ClientResourceStatus_ACKED
		nacked     = adminv3.ClientResourceStatus_NACKED
		dne        = adminv3.ClientResourceStatus_DOES_NOT_EXIST
		received   = adminv3.ClientResourceStatus_RECEIVED_ERROR
		timeoutSt  = adminv3.ClientResourceStatus_TIMEOUT
		demoCDS    = tourCluster
		fallbackV1 = tourFallbackVersion
	)
	want := []csdsEntry{
		{"lds", "demo", acked, "1", true},
		{"eds", demoCDS, acked, "2", true},
		{"cds", demoCDS, nacked, "2", true},   // NACK: version 2 still in use
		{"cds", demoCDS, dne, "2", true},      // ignored deletion: still in use
		{"cds", demoCDS, received, "2", true}, // TP3 error: still in use
		{"cds", tourMissing, requested, "", false},
		{"cds", tourMissing, dne, "", false},
		{"cds", demoCDS, acked, "6", true}, // recovery
		{"lds", "demo", acked, fallbackV1, true},
		{"cds", tourTimeout, timeoutSt, "", false},
		{"lds", "demo", acked, "7", true}, // switch back
	}
	for _, w := range want {
		if !slices.Contains(seen, w) {
			t.Errorf("CSDS never showed %v", w)
		}
	}
	if fb, back := slices.Index(seen, want[8]), slices.Index(seen, want[10]); fb < 0 || back < fb {
		t.Errorf("the fallback version (at %d) was not followed by the primary's (at %d)", fb, back)
	}
	if t.Failed() {
		for _, e := range seen {
			t.Logf("seen: %v", e)
		}
	}

	p.interrupt(t)
	nacks := 0
	for _, line := range drain(p.stdout.lines) {
		e := parseEvent(t, line)
		if e.Event == eventAmbientError && e.Type == typeLabel(xdsresource.ClusterType) && e.Name == demoCDS && e.Code == "INVALID_ARGUMENT" {
			nacks++
		}
	}
	if nacks != 1 {
		t.Errorf("%d ambient INVALID_ARGUMENT events for cds %s, want 1 (one NACK)", nacks, demoCDS)
	}
}

// TestRunTourInProcess runs the tour in this process, so the race detector
// sees it, and ends it at the end of the tour and in the middle of the
// fallback step (primary stopped, secondary in use): run returns and
// leaves no goroutine behind.
func TestRunTourInProcess(t *testing.T) {
	for _, tc := range []struct {
		name string
		stop string // the stderr line prefix after which run is cancelled
	}{
		{"after the tour", "xdswatch: tour over"},
		{"during the fallback", "xdswatch: tour 8/9 reached: lds demo"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("GRPC_XDS_BOOTSTRAP", "")
			t.Setenv("GRPC_XDS_BOOTSTRAP_CONFIG", "")
			defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			stdoutR, stdoutW := io.Pipe()
			stderrR, stderrW := io.Pipe()
			stdout, stderr := pipeLines(stdoutR), pipeLines(stderrR)
			result := make(chan int, 1)
			go func() {
				result <- run(ctx, []string{"--demo-tour", "--demo-tour-step", "50ms", "--output", "json"}, strings.NewReader(""), stdoutW, stderrW)
				stdoutW.Close()
				stderrW.Close()
			}()
			go func() {
				for range stdout {
				}
			}()
			for {
				l := nextLine(t, stderr, "stderr")
				if strings.Contains(l, "not reached") {
					t.Errorf("tour: %s", l)
				}
				if strings.HasPrefix(l, tc.stop) {
					break
				}
			}
			cancel()
			expectCleanReturn(t, result)
			for range stderr {
			}
		})
	}
}
