package xdswatch

import (
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	"google.golang.org/protobuf/types/known/anypb"

	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/xdslens/xdslens/internal/xdswatch/demo/controlplane"
)

// topKeys returns the keys of the JSON object in line, in order.
func topKeys(t *testing.T, line string) []string {
	t.Helper()
	var raw map[string]json.RawMessage
	if err := json.Unmarshal([]byte(line), &raw); err != nil {
		t.Fatalf("line %q: %v", line, err)
	}
	dec := json.NewDecoder(strings.NewReader(line))
	if _, err := dec.Token(); err != nil { // {
		t.Fatal(err)
	}
	var keys []string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, tok.(string))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			t.Fatal(err)
		}
	}
	return keys
}

// demoServerListenerName is the name of the demo's server Listener.
const demoServerListenerName = "grpc/server?xds.resource.listening_address=127.0.0.1:8443"

// TestDemoJSON runs without a bootstrap: the listening line carries the
// admin and metrics addresses the demo serves on loopback by default, the
// demo's five resources are printed as JSON lines with stable keys (among
// them a server Listener and a cluster that reports load), and SIGINT ends
// it with status 0.
func TestDemoJSON(t *testing.T) {
	t.Parallel()
	p := startRun(t, "--output", "json")
	l := p.event(t)
	for what, addr := range map[string]*string{"csds": l.CSDS, "metrics": l.Metrics} {
		if l.Event != eventListening || addr == nil || !regexp.MustCompile(`^127\.0\.0\.1:[1-9]\d*$`).MatchString(*addr) {
			t.Errorf("listening line %+v: %s address, want a bound 127.0.0.1 port", l, what)
		}
	}
	got := map[string]bool{}
	for range 5 {
		line := p.line(t)
		if keys, want := topKeys(t, line), []string{"ts", "event", "type", "name", "version", "resource"}; !slices.Equal(keys, want) {
			t.Errorf("keys of %s = %q, want %q", line, keys, want)
		}
		e := parseEvent(t, line)
		if e.Event != eventResource || e.Version != "1" {
			t.Errorf("line %s: want a resource event at version 1", line)
		}
		var msg struct {
			Name        string `json:"name"`
			ClusterName string `json:"clusterName"`
		}
		if err := json.Unmarshal(e.Resource, &msg); err != nil {
			t.Errorf("line %s: resource: %v", line, err)
		}
		if n := msg.Name + msg.ClusterName; n != e.Name {
			t.Errorf("line %s: resource is named %q, want %q", line, n, e.Name)
		}
		got[e.Type+":"+e.Name] = true
		switch {
		case e.Type == "cds" && !strings.Contains(string(e.Resource), `"lrsServer":{"self":{}`):
			t.Errorf("cds %s = %s, want lrs_server self", e.Name, e.Resource)
		case e.Name == demoServerListenerName && !strings.Contains(string(e.Resource), `"socketAddress":{"address":"127.0.0.1","portValue":8443}`):
			t.Errorf("lds %s = %s, want the server listener on 127.0.0.1:8443", e.Name, e.Resource)
		}
	}
	for _, want := range []string{"lds:demo", "lds:" + demoServerListenerName, "rds:demo-route", "cds:demo-cluster", "eds:demo-cluster"} {
		if !got[want] {
			t.Errorf("demo did not print %s (all: %v)", want, got)
		}
	}
	p.interrupt(t)
	if lines := drain(p.stderr.lines); len(lines) > 0 {
		t.Errorf("stderr in JSON demo mode: %q", lines)
	}
}

