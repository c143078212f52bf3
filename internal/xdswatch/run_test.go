package xdswatch

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/xdslens/xdslens/internal/xdswatch/demo"
	"github.com/xdslens/xdslens/xdsclient/xdsresource"
)

// pipeLines reads r line by line onto the returned channel.
func pipeLines(r io.Reader) <-chan string {
	ch := make(chan string, 1000)
	go func() {
		defer close(ch)
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			ch <- sc.Text()
		}
	}()
	return ch
}

// TestRunInProcess runs the demo in this process, so the race detector
// sees run itself: watches from arguments, stdin commands, and the end by
// context cancellation.
func TestRunInProcess(t *testing.T) {
	t.Parallel() // TestMain cleared the bootstrap variables
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stdinR, stdinW := io.Pipe()
	stdoutR, stdoutW := io.Pipe()
	stderrR, stderrW := io.Pipe()
	defer stdinW.Close()
	stdout, stderr := pipeLines(stdoutR), pipeLines(stderrR)

	result := make(chan int, 1)
	go func() {
		// The demo's default admin port and metrics are turned off.
		result <- Run(ctx, []string{"--stdin", "eds:demo-cluster", "--csds-addr", "", "--metrics-addr", "", "--output", "json", "cds:demo-cluster"}, stdinR, stdoutW, stderrW)
		stdoutW.Close()
		stderrW.Close()
	}()
	next := func(ch <-chan string) string {
		t.Helper()
		return nextLine(t, ch, "output")
	}

	if l := next(stdout); l != `{"event":"listening","csds":"","metrics":""}` {
		t.Fatalf("first line %s", l)
	}
	got := []string{parseEvent(t, next(stdout)).String(), parseEvent(t, next(stdout)).String()}
	slices.Sort(got)
	want := []string{"resource cds demo-cluster v1", "resource eds demo-cluster v1"}
	if !slices.Equal(got, want) {
		t.Errorf("events %q, want %q", got, want)
	}

	if _, err := io.WriteString(stdinW, "-eds:demo-cluster\n+lds:demo\n?\n"); err != nil {
		t.Fatal(err)
	}
	if e := parseEvent(t, next(stdout)); e.String() != "resource lds demo v1" {
		t.Errorf("after +lds:demo: %v", e)
	}
	if l := next(stderr); !strings.HasPrefix(l, `xdswatch: stdin: "?"`) {
		t.Errorf("stderr line %q", l)
	}

	cancel()
	expectCleanReturn(t, result)
	for l := range stdout {
		t.Errorf("more stdout: %s", l)
	}
	for l := range stderr {
		t.Errorf("more stderr: %s", l)
	}
}

// TestRunCancelledBeforeStart checks that a stop asked for during start-up
// is a clean end.
func TestRunCancelledBeforeStart(t *testing.T) {
	t.Parallel() // TestMain cleared the bootstrap variables
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var stdout, stderr strings.Builder
	if code := Run(ctx, []string{"--output", "json"}, strings.NewReader(""), &stdout, &stderr); code != 0 {
		t.Errorf("run = %d, want 0 (stderr %q)", code, stderr.String())
	}
}

// TestParseSpec covers the spellings of TYPE:NAME, good and bad.
func TestParseSpec(t *testing.T) {
	t.Parallel()
	tests := []struct {
		arg      string
		wantType xdsresource.Type
		wantName string
		wantErr  string
	}{
		{"lds:l1", xdsresource.ListenerType, "l1", ""},
		{"rds:r1", xdsresource.RouteConfigType, "r1", ""},
		{"cds:c1", xdsresource.ClusterType, "c1", ""},
		{"eds:e1", xdsresource.EndpointsType, "e1", ""},
		{"CDS:c1", xdsresource.ClusterType, "c1", ""},
		{"type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment:e1", xdsresource.EndpointsType, "e1", ""},
		{"cds:xdstp://auth/envoy.config.cluster.v3.Cluster/c1", xdsresource.ClusterType, "xdstp://auth/envoy.config.cluster.v3.Cluster/c1", ""},
		{"cds:a:b", xdsresource.ClusterType, "a:b", ""},
		{"lds:grpc/server?xds.resource.listening_address=127.0.0.1:8443", xdsresource.ListenerType, "grpc/server?xds.resource.listening_address=127.0.0.1:8443", ""},
		{"cds", nil, "", "want TYPE:NAME"},
		{"cds:", nil, "", "empty resource name"},
		{":c1", nil, "", `unknown resource type ""`},
		{"sds:s1", nil, "", `unknown resource type "sds"`},
		{"type.googleapis.com/envoy.config.cluster.v3.Foo:c1", nil, "", `resource type "type.googleapis.com/envoy.config.cluster.v3.Foo" is not supported`},
	}
	for _, tt := range tests {
		s, err := parseSpec(tt.arg)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("parseSpec(%q) error = %v, want one containing %q", tt.arg, err, tt.wantErr)
			}
			continue
		}
		if err != nil || s.typ != tt.wantType || s.name != tt.wantName {
			t.Errorf("parseSpec(%q) = %v, %v; want %s:%s", tt.arg, s, err, typeLabel(tt.wantType), tt.wantName)
		}
	}
}

