package xdswatch

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
	"google.golang.org/grpc/codes"

	adminv3 "github.com/envoyproxy/go-control-plane/envoy/admin/v3"
	statusv3 "github.com/envoyproxy/go-control-plane/envoy/service/status/v3"

	"github.com/xdslens/xdslens/internal/xdswatch/demo"
	"github.com/xdslens/xdslens/xdsclient"
)

// csdsCache reads the one ClientConfig of a CSDS response as a demo.Cache
// (without servers, which CSDS does not show).
func csdsCache(t *testing.T, resp *statusv3.ClientStatusResponse) demo.Cache {
	t.Helper()
	if len(resp.GetConfig()) != 1 {
		t.Fatalf("CSDS: %d ClientConfigs, want 1", len(resp.GetConfig()))
	}
	states := map[adminv3.ClientResourceStatus]xdsclient.CacheState{
		adminv3.ClientResourceStatus_REQUESTED:      xdsclient.StateRequested,
		adminv3.ClientResourceStatus_DOES_NOT_EXIST: xdsclient.StateDoesNotExist,
		adminv3.ClientResourceStatus_ACKED:          xdsclient.StateACKed,
		adminv3.ClientResourceStatus_NACKED:         xdsclient.StateNACKed,
		adminv3.ClientResourceStatus_RECEIVED_ERROR: xdsclient.StateReceivedError,
		adminv3.ClientResourceStatus_TIMEOUT:        xdsclient.StateTimeout,
	}
	c := demo.Cache{}
	for _, g := range resp.GetConfig()[0].GetGenericXdsConfigs() {
		e := demo.Entry{State: states[g.GetClientStatus()]}
		if g.GetXdsConfig() != nil {
			e.Version = g.GetVersionInfo()
		}
		c[demo.Key{TypeURL: g.GetTypeUrl(), Name: g.GetName()}] = e
	}
	return c
}

// withoutServers returns c without the servers its entries came from.
func withoutServers(c demo.Cache) demo.Cache {
	out := demo.Cache{}
	for k, e := range c {
		e.From = ""
		out[k] = e
	}
	return out
}

// cacheDiff lists how got differs from want, one entry a line.
func cacheDiff(got, want demo.Cache) string {
	var lines []string
	for _, k := range want.SortedKeys() {
		if g, ok := got[k]; !ok || g != want[k] {
			lines = append(lines, fmt.Sprintf("%s: CSDS %+v (present %v), announced %+v", k, g, ok, want[k]))
		}
	}
	for _, k := range got.SortedKeys() {
		if _, ok := want[k]; !ok {
			lines = append(lines, fmt.Sprintf("%s: CSDS %+v, not announced", k, got[k]))
		}
	}
	return strings.Join(lines, "\n")
}

// tourRPCRE matches the text line of an RPC through the tour's channel.
var tourRPCRE = regexp.MustCompile(`^\d\d:\d\d:\d\d\.\d{3} ` + demo.Target + ` rpc /grpc\.health\.v1\.Health/Check: ([A-Z_]+), (?:no cluster|cluster \S+), (?:no peer|peer \S+)(?:, (\d+) attempts)?(?:, fault (\S+))?(?:: (.*))?$`)

// parseTourRPC returns the RPC of line, nil when line is not the line of
// an RPC through the tour's channel.
func parseTourRPC(t *testing.T, line string) *demo.RPC {
	t.Helper()
	m := tourRPCRE.FindStringSubmatch(line)
	if m == nil {
		return nil
	}
	var code codes.Code
	if err := json.Unmarshal([]byte(`"`+m[1]+`"`), &code); err != nil {
		t.Fatalf("line %q: code: %v", line, err)
	}
	attempts := 1
	if m[2] != "" {
		attempts, _ = strconv.Atoi(m[2])
	}
	return &demo.RPC{Target: demo.Target, Code: code, Attempts: attempts, Fault: m[3], Message: m[4]}
}

