package xdswatch

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/xdslens/xdslens/internal/testing/testmain"
	"github.com/xdslens/xdslens/internal/testing/xdstest"
	"github.com/xdslens/xdslens/internal/xdswatch/demo/controlplane"
)

// testTimeout bounds every wait for output or exit.
const testTimeout = 30 * time.Second

// runMainEnv names the environment variable that makes the test binary
// be xdswatch: when it is "1", TestMain runs Main, with os.Args as the
// command line, instead of the tests. startProc runs the test binary
// itself that way (with Args[0] "xdswatch"), so the processes under test
// run Main, the whole command, built as the tests are (with the race detector
// when they have it), and the tests need no second build of the package.
const runMainEnv = "XDSWATCH_TEST_RUN_MAIN"

// TestMain runs xdswatch when runMainEnv says so, else the tests, several
// at once: they mostly wait on xdswatch processes and sockets, not on the
// CPU.
func TestMain(m *testing.M) {
	if os.Getenv(runMainEnv) == "1" {
		Main() // exits
	}
	xdstest.SetParallel(8)
	// The tests that run xdswatch in this process see the environment
	// cleanEnv gives a process (no bootstrap, so that the demo starts, and
	// the client's defaults); cleared once here, as a parallel test cannot
	// use t.Setenv.
	for _, kv := range os.Environ() {
		if name, _, _ := strings.Cut(kv, "="); cleared(name) {
			os.Unsetenv(name)
		}
	}
	testmain.Run(m)
}

// cleanEnv is the environment without the variables that choose a
// bootstrap or change the client's behaviour, so tests see the defaults,
// plus extra. A process with the race detector (the test binary under
// go test -race) exits at once instead of after its default one-second
// pause, and with status 66 on a race.
func cleanEnv(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if name, _, _ := strings.Cut(kv, "="); !cleared(name) && name != "GORACE" && name != runMainEnv {
			env = append(env, kv)
		}
	}
	env = append(env, "GORACE=atexit_sleep_ms=0 exitcode=66")
	return append(env, extra...)
}

// cleared reports whether the environment variable name is one that
// chooses a bootstrap or changes the client's behaviour.
func cleared(name string) bool {
	return strings.HasPrefix(name, "GRPC_XDS_") || strings.HasPrefix(name, "GRPC_EXPERIMENTAL_")
}

// lineWriter turns what a process writes into lines on a channel.
type lineWriter struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	lines chan string
}

// newLineWriter returns an empty lineWriter.
func newLineWriter() *lineWriter { return &lineWriter{lines: make(chan string, 10000)} }

// Write buffers p and sends every complete line, without its newline.
func (w *lineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	for {
		i := bytes.IndexByte(w.buf.Bytes(), '\n')
		if i < 0 {
			return len(p), nil
		}
		w.lines <- string(w.buf.Next(i + 1)[:i])
	}
}

// rest returns a trailing unterminated line, if any.
func (w *lineWriter) rest() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// proc is a running xdswatch: a process (startProc), or Run in this
// process (startRun).
type proc struct {
	cmd    *exec.Cmd // nil for Run in this process
	stdin  io.WriteCloser
	stdout *lineWriter
	stderr *lineWriter
	done   chan struct{} // closed when the process has exited
	err    error         // from Wait, set before done is closed

	// Run in this process: cancel is what SIGINT and SIGTERM are to Main,
	// code Run's result, set before done is closed.
	cancel context.CancelFunc
	code   int
}