// TestDemoText checks the text lines of the demo, the stderr lines that
// name the demo server and the commands to try on its admin port and
// metrics (which answer), and that SIGTERM ends it with status 0.
func TestDemoText(t *testing.T) {
	t.Parallel()
	p := startRun(t)
	if l := p.errLine(t); !regexp.MustCompile(`^xdswatch: .*demo control plane .*127\.0\.0\.1:\d+$`).MatchString(l) {
		t.Errorf("stderr line = %q, want one naming the demo control plane address", l)
	}
	adminRE := regexp.MustCompile(`^xdswatch: admin port .* on (127\.0\.0\.1:\d+); try: grpcdebug (\S+) xds status +or: grpcdebug (\S+) channelz channels$`)
	l := p.errLine(t)
	m := adminRE.FindStringSubmatch(l)
	if m == nil || m[2] != m[1] || m[3] != m[1] {
		t.Fatalf("stderr line = %q, want %v naming one address", l, adminRE)
	}
	metricsRE := regexp.MustCompile(`^xdswatch: metrics on http://(127\.0\.0\.1:\d+)/metrics; try: curl http://(\S+)/metrics$`)
	l = p.errLine(t)
	mm := metricsRE.FindStringSubmatch(l)
	if mm == nil || mm[2] != mm[1] {
		t.Fatalf("stderr line = %q, want %v naming one address", l, metricsRE)
	}
	lineRE := regexp.MustCompile(`^\d\d:\d\d:\d\d\.\d{3} (lds|rds|cds|eds) (\S+) v1: (.+)$`)
	summaries := map[string]string{}
	for range 5 {
		l := p.line(t)
		m := lineRE.FindStringSubmatch(l)
		if m == nil {
			t.Fatalf("text line %q does not match %v", l, lineRE)
		}
		summaries[m[1]+":"+m[2]] = m[3]
	}
	if s := summaries["cds:demo-cluster"]; !strings.HasPrefix(s, `cluster demo-cluster: EDS service "demo-cluster", round_robin`) || !strings.HasSuffix(s, ", LRS") {
		t.Errorf("cds summary = %q, want the demo cluster, with LRS", s)
	}
	if s := summaries["lds:demo"]; !strings.HasPrefix(s, `listener demo: RDS "demo-route"`) {
		t.Errorf("lds summary = %q", s)
	}
	if s, want := summaries["lds:"+demoServerListenerName], "server listener "+demoServerListenerName+": 127.0.0.1:8443, 1 filter chain"; s != want {
		t.Errorf("server listener summary = %q, want %q", s, want)
	}
	// What the lines say to try answers.
	if st := healthCheck(t, m[1]); st != healthpb.HealthCheckResponse_SERVING {
		t.Errorf("health of %s: %v, want SERVING", m[1], st)
	}
	if body := mustScrape(t, mm[1]); !strings.Contains(body, "grpc_xds_client_connected") {
		t.Errorf("http://%s/metrics lacks grpc_xds_client_connected:\n%s", mm[1], body)
	}
	p.signal(t, syscall.SIGTERM)
	if code := p.exitCode(t); code != 0 {
		t.Errorf("exit status after SIGTERM = %d, want 0", code)
	}
	if lines := drain(p.stderr.lines); len(lines) > 0 {
		t.Errorf("more stderr: %q", lines)
	}
}

// TestDeletedClusterIsAmbientNotFound follows gRFC A88's default: a
// watched CDS resource that the server deletes is reported as an ambient
// NOT_FOUND, to every watcher of it.
func TestDeletedClusterIsAmbientNotFound(t *testing.T) {
	t.Parallel()
	cp := startControlPlane(t,
		controlplane.Cluster("c1", ""), controlplane.Cluster("c2", ""))
	p := startRun(t, "--bootstrap", cp.bootstrapFile, "--output", "json", "cds:c1", "cds:c1", "cds:c2")
	p.listening(t)
	seen := map[string]int{}
	for _, e := range p.events(t, 3) {
		if e.Event != eventResource || e.Type != "cds" || e.Version != "1" {
			t.Fatalf("got %v, want a cds resource at version 1", e)
		}
		seen[e.Name]++
	}
	if seen["c1"] != 2 || seen["c2"] != 1 {
		t.Fatalf("resource events per name = %v, want c1 twice (two watchers) and c2 once", seen)
	}

	cp.set("2", controlplane.Cluster("c2", ""))
	for range 2 {
		e := p.event(t)
		if e.Event != eventAmbientError || e.Type != "cds" || e.Name != "c1" || e.Code != "NOT_FOUND" {
			t.Fatalf("after deleting c1: got %v, want ambient_error cds c1 NOT_FOUND", e)
		}
		if !strings.Contains(e.Message, `"c1"`) {
			t.Errorf("message %q does not name the resource", e.Message)
		}
	}
	p.interrupt(t)
	if lines := drain(p.stderr.lines); len(lines) > 0 {
		t.Errorf("stderr: %q", lines)
	}
}