// TestParseArgs covers flag placement, defaults and -h.
func TestParseArgs(t *testing.T) {
	t.Parallel()
	// Flags may come between TYPE:NAME arguments; after "--" everything is
	// a TYPE:NAME.
	cfg, err := parseArgs([]string{"cds:c1", "--output", "json", "eds:e1", "--stdin", "--target=t", "--", "lds:l", "cds:c1"})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.output != outputJSON || !cfg.stdin || cfg.target != "t" || cfg.resourceTimeout != 15*time.Second {
		t.Errorf("config = %+v", cfg)
	}
	var specs []string
	for _, s := range cfg.specs {
		specs = append(specs, s.String())
	}
	if want := []string{"cds:c1", "eds:e1", "lds:l", "cds:c1"}; !slices.Equal(specs, want) {
		t.Errorf("specs = %q, want %q", specs, want)
	}
	if _, err := parseArgs([]string{"--", "--stdin"}); err == nil || !strings.Contains(err.Error(), `"--stdin"`) {
		t.Errorf("parseArgs(--, --stdin) = %v, want an error about TYPE:NAME \"--stdin\"", err)
	}
	if cfg, err := parseArgs(nil); err != nil || cfg.output != outputText || cfg.target != "xdswatch" || len(cfg.specs) != 0 ||
		cfg.keepaliveTime != 5*time.Minute || cfg.keepaliveTimeout != 20*time.Second {
		t.Errorf("defaults: %+v, %v", cfg, err)
	}
	if cfg, err := parseArgs([]string{"--keepalive-time", "30s", "--keepalive-timeout", "2s", "cds:c1"}); err != nil || cfg.keepaliveTime != 30*time.Second || cfg.keepaliveTimeout != 2*time.Second {
		t.Errorf("keepalive flags: %+v, %v", cfg, err)
	}
	if _, err := parseArgs([]string{"--help"}); !errors.Is(err, flag.ErrHelp) {
		t.Errorf("--help: %v, want flag.ErrHelp", err)
	}

	// xds:/// arguments among TYPE:NAME ones, and the RPC flags.
	cfg, err = parseArgs([]string{"xds:///a", "cds:c", "--rpc-interval", "1s", "--rpc-header", "X-A=1", "--rpc-header", "x-a=2", "xds://auth/b%2Fc"})
	if err != nil {
		t.Fatal(err)
	}
	var targets []string
	for _, tg := range cfg.targets {
		targets = append(targets, tg.arg+" "+tg.authority+" "+tg.path)
	}
	if want := []string{"xds:///a  /a", "xds://auth/b%2Fc auth /b/c"}; !slices.Equal(targets, want) || len(cfg.specs) != 1 {
		t.Errorf("targets %q, want %q; specs %v", targets, want, cfg.specs)
	}
	if r := cfg.rpc; r.interval != time.Second || r.method != "/grpc.health.v1.Health/Check" || r.timeout != time.Second ||
		!slices.Equal(r.headers.md["x-a"], []string{"1", "2"}) || len(r.headers.md) != 1 {
		t.Errorf("rpc flags %+v", r)
	}
	// The tour routes xds:///demo, with RPCs three times per step.
	cfg, err = parseArgs([]string{"--demo-tour", "--demo-tour-step", "600ms"})
	if err != nil || len(cfg.targets) != 1 || cfg.targets[0].arg != demo.Target || cfg.rpc.interval != 200*time.Millisecond {
		t.Errorf("--demo-tour: %+v, %v; want target %s and RPCs every 200ms", cfg, err, demo.Target)
	}
}

// TestCodeNames checks every name against grpc-go's own JSON names for
// codes.
func TestCodeNames(t *testing.T) {
	t.Parallel()
	for c := codes.OK; c <= codes.Unauthenticated; c++ {
		name := codeName(c)
		var back codes.Code
		if err := json.Unmarshal([]byte(`"`+name+`"`), &back); err != nil || back != c {
			t.Errorf("codeName(%v) = %q, which reads back as %v (%v)", c, name, back, err)
		}
	}
	if got := codeName(codes.Code(42)); got != "Code(42)" {
		t.Errorf("codeName(42) = %q", got)
	}
}

// TestOneLine checks how multi-line messages are folded.
func TestOneLine(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"plain":         "plain",
		"a\nb":          "a; b",
		"a\r\nb\n\nc\n": "a; b; c",
		"trailing\n":    "trailing",
		"":              "",
	} {
		if got := oneLine(in); got != want {
			t.Errorf("oneLine(%q) = %q, want %q", in, got, want)
		}
	}
}

// expectCleanReturn waits for run's exit status on result, after its
// context was cancelled: 0, within testTimeout.
func expectCleanReturn(t *testing.T, result <-chan int) {
	t.Helper()
	select {
	case code := <-result:
		if code != 0 {
			t.Errorf("run returned %d after cancellation, want 0", code)
		}
	case <-time.After(testTimeout):
		t.Fatal("run did not return after cancellation")
	}
}