// startRun runs xdswatch in this process, as Run with pipes for its
// standard streams, and stops it at the end of the test if it is still
// running. It is startProc without the cost of starting a process (most
// of it the package initialisation of a binary built with the race
// detector), for the tests that need no environment of their own and no
// signal but SIGINT or SIGTERM, which cancel Run's context as Main does.
// The examples/xdswatch test checks that the command is Main.
func startRun(t *testing.T, args ...string) *proc {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	stdin, stdinW := io.Pipe()
	p := &proc{stdin: stdinW, stdout: newLineWriter(), stderr: newLineWriter(), done: make(chan struct{}), cancel: cancel}
	go func() {
		p.code = Run(ctx, args, stdin, p.stdout, p.stderr)
		// What a process's exit does: a read of standard input still
		// under way ends, and a write to it fails.
		stdin.CloseWithError(io.ErrClosedPipe)
		close(p.done)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-p.done:
		case <-time.After(testTimeout):
			t.Errorf("xdswatch (Run) did not return within %v of its cancellation", testTimeout)
		}
	})
	return p
}

// startProc runs xdswatch (this test binary, as runMainEnv says) with env
// and args. The process is killed at the end of the test if it is still
// running.
func startProc(t *testing.T, env []string, args ...string) *proc {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	p := &proc{stdout: newLineWriter(), stderr: newLineWriter(), done: make(chan struct{})}
	p.cmd = exec.Command(self, args...)
	p.cmd.Args[0] = "xdswatch"
	p.cmd.Env = append(slices.Clip(env), runMainEnv+"=1")
	p.cmd.Stdout = p.stdout
	p.cmd.Stderr = p.stderr
	stdin, err := p.cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	p.stdin = stdin
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start xdswatch: %v", err)
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			p.cmd.Process.Kill()
			<-p.done
		}
	})
	return p
}

// nextLine returns the next line from ch, failing the test after
// testTimeout.
func nextLine(t *testing.T, ch <-chan string, what string) string {
	t.Helper()
	timer := time.NewTimer(testTimeout)
	defer timer.Stop()
	select {
	case l := <-ch:
		return l
	case <-timer.C:
		t.Fatalf("no %s line within %v", what, testTimeout)
		return ""
	}
}

// line returns the next line of standard output.
func (p *proc) line(t *testing.T) string {
	t.Helper()
	return nextLine(t, p.stdout.lines, "stdout")
}

// errLine returns the next line of standard error.
func (p *proc) errLine(t *testing.T) string {
	t.Helper()
	return nextLine(t, p.stderr.lines, "stderr")
}

// send writes one line to the process's standard input.
func (p *proc) send(t *testing.T, line string) {
	t.Helper()
	if _, err := io.WriteString(p.stdin, line+"\n"); err != nil {
		t.Fatalf("write %q to stdin: %v", line, err)
	}
}

// event is one JSON line of output, with the fields the tests read.
type event struct {
	TS       string          `json:"ts"`
	Event    string          `json:"event"`
	Type     string          `json:"type"`
	Name     string          `json:"name"`
	Version  string          `json:"version"`
	Resource json.RawMessage `json:"resource"`
	Code     string          `json:"code"`
	Message  string          `json:"message"`
	CSDS     *string         `json:"csds"`
	Metrics  *string         `json:"metrics"`
}

// String describes e in one line for test messages.
func (e event) String() string {
	if e.Code != "" {
		return fmt.Sprintf("%s %s %s %s: %s", e.Event, e.Type, e.Name, e.Code, e.Message)
	}
	return fmt.Sprintf("%s %s %s v%s", e.Event, e.Type, e.Name, e.Version)
}

// parseEvent decodes one JSON output line, checking that ts is RFC 3339.
func parseEvent(t *testing.T, line string) event {
	t.Helper()
	var e event
	dec := json.NewDecoder(strings.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&e); err != nil {
		t.Fatalf("output line %q: %v", line, err)
	}
	if e.Event != eventListening {
		if _, err := time.Parse(time.RFC3339Nano, e.TS); err != nil {
			t.Errorf("line %q: ts: %v", line, err)
		}
	}
	return e
}

// event returns the next standard output line as an event.
func (p *proc) event(t *testing.T) event {
	t.Helper()
	return parseEvent(t, p.line(t))
}