// TestDemoTour runs the tour in this process (so the race detector sees
// it) in text mode, standard output and standard error on one pipe, with a
// step of 300ms (the tour waits at each goal it reaches until the test has
// read CSDS), and checks what a person sees:
//
//   - each time the tour says a goal was reached, CSDS on the admin port
//     shows exactly the whole cache that goal announced (every entry, its
//     state and version): nothing changes that the tour does not
//     announce. A goal that is not the last of its step may already have
//     given way to the next one (a short does-not-exist timer), which
//     CSDS may show instead;
//   - every RPC through xds:///demo from then on has the outcome the goal
//     announced (or, but for the last goal of a step, the next goal's),
//     and there is one at least while the step's last goal is held: at a
//     NACK, an ignored deletion, a TP3 error and during the fallback RPCs
//     keep succeeding; at the does-not-exist of the route's cluster they
//     fail UNAVAILABLE naming the cluster and the node ID;
//   - the fallback step prints one line per change: one UNAVAILABLE line
//     per watch, however many times the client fails to reconnect to the
//     primary, one warning for the failure and one for the fallback, and
//     one for each server the load reports fail to reach: the primary
//     (gone) and the secondary (no LRS), as the step announces;
//   - the NACK, which go-control-plane would resend in a loop, is heard
//     once, and the cluster reports its load (LRS) in every version.
func TestDemoTour(t *testing.T) {
	t.Parallel() // a long wait on the tour's steps; TestMain cleared the bootstrap variables
	// The tour waits after each goal it reaches until the CSDS check
	// below has seen it (checked), so the step only paces the RPCs.
	const step = 300 * time.Millisecond
	checked := make(chan struct{})
	ctx, cancel := context.WithCancel(demo.WithGoalReached(context.Background(), func(ctx context.Context) {
		select {
		case <-checked:
		case <-ctx.Done():
		}
	}))
	defer cancel()
	outR, outW := io.Pipe()
	lines := pipeLines(outR)
	result := make(chan int, 1)
	go func() {
		// A slow RPC, on a machine busy with other tests, is not a failed one.
		result <- Run(ctx, []string{"--demo-tour", "--demo-tour-step", step.String(), "--rpc-timeout", "10s"}, strings.NewReader(""), outW, outW)
		outW.Close()
	}()

	// The tour's steps name the demo's xDS-enabled server, whose port
	// the demo learns at start: they are made once its line is read.
	var (
		specs []demo.Resource
		steps []demo.Step
	)
	var (
		csdsClient statusv3.ClientStatusDiscoveryServiceClient
		reached    = map[int]int{} // by step number: goals reached so far
		stepOf     = 0             // the step whose lines are being read
		fallback   []string        // the lines of the fallback step
		// The lines of the resilience steps, by title.
		resilience = map[string][]string{}
		nacks      int
		// What the server showed: its serving lines, the RBAC step's RPCs
		// and audit lines, summed up by serverLine.
		serverLines []string
		// The goal whose RPC outcome the RPCs show (step, goal, and the
		// RPCs counted for it); step 0 for none.
		rpcStep, rpcGoalAt, rpcs int
		lastRPC                  *demo.RPC // the last RPC printed
	)
	endGoal := func() {
		if rpcStep == 0 {
			return
		}
		if goals := steps[rpcStep-1].Goals; rpcGoalAt == len(goals)-1 && rpcs == 0 {
			t.Errorf("step %d (%s): no RPC while its last goal was held", rpcStep, steps[rpcStep-1].Title)
		}
		rpcStep = 0
	}
	reachedRE := regexp.MustCompile(`^xdswatch: tour (\d+)/\d+ reached: `)
	stepRE := regexp.MustCompile(`^xdswatch: tour (\d+)/\d+ [a-zA-Z0-9 -]+: `)
	for {
		line := nextLine(t, lines, "output")
		if rest, ok := strings.CutPrefix(line, "xdswatch: xDS-enabled server on "); ok {
			addr, _, _ := strings.Cut(rest, ",")
			var err error
			if specs, steps, err = demo.Plan(addr, step); err != nil {
				t.Fatal(err)
			}
		}
		if addr, ok := strings.CutPrefix(line, "xdswatch: admin port (CSDS, channelz, health, reflection) on "); ok {
			addr, _, _ = strings.Cut(addr, ";")
			csdsClient = statusv3.NewClientStatusDiscoveryServiceClient(dial(t, addr))
		}
		if strings.Contains(line, "not reached") || strings.Contains(line, "the tour ends here") {
			t.Errorf("tour: %s", line)
		}
		if strings.HasPrefix(line, "xdswatch: tour over") {
			endGoal()
			break
		}
		if m := stepRE.FindStringSubmatch(line); m != nil && !reachedRE.MatchString(line) {
			stepOf, _ = strconv.Atoi(m[1])
			endGoal()
		}
		r := parseTourRPC(t, line)
		if r != nil {
			lastRPC = r
		}
		if r != nil && rpcStep != 0 {
			goals := steps[rpcStep-1].Goals
			ok := goals[rpcGoalAt].RPC.Matches(r)
			if rpcGoalAt+1 < len(goals) {
				ok = ok || goals[rpcGoalAt+1].RPC.Matches(r)
			}
			if !ok {
				t.Errorf("step %d (%s), goal %d (%v): RPC %q", rpcStep, steps[rpcStep-1].Title, rpcGoalAt+1, goals[rpcGoalAt].RPC, line)
			}
			rpcs++
		}
		if stepOf > 0 && steps[stepOf-1].Title == "fallback" {
			fallback = append(fallback, line)
		}
		if stepOf > 0 && (steps[stepOf-1].Title == "resilience" || steps[stepOf-1].Title == "healthy again") {
			resilience[steps[stepOf-1].Title] = append(resilience[steps[stepOf-1].Title], line)
		}
		if strings.Contains(line, " cds "+demo.Cluster+" AMBIENT INVALID_ARGUMENT") {
			nacks++
		}
		serverLines = append(serverLines, serverLine(line)...)
		if strings.Contains(line, " cds "+demo.Cluster+" v") && !strings.HasSuffix(line, ", LRS") {
			t.Errorf("the demo cluster without load reporting: %s", line)
		}
		m := reachedRE.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		n, _ := strconv.Atoi(m[1])
		i := reached[n]
		reached[n]++
		if n > len(steps) || i >= len(steps[n-1].Goals) {
			t.Fatalf("%q: step %d has no goal %d", line, n, i+1)
		}
		if want := "; " + steps[n-1].Goals[i].RPC.String(); !strings.HasSuffix(line, want) {
			t.Errorf("%q: want it to end in %q", line, want)
		}
		// The tour says a goal is reached once an RPC showed it (or a
		// later goal of the step, which it passed on the way): that RPC's
		// line came first.
		shown := false
		for _, g := range steps[n-1].Goals[i:] {
			shown = shown || g.RPC.Matches(lastRPC)
		}
		if !shown {
			t.Errorf("%q after the RPC %+v", line, lastRPC)
		}
		endGoal()
		rpcStep, rpcGoalAt, rpcs = n, i, 0
		if csdsClient == nil {
			t.Fatal("no admin port line before the tour")
		}
		// The tour waits for checked: CSDS shows the goal now.
		resp, err := csdsClient.FetchClientStatus(testContext(t), &statusv3.ClientStatusRequest{})
		if err != nil {
			t.Fatalf("CSDS after %q: %v", line, err)
		}
		got, goals := csdsCache(t, resp), steps[n-1].Goals
		want := withoutServers(goals[i].Cache)
		nextGoal := i+1 < len(goals) && cacheDiff(got, want) != "" && cacheDiff(got, withoutServers(goals[i+1].Cache)) == ""
		if d := cacheDiff(got, want); d != "" && !nextGoal {
			t.Errorf("after %q, CSDS differs from what the tour announced:\n%s", line, d)
		}
		checked <- struct{}{}
	}
	for i, s := range steps {
		if reached[i+1] != len(s.Goals) {
			t.Errorf("step %d (%s): %d goals reached, want %d", i+1, s.Title, reached[i+1], len(s.Goals))
		}
	}
	if nacks != 1 {
		t.Errorf("%d AMBIENT INVALID_ARGUMENT lines for cds %s, want 1 (one NACK)", nacks, demo.Cluster)
	}
	// The server's steps: its serving lines, the two RPCs of the RBAC
	// step and the audit line of the denial, in order.
	wantServer := []string{
		"serving SERVING",
		"rpc " + demo.AllowedMethod + " OK",
		"audit " + demo.DeniedMethod + " " + demo.ClientID + " demo-authz false",
		"rpc " + demo.DeniedMethod + " PERMISSION_DENIED",
		"serving NOT_SERVING",
		"serving SERVING",
	}
	if !slices.Equal(serverLines, wantServer) {
		t.Errorf("the server's lines: %q, want %q", serverLines, wantServer)
	}

	// The fallback step: one UNAVAILABLE line for each watch, and four
	// warnings, two of them LRS failures, one UNIMPLEMENTED.
	unavailable := map[string]int{}
	warnings, lrsWarnings, unimplemented := 0, 0, 0
	for _, l := range fallback {
		if strings.Contains(l, "level=WARN") {
			warnings++
			if strings.Contains(l, `msg="LRS stream failed before any response`) {
				lrsWarnings++
				if strings.Contains(l, "code = Unimplemented") {
					unimplemented++
				}
			}
		}
		if f := strings.Fields(l); len(f) > 4 && strings.HasPrefix(f[4], "UNAVAILABLE") {
			unavailable[f[1]+" "+f[2]]++
		}
	}
	wantUnavailable := map[string]int{"cds " + demo.TimeoutCluster: 1}
	for _, s := range specs {
		wantUnavailable[s.Type.ShortName()+" "+s.Name] = 1
	}
	if !maps.Equal(unavailable, wantUnavailable) || warnings != 4 || lrsWarnings != 2 || unimplemented != 1 {
		t.Errorf("fallback step: UNAVAILABLE lines by watch %v, want %v; %d warnings, want 4 (the failure, the fallback, "+
			"LRS to the primary and, UNIMPLEMENTED, to the secondary), of which %d of LRS (%d UNIMPLEMENTED):\n%s",
			unavailable, wantUnavailable, warnings, lrsWarnings, unimplemented, strings.Join(fallback, "\n"))
	}
	if len(fallback) == 0 || !strings.Contains(fallback[0], "its load (lrs_server self) is reported to the secondary") {
		t.Errorf("the fallback step does not say where the load reports go: %.300q", fallback)
	}

	checkResilienceSteps(t, resilience["resilience"], resilience["healthy again"])

	cancel()
	expectCleanReturn(t, result)
	for range lines {
	}
}