// TestResourceTimeoutIsNotFound watches an endpoints resource the server
// lacks: the does-not-exist timer gives a resource_error NOT_FOUND.
func TestResourceTimeoutIsNotFound(t *testing.T) {
	t.Parallel()
	cp := startControlPlane(t, controlplane.Endpoints("e1", "127.0.0.1:1"))
	p := startRun(t, "--bootstrap", cp.bootstrapFile, "--output", "json", "--resource-timeout", "200ms", "eds:missing")
	p.listening(t)
	line := p.line(t)
	if keys, want := topKeys(t, line), []string{"ts", "event", "type", "name", "code", "message"}; !slices.Equal(keys, want) {
		t.Errorf("keys of %s = %q, want %q", line, keys, want)
	}
	if e := parseEvent(t, line); e.Event != eventResourceError || e.Type != "eds" || e.Name != "missing" || e.Code != "NOT_FOUND" {
		t.Fatalf("got %v, want resource_error eds missing NOT_FOUND", e)
	}
	p.interrupt(t)
}

// TestAmbientErrorClearedText: a deleted cluster that comes back unchanged
// ends the ambient error, printed as "ambient error cleared".
func TestAmbientErrorClearedText(t *testing.T) {
	t.Parallel()
	cp := startControlPlane(t, controlplane.Cluster("c1", ""), controlplane.Cluster("c2", ""))
	p := startRun(t, "--bootstrap", cp.bootstrapFile, "cds:c1")
	if l := p.line(t); !strings.Contains(l, " cds c1 v1: ") {
		t.Fatalf("first line %q, want c1 at version 1", l)
	}
	cp.set("2", controlplane.Cluster("c2", ""))
	if l := p.line(t); !strings.Contains(l, " cds c1 AMBIENT NOT_FOUND: ") {
		t.Fatalf("after the deletion: %q, want an AMBIENT NOT_FOUND line", l)
	}
	cp.set("3", controlplane.Cluster("c1", ""), controlplane.Cluster("c2", ""))
	re := regexp.MustCompile(`^\d\d:\d\d:\d\d\.\d{3} cds c1 ambient error cleared$`)
	if l := p.line(t); !re.MatchString(l) {
		t.Fatalf("after c1 came back unchanged: %q, want it to match %v", l, re)
	}
	p.interrupt(t)
}

// TestResourceErrorText checks the text line of a resource error.
func TestResourceErrorText(t *testing.T) {
	t.Parallel()
	cp := startControlPlane(t, controlplane.Endpoints("e1", "127.0.0.1:1"))
	p := startRun(t, "--bootstrap", cp.bootstrapFile, "--resource-timeout", "200ms", "eds:missing")
	re := regexp.MustCompile(`^\d\d:\d\d:\d\d\.\d{3} eds missing ERROR NOT_FOUND: .*"missing".*$`)
	if l := p.line(t); !re.MatchString(l) {
		t.Errorf("line %q does not match %v", l, re)
	}
	p.interrupt(t)
}