// events returns the next n events.
func (p *proc) events(t *testing.T, n int) []event {
	t.Helper()
	out := make([]event, n)
	for i := range out {
		out[i] = p.event(t)
	}
	return out
}

// listening reads the first JSON line and checks that it reports no CSDS
// and no metrics server.
func (p *proc) listening(t *testing.T) {
	t.Helper()
	const want = `{"event":"listening","csds":"","metrics":""}`
	if got := p.line(t); got != want {
		t.Fatalf("first line = %s, want %s", got, want)
	}
}

// signal sends sig and waits for the process to end.
func (p *proc) signal(t *testing.T, sig os.Signal) {
	t.Helper()
	if p.cmd == nil {
		if sig != os.Interrupt && sig != syscall.SIGTERM {
			t.Fatalf("signal %v: xdswatch runs in this process, where only SIGINT and SIGTERM (a cancelled context) can be given", sig)
		}
		p.cancel()
		return
	}
	if err := p.cmd.Process.Signal(sig); err != nil {
		t.Fatalf("signal %v: %v", sig, err)
	}
}

// exitCode waits for the process to end and returns its exit status.
func (p *proc) exitCode(t *testing.T) int {
	t.Helper()
	timer := time.NewTimer(testTimeout)
	defer timer.Stop()
	select {
	case <-p.done:
	case <-timer.C:
		t.Fatalf("xdswatch did not exit within %v", testTimeout)
	}
	if p.cmd == nil {
		return p.code
	}
	if ws, ok := p.cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		t.Fatalf("xdswatch died of signal %v", ws.Signal())
	}
	return p.cmd.ProcessState.ExitCode()
}

// interrupt sends SIGINT and checks that the process exits with status 0.
func (p *proc) interrupt(t *testing.T) {
	t.Helper()
	p.signal(t, os.Interrupt)
	if code := p.exitCode(t); code != 0 {
		t.Fatalf("exit status after SIGINT = %d, want 0", code)
	}
}

// interruptClean is interrupt, checking that nothing more was printed.
func (p *proc) interruptClean(t *testing.T) {
	t.Helper()
	p.interrupt(t)
	if lines := drain(p.stdout.lines); len(lines) > 0 {
		t.Errorf("more stdout: %q", lines)
	}
	if lines := drain(p.stderr.lines); len(lines) > 0 {
		t.Errorf("more stderr: %q", lines)
	}
}

// drain returns the lines left on ch once the process has exited.
func drain(ch <-chan string) []string {
	var out []string
	for {
		select {
		case l := <-ch:
			out = append(out, l)
		default:
			return out
		}
	}
}

// testNodeID is the node ID in the bootstraps the tests write.
const testNodeID = "xdswatch-test"

// controlPlane is a go-control-plane server started by a test.
type controlPlane struct {
	t   *testing.T
	srv *controlplane.Server
	// bootstrapFile is a bootstrap file naming the server.
	bootstrapFile string
}

// startControlPlane starts a server on a loopback port that serves
// resources at version "1" to testNodeID.
func startControlPlane(t *testing.T, resources ...proto.Message) *controlPlane {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	srv, err := controlplane.Start(ctx, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	cp := &controlPlane{t: t, srv: srv, bootstrapFile: filepath.Join(t.TempDir(), "bootstrap.json")}
	cp.set("1", resources...)
	bs := fmt.Sprintf(`{"xds_servers": [{"server_uri": %q, "channel_creds": [{"type": "insecure"}]}], "node": {"id": %q}}`, srv.Addr(), testNodeID)
	if err := os.WriteFile(cp.bootstrapFile, []byte(bs), 0o600); err != nil {
		t.Fatal(err)
	}
	return cp
}

// set replaces the configuration of testNodeID.
func (cp *controlPlane) set(version string, resources ...proto.Message) {
	cp.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	if err := cp.srv.SetResources(ctx, testNodeID, version, resources...); err != nil {
		cp.t.Fatal(err)
	}
}