// checkResilienceSteps checks the lines of the resilience step and of the
// step after it: RPCs retried off the failing backend (2 attempts) and
// delayed by the fault filter, its ejection by failure_percentage, then
// its return. (That RPCs take one attempt and no fault once the last
// step is reached is its goal, which every RPC then is checked against.)
func checkResilienceSteps(t *testing.T, resilience, healthy []string) {
	t.Helper()
	ejection := regexp.MustCompile(`^\d\d:\d\d:\d\d\.\d{3} ` + demo.Target + ` ejection: cluster ` + demo.Cluster + ` endpoint (\S+) (ejected by failure_percentage|returned)`)
	var ejected, returned []string
	for _, l := range append(slices.Clone(resilience), healthy...) {
		if m := ejection.FindStringSubmatch(l); m != nil && m[2] == "returned" {
			returned = append(returned, m[1])
		} else if m != nil {
			ejected = append(ejected, m[1])
		}
	}
	if len(ejected) != 1 || !slices.Equal(returned, ejected) {
		t.Errorf("resilience steps: endpoints ejected %q and returned %q, want one ejected, then returned:\n%s\n%s",
			ejected, returned, strings.Join(resilience, "\n"), strings.Join(healthy, "\n"))
	}
	if !slices.ContainsFunc(resilience, func(l string) bool { return strings.Contains(l, ", 2 attempts, fault delay") }) {
		t.Errorf("resilience step: no RPC retried under the fault filter's delay:\n%s", strings.Join(resilience, "\n"))
	}
}