// TestBootstrapFromEnv reads the bootstrap from each environment variable
// and watches by full type URL.
func TestBootstrapFromEnv(t *testing.T) {
	t.Parallel()
	cp := startControlPlane(t, controlplane.Cluster("c1", ""))
	data, err := os.ReadFile(cp.bootstrapFile)
	if err != nil {
		t.Fatal(err)
	}
	for _, env := range []string{"GRPC_XDS_BOOTSTRAP=" + cp.bootstrapFile, "GRPC_XDS_BOOTSTRAP_CONFIG=" + string(data)} {
		name, _, _ := strings.Cut(env, "=")
		t.Run(name, func(t *testing.T) {
			p := startProc(t, cleanEnv(env), "--output", "json", "type.googleapis.com/envoy.config.cluster.v3.Cluster:c1")
			p.listening(t)
			if e := p.event(t); e.Event != eventResource || e.Type != "cds" || e.Name != "c1" {
				t.Fatalf("got %v, want resource cds c1", e)
			}
			p.interrupt(t)
		})
	}
}

// TestStdinCommands drives watches from standard input: + and - commands,
// blank and unknown lines, and end of input.
func TestStdinCommands(t *testing.T) {
	t.Parallel()
	cp := startControlPlane(t, controlplane.Cluster("c1", ""), controlplane.Cluster("c2", ""))
	p := startRun(t, "--bootstrap", cp.bootstrapFile, "--output", "json", "--stdin")
	p.listening(t)
	expect := func(typ, name, version string) {
		t.Helper()
		if e := p.event(t); e.Event != eventResource || e.Type != typ || e.Name != name || e.Version != version {
			t.Fatalf("got %v, want resource %s %s v%s", e, typ, name, version)
		}
	}
	expectErr := func(substr string) {
		t.Helper()
		if l := p.errLine(t); !strings.HasPrefix(l, "xdswatch: ") || !strings.Contains(l, substr) {
			t.Fatalf("stderr line %q, want one about %q", l, substr)
		}
	}

	// Two watchers of c1, the second given by type URL.
	p.send(t, "+cds:c1")
	expect("cds", "c1", "1")
	p.send(t, "  +type.googleapis.com/envoy.config.cluster.v3.Cluster:c1  ")
	expect("cds", "c1", "1")

	// Cancel one. Commands run in order, so the error line for the
	// unknown command that follows shows that the cancel is done.
	p.send(t, "-cds:c1")
	p.send(t, "")
	p.send(t, "   ")
	p.send(t, "bogus")
	expectErr(`"bogus"`)

	// One watcher of c1 is left: one line for the change, and the next
	// line is for the watch started after it.
	cp.set("2", controlplane.Cluster("c1", "c1-eds"), controlplane.Cluster("c2", ""))
	expect("cds", "c1", "2")
	p.send(t, "+cds:c2")
	expect("cds", "c2", "2")

	p.send(t, "+xds:c3")
	expectErr(`"xds"`)
	p.send(t, "-cds:c1")
	p.send(t, "-cds:c1")
	expectErr("no watcher")

	// End of input does not end the program.
	if err := p.stdin.Close(); err != nil {
		t.Fatal(err)
	}
	cp.set("3", controlplane.Cluster("c2", "c2-eds"))
	expect("cds", "c2", "3")
	p.interruptClean(t)
}