var (
	servingLineRE = regexp.MustCompile(`^\d\d:\d\d:\d\d\.\d{3} serving \S+ (SERVING|NOT_SERVING)`)
	serverCallRE  = regexp.MustCompile(`^xdswatch: tour: (\S+) on \S+ as \S+: ([A-Z_]+) `)
	auditLineRE   = regexp.MustCompile(`^\{"grpc_audit_log":`)
)

// serverLine sums up a line the demo's xDS-enabled server or the tour's
// calls to it printed: "serving MODE", "rpc METHOD CODE", or "audit
// METHOD PRINCIPAL POLICY AUTHORIZED"; nothing for another line.
func serverLine(line string) []string {
	if m := servingLineRE.FindStringSubmatch(line); m != nil {
		return []string{"serving " + m[1]}
	}
	if m := serverCallRE.FindStringSubmatch(line); m != nil {
		return []string{"rpc " + m[1] + " " + m[2]}
	}
	if auditLineRE.MatchString(line) {
		var e struct {
			Log struct {
				RPCMethod  string `json:"rpc_method"`
				Principal  string `json:"principal"`
				PolicyName string `json:"policy_name"`
				Authorized bool   `json:"authorized"`
			} `json:"grpc_audit_log"`
		}
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			return []string{"audit line " + line + ": " + err.Error()}
		}
		return []string{fmt.Sprintf("audit %s %s %s %v", e.Log.RPCMethod, e.Log.Principal, e.Log.PolicyName, e.Log.Authorized)}
	}
	return nil
}