// TestUsageErrors checks that every bad command line or bootstrap ends with
// status 2 and exactly one line on stderr.
func TestUsageErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, content string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	malformed := write("malformed.json", `{"xds_servers": [`)
	noServers := write("empty.json", `{"xds_servers": []}`)
	good := write("good.json", `{"xds_servers": [{"server_uri": "127.0.0.1:1", "channel_creds": [{"type": "insecure"}]}]}`)
	// A port something else listens on.
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { busy.Close() })
	goodEnv := []string{"GRPC_XDS_BOOTSTRAP=" + good}
	tests := []struct {
		name string
		env  []string
		args []string
		want string // a substring of the one stderr line
	}{
		{"unknown flag", nil, []string{"--nope", "cds:c1"}, "-nope"},
		{"bad output", nil, []string{"--output", "yaml", "cds:c1"}, `"yaml"`},
		{"bad log level", nil, []string{"--log-level", "verbose", "cds:c1"}, `--log-level "verbose": want debug, info, warn or error`},
		{"log level in capitals", nil, []string{"--log-level", "WARN", "cds:c1"}, `--log-level "WARN"`},
		{"bad log format", nil, []string{"--log-format", "logfmt", "cds:c1"}, `--log-format "logfmt": want text or json`},
		{"version with a bad flag", nil, []string{"--version", "--log-level", "loud"}, `--log-level "loud"`},
		{"bad duration", nil, []string{"--resource-timeout", "soon", "cds:c1"}, "soon"},
		{"negative duration", nil, []string{"--resource-timeout", "-1s", "cds:c1"}, "-1s"},
		{"keepalive under gRPC's minimum", nil, []string{"--keepalive-time", "1s", "cds:c1"}, "--keepalive-time 1s: must be at least 10s"},
		{"zero keepalive timeout", nil, []string{"--keepalive-timeout", "0s", "cds:c1"}, "--keepalive-timeout 0s"},
		{"bad type", nil, []string{"xds:c1"}, `"xds"`},
		{"unsupported type URL", nil, []string{"type.googleapis.com/envoy.config.core.v3.Node:n"}, `"type.googleapis.com/envoy.config.core.v3.Node"`},
		{"no colon", nil, []string{"cds"}, `"cds"`},
		{"empty name", nil, []string{"cds:"}, `"cds:"`},
		{"missing bootstrap file", nil, []string{"--bootstrap", filepath.Join(dir, "absent.json"), "cds:c1"}, "absent.json"},
		{"malformed bootstrap", nil, []string{"--bootstrap", malformed, "cds:c1"}, "malformed.json"},
		{"bootstrap without servers", nil, []string{"--bootstrap", noServers, "cds:c1"}, "xds_servers"},
		{"malformed bootstrap in env", []string{"GRPC_XDS_BOOTSTRAP_CONFIG={"}, []string{"cds:c1"}, "GRPC_XDS_BOOTSTRAP_CONFIG"},
		{"missing bootstrap file in env", []string{"GRPC_XDS_BOOTSTRAP=" + filepath.Join(dir, "gone.json")}, []string{"cds:c1"}, "gone.json"},
		{"nothing to watch", goodEnv, nil, "TYPE:NAME"},
		{"endless bootstrap file", nil, []string{"--bootstrap", "/dev/zero", "cds:c1"}, "larger than 4 MiB"},
		{"csds address in use", goodEnv, []string{"--csds-addr", busy.Addr().String(), "cds:c1"}, "--csds-addr " + busy.Addr().String()},
		{"metrics address in use", goodEnv, []string{"--metrics-addr", busy.Addr().String(), "cds:c1"}, "--metrics-addr " + busy.Addr().String()},
		{"csds address not an address", goodEnv, []string{"--csds-addr", "no-port", "cds:c1"}, "no-port"},
		{"tour with a bootstrap", nil, []string{"--bootstrap", good, "--demo-tour"}, "--demo-tour"},
		{"tour with a bootstrap in env", goodEnv, []string{"--demo-tour"}, "GRPC_XDS_BOOTSTRAP"},
		{"tour with TYPE:NAME", nil, []string{"--demo-tour", "cds:c1"}, `"cds:c1"`},
		{"tour step without the tour", nil, []string{"--demo-tour-step", "1s"}, "--demo-tour-step without --demo-tour"},
		{"zero tour step", nil, []string{"--demo-tour", "--demo-tour-step", "0s"}, "--demo-tour-step 0s"},
		{"tour with xds:///", nil, []string{"--demo-tour", "xds:///demo"}, `"xds:///demo"`},
		{"empty listener", nil, []string{"xds:///"}, `"xds:///": empty listener name`},
		{"target with a query", nil, []string{"xds:///L?a=b"}, `"xds:///L?a=b"`},
		{"authority not in the bootstrap", goodEnv, []string{"xds://nope/L"}, `authority "nope"`},
		{"header without =", nil, []string{"--rpc-interval", "1s", "--rpc-header", "x-a", "xds:///L"}, `"x-a": want KEY=VALUE`},
		{"bad header name", nil, []string{"--rpc-interval", "1s", "--rpc-header", "x a=1", "xds:///L"}, `header name "x a"`},
		{"empty header name", nil, []string{"--rpc-interval", "1s", "--rpc-header", "=1", "xds:///L"}, "empty header name"},
		{"header gRPC sets", nil, []string{"--rpc-interval", "1s", "--rpc-header", "grpc-timeout=1S", "xds:///L"}, `header "grpc-timeout" is set by gRPC`},
		{"header value not printable", nil, []string{"--rpc-interval", "1s", "--rpc-header", "x-a=\x01", "xds:///L"}, "not printable ASCII"},
		{"negative rpc interval", nil, []string{"--rpc-interval", "-1s", "xds:///L"}, "--rpc-interval -1s"},
		{"zero rpc interval", nil, []string{"--rpc-interval", "0s", "xds:///L"}, "--rpc-interval 0s"},
		{"negative rpc timeout", nil, []string{"--rpc-interval", "1s", "--rpc-timeout", "-1s", "xds:///L"}, "--rpc-timeout -1s"},
		{"bad rpc timeout", nil, []string{"--rpc-interval", "1s", "--rpc-timeout", "soon", "xds:///L"}, "soon"},
		{"bad rpc method", nil, []string{"--rpc-interval", "1s", "--rpc-method", "Check", "xds:///L"}, `--rpc-method "Check"`},
		{"rpc timeout without interval", nil, []string{"--rpc-timeout", "1s", "xds:///L"}, "--rpc-timeout without --rpc-interval"},
		{"rpc header without interval", nil, []string{"--rpc-header", "a=b", "xds:///L"}, "--rpc-header without --rpc-interval"},
		{"rpc interval without a channel", nil, []string{"--rpc-interval", "1s", "cds:c1"}, "no xds:///LISTENER"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			// A case with an environment of its own runs as a process.
			p := startRun(t, tt.args...)
			if tt.env != nil {
				p = startProc(t, cleanEnv(tt.env...), tt.args...)
			}
			if code := p.exitCode(t); code != 2 {
				t.Errorf("exit status = %d, want 2", code)
			}
			lines := drain(p.stderr.lines)
			if len(lines) != 1 || p.stderr.rest() != "" {
				t.Fatalf("stderr = %q (+%q), want exactly one line", lines, p.stderr.rest())
			}
			if l := lines[0]; !strings.HasPrefix(l, "xdswatch: ") || !strings.Contains(l, tt.want) || strings.Contains(l, "panic") {
				t.Errorf("stderr line %q, want xdswatch: ... naming %q", l, tt.want)
			}
			if out := drain(p.stdout.lines); len(out) > 0 {
				t.Errorf("stdout = %q, want nothing", out)
			}
		})
	}
}