// TestRunTourInProcess runs the tour in this process, so the race detector
// sees it, its channel and its RPCs, and ends it at the end of the tour and
// in the middle of the fallback step (primary stopped, secondary in use):
// RPCs succeeded, and run returns and leaves no goroutine behind (the
// channel, its RPCs and the demo's backends are stopped).
//
// goleak checks every goroutine of the process, where those of the other
// tests would count as leaks; so the test runs alone, in a process of its
// own (this test binary, running only it), beside the others.
func TestRunTourInProcess(t *testing.T) {
	if os.Getenv(aloneEnv) != "1" {
		t.Parallel()
		runAlone(t)
		return
	}
	// TestMain cleared the bootstrap variables.
	for _, tc := range []struct {
		name string
		stop string // the stderr line prefix after which run is cancelled
	}{
		{"after the tour", "xdswatch: tour over"},
		{"during the fallback", "xdswatch: tour 8/14 reached: every demo resource"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			stdoutR, stdoutW := io.Pipe()
			stderrR, stderrW := io.Pipe()
			stdout, stderr := pipeLines(stdoutR), pipeLines(stderrR)
			result := make(chan int, 1)
			go func() {
				result <- Run(ctx, []string{"--demo-tour", "--demo-tour-step", "50ms", "--output", "json"}, strings.NewReader(""), stdoutW, stderrW)
				stdoutW.Close()
				stderrW.Close()
			}()
			okRPCs := make(chan int, 1)
			go func() {
				n := 0
				for l := range stdout {
					if strings.Contains(l, `"event":"rpc"`) && strings.Contains(l, `"code":"OK"`) {
						n++
					}
				}
				okRPCs <- n
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
			if n := <-okRPCs; n == 0 {
				t.Error("no RPC through " + demo.Target + " succeeded")
			}
		})
	}
}

// aloneEnv, when "1", tells a test that it runs alone in its process
// (runAlone).
const aloneEnv = "XDSWATCH_TEST_ALONE"

// runAlone runs the calling test, alone, in a new process of this test
// binary with aloneEnv set, and fails t with the process's output if it
// fails. The process has the race detector when this one has it.
func runAlone(t *testing.T) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	args := []string{"-test.run", "^" + regexp.QuoteMeta(t.Name()) + "$", "-test.count", "1", "-test.timeout", "2m"}
	if testing.Verbose() {
		args = append(args, "-test.v")
	}
	cmd := exec.Command(self, args...)
	cmd.Env = cleanEnv(aloneEnv + "=1")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "PASS") {
		t.Fatalf("%s alone in a process: %v\n%s", t.Name(), err, out)
	}
	if testing.Verbose() {
		t.Logf("alone in a process:\n%s", out)
	}
}