// TestHelp checks that -h prints the usage and exits 0.
func TestHelp(t *testing.T) {
	t.Parallel()
	p := startRun(t, "-h")
	if code := p.exitCode(t); code != 0 {
		t.Errorf("exit status of -h = %d, want 0", code)
	}
	if out := drain(p.stdout.lines); len(out) == 0 || !strings.HasPrefix(out[0], "usage: xdswatch") {
		t.Errorf("-h printed %q", out)
	}
}

// TestBootstrapPipeSignal gives a FIFO that is opened for writing but never
// written as --bootstrap: xdswatch waits for the bootstrap, and SIGTERM
// still ends it at once with status 0 and no output.
func TestBootstrapPipeSignal(t *testing.T) {
	t.Parallel()
	fifo := filepath.Join(t.TempDir(), "bootstrap.fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	p := startProc(t, cleanEnv(), "--bootstrap", fifo, "--output", "json", "cds:c1")
	// A non-blocking open for writing succeeds once a reader has the FIFO
	// open: then xdswatch is reading it.
	var w int
	deadline := time.Now().Add(testTimeout)
	for {
		fd, err := syscall.Open(fifo, syscall.O_WRONLY|syscall.O_NONBLOCK, 0)
		if err == nil {
			w = fd
			break
		}
		if err != syscall.ENXIO || time.Now().After(deadline) {
			t.Fatalf("open %s for writing: %v", fifo, err)
		}
		select {
		case <-p.done:
			t.Fatalf("xdswatch exited before reading the FIFO: %v", p.err)
		case <-time.After(time.Millisecond):
		}
	}
	defer syscall.Close(w)
	p.signal(t, syscall.SIGTERM)
	if code := p.exitCode(t); code != 0 {
		t.Fatalf("exit status after SIGTERM = %d, want 0", code)
	}
	if out := drain(p.stdout.lines); len(out) > 0 {
		t.Errorf("stdout = %q, want nothing", out)
	}
	if lines := drain(p.stderr.lines); len(lines) > 0 {
		t.Errorf("stderr = %q, want nothing", lines)
	}
}

// TestStdinLongLine sends a command line over 64 KiB: it is reported once
// and skipped, and the commands after it still run.
func TestStdinLongLine(t *testing.T) {
	t.Parallel()
	cp := startControlPlane(t, controlplane.Cluster("c1", ""))
	p := startRun(t, "--bootstrap", cp.bootstrapFile, "--output", "json", "--stdin")
	p.listening(t)
	p.send(t, "+cds:"+strings.Repeat("x", 100<<10))
	if l := p.errLine(t); l != "xdswatch: stdin: line 1 is longer than 64 KiB; skipped" {
		t.Fatalf("stderr line %q", l)
	}
	p.send(t, "+cds:c1")
	if e := p.event(t); e.Event != eventResource || e.Type != "cds" || e.Name != "c1" {
		t.Fatalf("got %v, want resource cds c1", e)
	}
	p.interruptClean(t)
}

// TestJSONRedactsSecrets serves a listener whose optional HTTP filter (one
// gRPC ignores) carries a private key: the listener is accepted, and the
// JSON line shows it with the key redacted.
func TestJSONRedactsSecrets(t *testing.T) {
	t.Parallel()
	const key = "-----BEGIN PRIVATE KEY-----do-not-print"
	secret, err := anypb.New(&tlsv3.DownstreamTlsContext{CommonTlsContext: &tlsv3.CommonTlsContext{TlsCertificates: []*tlsv3.TlsCertificate{{
		PrivateKey: &corev3.DataSource{Specifier: &corev3.DataSource_InlineString{InlineString: key}},
	}}}})
	if err != nil {
		t.Fatal(err)
	}
	l := controlplane.Listener("l1", "r1")
	hcm := &hcmv3.HttpConnectionManager{}
	if err := l.GetApiListener().GetApiListener().UnmarshalTo(hcm); err != nil {
		t.Fatal(err)
	}
	hcm.HttpFilters = append([]*hcmv3.HttpFilter{{Name: "ignored", IsOptional: true, ConfigType: &hcmv3.HttpFilter_TypedConfig{TypedConfig: secret}}}, hcm.HttpFilters...)
	if l.ApiListener.ApiListener, err = anypb.New(hcm); err != nil {
		t.Fatal(err)
	}
	cp := startControlPlane(t, l)
	p := startRun(t, "--bootstrap", cp.bootstrapFile, "--output", "json", "lds:l1")
	p.listening(t)
	line := p.line(t)
	if e := parseEvent(t, line); e.Event != eventResource || e.Name != "l1" {
		t.Fatalf("got %s, want resource lds l1", line)
	}
	if strings.Contains(line, "do-not-print") || !strings.Contains(line, "[redacted]") || !strings.Contains(line, `"r1"`) {
		t.Fatalf("line %s: want the key redacted and the rest kept", line)
	}
	p.interrupt(t)
}
