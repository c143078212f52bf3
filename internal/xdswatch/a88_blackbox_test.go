package xdswatch

// gRFC A88's "Summary of Behavior Changes" table, row by row, as the
// xdswatch command line shows it: each row runs the binary with
// --output json against a scripted ADS server, provokes the row's error and
// reads the JSON lines that the watchers of cds:c1 print.

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/xdslens/xdslens/internal/testing/xdstest"
	"github.com/xdslens/xdslens/internal/xdswatch/demo/controlplane"
)

// Server features and the environment variable the rows use, spelled as a
// user writes them in a bootstrap or a shell.
const (
	a88FailOnDataErrors       = "fail_on_data_errors"
	a88TimerIsTransient       = "resource_timer_is_transient_error"
	a88IgnoreResourceDeletion = "ignore_resource_deletion"
	a88LegacyEnv              = "GRPC_EXPERIMENTAL_XDS_DATA_ERROR_HANDLING=false"
)

// a88ClusterURL is the type URL of the resources the rows watch.
const a88ClusterURL = "type.googleapis.com/envoy.config.cluster.v3.Cluster"

const (
	// a88Timer is the --resource-timeout of the rows that need the timer.
	a88Timer = 200 * time.Millisecond
	// a88NoTimer is the --resource-timeout of the other rows: a timer that
	// cannot fire during the test.
	a88NoTimer = "1h"
	// a88TP3Message is the message of the TP3 errors the server sends.
	a88TP3Message = "scripted TP3 error"
	// a88StreamCause is the status message of the ADS streams that fail.
	a88StreamCause = "scripted stream failure"
)

// a88After is what a watcher started after the row's error sees: the
// second half of the table's "New Behavior" column.
type a88After int

const (
	// a88AfterFail: nothing was cached; a new watcher gets the same error.
	a88AfterFail a88After = iota
	// a88AfterDrop: the cached resource is dropped; a new watcher gets the
	// error and never the old resource.
	a88AfterDrop
	// a88AfterIgnore: the cached resource is kept; a new watcher gets it and
	// then the ambient error, in that order.
	a88AfterIgnore
)

// a88Row is one row of the table, or one row of the legacy behaviour.
type a88Row struct {
	// name is the table's "Error" column.
	name string
	// cached is the "Resource Already Cached" column: version 1 of c1 is
	// delivered before the error.
	cached bool
	// failOnDataErrors is the "fail_on_data_errors Server Feature" column:
	// "false", "true" or "any" (the row runs once with and once without).
	failOnDataErrors string
	// features are server features every variant of the row has.
	features []string
	// env is added to the environment of xdswatch.
	env []string
	// timer is --resource-timeout; zero means a88NoTimer.
	timer time.Duration
	// serverDown stops the server before xdswatch starts.
	serverDown bool
	// codes are the status codes the row is run with: the code the watcher
	// must see, and for TP3 rows the code the server sends.
	codes []string
	// provoke makes the row's error happen, once xdswatch runs (and has
	// version 1 of c1 when cached is set).
	provoke func(r *a88Run, code codes.Code)
	// event is what the watcher of c1 prints next: eventResourceError or
	// eventAmbientError; "" when provoke itself checks the output.
	event string
	// cause and notCause must and must not be in the error's message.
	cause, notCause string
	// minDelay is the least time between the start of xdswatch and the
	// error (the resource timer).
	minDelay time.Duration
	// after is what a new watcher of c1 sees after the error.
	after a88After
	// repeats is set for transient errors that the client reports again
	// on each failed attempt to reach the server.
	repeats bool
	// live is set when the ADS stream is still up after the error: a new
	// version of c1 then reaches every watcher, and nothing else comes
	// before it.
	live bool
}

// a88Variant is one subtest of a row: a value for "any" and one code.
type a88Variant struct {
	name     string
	features []string
	code     string
}

// variants expands the row into its subtests.
func (row a88Row) variants() []a88Variant {
	cached := "cached=false"
	if row.cached {
		cached = "cached=true"
	}
	var fails []string
	switch row.failOnDataErrors {
	case "any":
		fails = []string{"false (any)", "true (any)"}
	default:
		fails = []string{row.failOnDataErrors}
	}
	var out []a88Variant
	for _, fail := range fails {
		features := slices.Clone(row.features)
		if strings.HasPrefix(fail, "true") {
			features = append(features, a88FailOnDataErrors)
		}
		for _, code := range row.codes {
			name := row.name + "/" + cached + "/fail_on_data_errors=" + fail
			if len(row.codes) > 1 {
				name += "/" + code
			}
			out = append(out, a88Variant{name: name, features: features, code: code})
		}
	}
	return out
}

// a88Run is one run of xdswatch against a scripted ADS server.
type a88Run struct {
	t   *testing.T
	ctx context.Context
	srv *xdstest.ADSServer
	// bootstrapFile names srv with the row's server features.
	bootstrapFile string
	p             *proc
	// st is the ADS stream the server answers on, nil before the first.
	st *xdstest.Stream
	// started is when xdswatch was started.
	started time.Time
	// watchers is how many watchers of cds:c1 xdswatch runs.
	watchers int
}

// newA88Run starts a scripted ADS server and writes a bootstrap naming it
// with features.
func newA88Run(t *testing.T, features []string) *a88Run {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	t.Cleanup(cancel)
	r := &a88Run{t: t, ctx: ctx, srv: xdstest.NewADSServer(t), bootstrapFile: filepath.Join(t.TempDir(), "bootstrap.json")}
	server := map[string]any{
		"server_uri":    r.srv.Addr(),
		"channel_creds": []any{map[string]any{"type": "insecure"}},
	}
	if len(features) > 0 {
		server["server_features"] = features
	}
	data, err := json.Marshal(map[string]any{
		"xds_servers": []any{server},
		"node":        map[string]any{"id": testNodeID},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(r.bootstrapFile, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return r
}

// start runs xdswatch watching cds:c1 once, with --stdin for more
// watchers, and reads its listening line.
func (r *a88Run) start(env []string, timer time.Duration) {
	r.t.Helper()
	timeout := a88NoTimer
	if timer > 0 {
		timeout = timer.String()
	}
	r.started = time.Now()
	// A row with an environment of its own runs xdswatch as a process;
	// the others run it in this process.
	args := []string{"--bootstrap", r.bootstrapFile, "--output", "json", "--stdin", "--resource-timeout", timeout, "cds:c1"}
	if len(env) > 0 {
		r.p = startProc(r.t, cleanEnv(env...), args...)
	} else {
		r.p = startRun(r.t, args...)
	}
	r.watchers = 1
	r.p.listening(r.t)
}

// nextStream takes the next ADS stream xdswatch opens and waits for its
// first CDS request.
func (r *a88Run) nextStream() *xdstest.Stream {
	r.t.Helper()
	st, err := r.srv.NextStream(r.ctx)
	if err != nil {
		r.t.Fatalf("waiting for an ADS stream: %v", err)
	}
	r.recv(st, "c1")
	r.st = st
	return st
}

// stream returns the current ADS stream, taking the first one if needed.
func (r *a88Run) stream() *xdstest.Stream {
	r.t.Helper()
	if r.st == nil {
		return r.nextStream()
	}
	return r.st
}

// recv waits for a CDS request on st that subscribes to name.
func (r *a88Run) recv(st *xdstest.Stream, name string) {
	r.t.Helper()
	for {
		req, err := st.RecvType(r.ctx, a88ClusterURL)
		if err != nil {
			r.t.Fatalf("waiting for a CDS request for %q: %v", name, err)
		}
		if slices.Contains(req.GetResourceNames(), name) {
			return
		}
	}
}

// send sends a full-state CDS response at version holding resources.
func (r *a88Run) send(version string, resources ...proto.Message) {
	r.t.Helper()
	r.sendResponse(xdstest.Response(a88ClusterURL, version, resources...))
}

// sendResponse sends resp on the current stream.
func (r *a88Run) sendResponse(resp *discoveryv3.DiscoveryResponse) {
	r.t.Helper()
	if err := r.stream().Send(resp); err != nil {
		r.t.Fatal(err)
	}
}

// sendTP3 sends a CDS response at version that carries no resource and an
// xRFC TP3 error of code for c1.
func (r *a88Run) sendTP3(version string, code codes.Code) {
	r.t.Helper()
	resp := xdstest.Response(a88ClusterURL, version)
	resp.ResourceErrors = []*discoveryv3.ResourceError{xdstest.ResourceError("c1", code, a88TP3Message)}
	r.sendResponse(resp)
}

// cache delivers version 1 of c1 to the watcher.
func (r *a88Run) cache() {
	r.t.Helper()
	r.send("1", a88Cluster("c1", "1"))
	r.expect("c1", eventResource, "", "1")
}

// next returns the next JSON line as an event.
func (r *a88Run) next() event {
	r.t.Helper()
	return r.p.event(r.t)
}

// expect reads the next line and checks that it is kind for cds name: with
// code for an error, at version for a resource ("" for any version). An
// error's message must name the resource, the server and the node.
func (r *a88Run) expect(name, kind, code, version string) event {
	r.t.Helper()
	e := r.next()
	r.check(e, name, kind, code, version)
	return e
}

// check is expect for an event already read.
func (r *a88Run) check(e event, name, kind, code, version string) {
	r.t.Helper()
	want := fmt.Sprintf("%s cds %s", kind, name)
	switch {
	case kind == eventResource && version != "":
		want += " v" + version
	case kind != eventResource:
		want += " " + code
	}
	if e.Type != "cds" || e.Name != name || e.Event != kind ||
		(kind == eventResource && version != "" && e.Version != version) ||
		(kind != eventResource && e.Code != code) {
		r.t.Fatalf("got %v, want %s", e, want)
	}
	if kind == eventResource {
		return
	}
	for _, s := range []string{`"` + name + `"`, `"` + r.srv.Addr() + `"`, `"` + testNodeID + `"`} {
		if !strings.Contains(e.Message, s) {
			r.t.Errorf("%v: the message does not name %s", e, s)
		}
	}
}

// a88Cluster is a valid EDS cluster; version is written into its EDS
// service name so that every version has different bytes.
func a88Cluster(name, version string) *clusterv3.Cluster {
	return controlplane.Cluster(name, name+"-v"+version)
}

// a88InvalidCluster is a cluster that gRPC rejects: STATIC clusters are not
// supported.
func a88InvalidCluster(name string) *clusterv3.Cluster {
	return &clusterv3.Cluster{Name: name, ClusterDiscoveryType: &clusterv3.Cluster_Type{Type: clusterv3.Cluster_STATIC}}
}

// a88Code is the status code spelled as xdswatch prints it.
func a88Code(t *testing.T, name string) codes.Code {
	t.Helper()
	var c codes.Code
	if err := json.Unmarshal([]byte(`"`+name+`"`), &c); err != nil {
		t.Fatalf("code %q: %v", name, err)
	}
	return c
}

// Ways the rows provoke their error.
var (
	// a88StopServer takes the server away: the channel reports
	// TRANSIENT_FAILURE.
	a88StopServer = func(r *a88Run, _ codes.Code) { r.srv.Stop() }
	// a88EndStreamWithoutResponse ends an ADS stream on which no response was
	// sent. When c1 is cached, the stream that delivered it ends first,
	// which is no error (gRFC A57), and its successor fails.
	a88EndStreamWithoutResponse = func(r *a88Run, _ codes.Code) {
		st := r.stream()
		if st.LastNonce() != "" {
			st.End(status.Error(codes.Unavailable, "the stream ends after a response"))
			st = r.nextStream()
		}
		st.End(status.Error(codes.Internal, a88StreamCause))
		r.st = nil
	}
	// a88SendInvalid sends a version of c1 that the client NACKs.
	a88SendInvalid = func(r *a88Run, _ codes.Code) { r.send("2", a88InvalidCluster("c1")) }
	// a88StaySilent subscribes and lets the resource timer run.
	a88StaySilent = func(r *a88Run, _ codes.Code) { r.stream() }
	// a88DeleteC1 sends a full-state CDS response without c1.
	a88DeleteC1 = func(r *a88Run, _ codes.Code) { r.send("2") }
	// a88SendTP3Error sends an xRFC TP3 error for c1 with the row's code.
	a88SendTP3Error = func(r *a88Run, code codes.Code) { r.sendTP3("2", code) }
)

// TestA88BlackBox runs every row of gRFC A88's "Summary of Behavior
// Changes" table against the xdswatch binary and checks the JSON lines
// against the "New Behavior" column.
func TestA88BlackBox(t *testing.T) {
	t.Parallel()
	const (
		channelTF      = "xDS channel reports TRANSIENT_FAILURE"
		streamFailed   = "ADS stream failed without reading a response"
		nack           = "NACK from client"
		timeout        = "Resource timeout"
		deletion       = "LDS or CDS resource deletion from server"
		tp3DataError   = "xRFC TP3 error with status NOT_FOUND or PERMISSION_DENIED"
		tp3OtherStatus = "xRFC TP3 error with other status"
	)
	dataCodes := []string{"NOT_FOUND", "PERMISSION_DENIED"}
	otherCodes := []string{"UNAVAILABLE", "INTERNAL", "UNAUTHENTICATED"}
	rows := []a88Row{
		{name: channelTF, cached: false, failOnDataErrors: "any", codes: []string{"UNAVAILABLE"},
			serverDown: true, provoke: func(*a88Run, codes.Code) {},
			event: eventResourceError, after: a88AfterFail, repeats: true},
		{name: channelTF, cached: true, failOnDataErrors: "any", codes: []string{"UNAVAILABLE"},
			provoke: a88StopServer,
			event:   eventAmbientError, after: a88AfterIgnore, repeats: true},
		{name: streamFailed, cached: false, failOnDataErrors: "any", codes: []string{"UNAVAILABLE"},
			provoke: a88EndStreamWithoutResponse,
			event:   eventResourceError, cause: a88StreamCause, after: a88AfterFail},
		{name: streamFailed, cached: true, failOnDataErrors: "any", codes: []string{"UNAVAILABLE"},
			provoke: a88EndStreamWithoutResponse,
			event:   eventAmbientError, cause: a88StreamCause, after: a88AfterIgnore},
		{name: nack, cached: false, failOnDataErrors: "any", codes: []string{"INVALID_ARGUMENT"},
			provoke: a88SendInvalid,
			event:   eventResourceError, after: a88AfterFail, live: true},
		{name: nack, cached: true, failOnDataErrors: "false", codes: []string{"INVALID_ARGUMENT"},
			provoke: a88SendInvalid,
			event:   eventAmbientError, after: a88AfterIgnore, live: true},
		{name: nack, cached: true, failOnDataErrors: "true", codes: []string{"INVALID_ARGUMENT"},
			provoke: a88SendInvalid,
			event:   eventResourceError, after: a88AfterDrop, live: true},
		{name: timeout, cached: false, failOnDataErrors: "any", codes: []string{"NOT_FOUND"},
			timer: a88Timer, provoke: a88StaySilent,
			event: eventResourceError, minDelay: a88Timer, after: a88AfterFail, live: true},
		{name: timeout + " with " + a88TimerIsTransient, cached: false, failOnDataErrors: "any", codes: []string{"UNAVAILABLE"},
			features: []string{a88TimerIsTransient}, timer: a88Timer, provoke: a88StaySilent,
			event: eventResourceError, minDelay: 2 * a88Timer, after: a88AfterFail, live: true},
		{name: deletion, cached: true, failOnDataErrors: "false", codes: []string{"NOT_FOUND"},
			provoke: a88DeleteC1,
			event:   eventAmbientError, after: a88AfterIgnore, live: true},
		{name: deletion, cached: true, failOnDataErrors: "true", codes: []string{"NOT_FOUND"},
			provoke: a88DeleteC1,
			event:   eventResourceError, after: a88AfterDrop, live: true},
		// A88 ignores ignore_resource_deletion: the deletion is ambient.
		{name: deletion + " with " + a88IgnoreResourceDeletion, cached: true, failOnDataErrors: "false", codes: []string{"NOT_FOUND"},
			features: []string{a88IgnoreResourceDeletion}, provoke: a88DeleteC1,
			event: eventAmbientError, after: a88AfterIgnore, live: true},
		{name: tp3DataError, cached: false, failOnDataErrors: "any", codes: dataCodes,
			provoke: a88SendTP3Error,
			event:   eventResourceError, cause: a88TP3Message, after: a88AfterFail, live: true},
		{name: tp3DataError, cached: true, failOnDataErrors: "false", codes: dataCodes,
			provoke: a88SendTP3Error,
			event:   eventAmbientError, cause: a88TP3Message, after: a88AfterIgnore, live: true},
		{name: tp3DataError, cached: true, failOnDataErrors: "true", codes: dataCodes,
			provoke: a88SendTP3Error,
			event:   eventResourceError, cause: a88TP3Message, after: a88AfterDrop, live: true},
		{name: tp3OtherStatus, cached: false, failOnDataErrors: "any", codes: otherCodes,
			provoke: a88SendTP3Error,
			event:   eventResourceError, cause: a88TP3Message, after: a88AfterFail, live: true},
		{name: tp3OtherStatus, cached: true, failOnDataErrors: "any", codes: otherCodes,
			provoke: a88SendTP3Error,
			event:   eventAmbientError, cause: a88TP3Message, after: a88AfterIgnore, live: true},
	}
	runA88Rows(t, rows)
}

// TestA88BlackBoxLegacy runs the "Old Behavior" column for the rows that
// A88 changed, with GRPC_EXPERIMENTAL_XDS_DATA_ERROR_HANDLING=false.
func TestA88BlackBoxLegacy(t *testing.T) {
	t.Parallel()
	legacy := []string{a88LegacyEnv}
	rows := []a88Row{
		{name: "LDS or CDS resource deletion from server (legacy)", cached: true, failOnDataErrors: "false", codes: []string{"NOT_FOUND"},
			env: legacy, provoke: a88DeleteC1,
			event: eventResourceError, after: a88AfterDrop, live: true},
		{name: "LDS or CDS resource deletion from server (legacy) with " + a88IgnoreResourceDeletion, cached: true, failOnDataErrors: "false", codes: []string{"NOT_FOUND"},
			env: legacy, features: []string{a88IgnoreResourceDeletion}, provoke: a88IgnoredDeletion},
		{name: "NACK from client (legacy)", cached: true, failOnDataErrors: "true", codes: []string{"INVALID_ARGUMENT"},
			env: legacy, provoke: a88SendInvalid,
			event: eventAmbientError, after: a88AfterIgnore, live: true},
		// TP3 errors are not used: the timer decides, at the base duration
		// and with NOT_FOUND although the server has
		// resource_timer_is_transient_error.
		{name: "xRFC TP3 error with status NOT_FOUND or PERMISSION_DENIED (legacy) with " + a88TimerIsTransient, cached: false, failOnDataErrors: "any", codes: []string{"NOT_FOUND"},
			env: legacy, features: []string{a88TimerIsTransient}, timer: a88Timer,
			provoke: func(r *a88Run, _ codes.Code) { r.sendTP3("1", codes.PermissionDenied) },
			event:   eventResourceError, notCause: a88TP3Message, minDelay: a88Timer, after: a88AfterFail, live: true},
	}
	runA88Rows(t, rows)
}

// a88IgnoredDeletion is the legacy row with ignore_resource_deletion: the
// deletion of c1 prints nothing. Its absence is shown by the lines of a
// watcher of c2: the client reads a response only once the watchers have
// taken the previous one, so a line for the deletion would come before the
// line for the next version of c2.
func a88IgnoredDeletion(r *a88Run, _ codes.Code) {
	r.t.Helper()
	r.p.send(r.t, "+cds:c2")
	r.recv(r.st, "c2")
	r.send("2", a88Cluster("c1", "1"), a88Cluster("c2", "2"))
	r.expect("c2", eventResource, "", "2")

	r.send("3", a88Cluster("c2", "3")) // c1 is deleted
	r.expect("c2", eventResource, "", "3")
	r.send("4", a88Cluster("c2", "4"))
	r.expect("c2", eventResource, "", "4")

	// A new watcher of c1 gets the kept resource and no error: the next
	// line is the one of a new watcher of c2.
	r.p.send(r.t, "+cds:c1")
	r.p.send(r.t, "+cds:c2")
	e := r.expect("c1", eventResource, "", "")
	if !strings.Contains(string(e.Resource), `"c1-v1"`) {
		r.t.Errorf("new watcher of c1 got %s, want the cached resource", e.Resource)
	}
	r.expect("c2", eventResource, "", "4")

	// The resource comes back: both watchers of c1 see the new version.
	r.send("5", a88Cluster("c1", "5"), a88Cluster("c2", "4"))
	r.expect("c1", eventResource, "", "5")
	r.expect("c1", eventResource, "", "5")
}

// runA88Rows runs every variant of rows as a subtest.
func runA88Rows(t *testing.T, rows []a88Row) {
	for _, row := range rows {
		for _, v := range row.variants() {
			t.Run(v.name, func(t *testing.T) {
				t.Parallel()
				runA88Row(t, row, v)
			})
		}
	}
}

// runA88Row provokes the row's error and checks what the watchers print:
// the error itself, what a watcher started afterwards gets, and, when the
// stream is still up, that the next version reaches every watcher with
// nothing before it. xdswatch must then end cleanly on SIGINT having
// printed nothing more.
func runA88Row(t *testing.T, row a88Row, v a88Variant) {
	r := newA88Run(t, v.features)
	if row.serverDown {
		r.srv.Stop()
	}
	r.start(row.env, row.timer)
	if row.cached {
		r.cache()
	}
	code := a88Code(t, v.code)
	row.provoke(r, code)
	if row.event == "" {
		r.p.interrupt(t)
		if lines := drain(r.p.stdout.lines); len(lines) > 0 {
			t.Errorf("more output: %q", lines)
		}
		return
	}

	e := r.expect("c1", row.event, v.code, "")
	if elapsed := time.Since(r.started); elapsed < row.minDelay {
		t.Errorf("%v after %v, before the %v timer", e, elapsed, row.minDelay)
	}
	if row.cause != "" && !strings.Contains(e.Message, row.cause) {
		t.Errorf("%v: the message does not carry %q", e, row.cause)
	}
	if row.notCause != "" && strings.Contains(e.Message, row.notCause) {
		t.Errorf("%v: the message carries %q", e, row.notCause)
	}

	// Two watchers started now, one after the other: the lines of the
	// second end those of the first, so a missing or extra line shows at
	// once.
	r.p.send(t, "+cds:c1")
	r.p.send(t, "+cds:c1")
	r.watchers += 2
	for range 2 {
		switch row.after {
		case a88AfterFail, a88AfterDrop:
			r.expect("c1", eventResourceError, v.code, "")
		case a88AfterIgnore:
			e := r.next()
			// An older watcher may hear a transient error again; that
			// cannot come between a new watcher's two lines.
			for row.repeats && e.Event == row.event && e.Code == v.code {
				e = r.next()
			}
			r.check(e, "c1", eventResource, "", "1")
			r.expect("c1", eventAmbientError, v.code, "")
		}
	}

	if row.live && row.after == a88AfterIgnore {
		// The same resource again: the error is over (A88's
		// OnAmbientError(OK)), once for every watcher, all of which heard it.
		r.send("2b", a88Cluster("c1", "1"))
		for range r.watchers {
			if e := r.next(); e.Event != eventAmbientError || e.Name != "c1" || e.Code != "OK" || e.Message != "" {
				t.Fatalf("got %v, want ambient_error c1 OK with no message", e)
			}
		}
	}
	if row.live {
		r.send("3", a88Cluster("c1", "3"))
		for range r.watchers {
			r.expect("c1", eventResource, "", "3")
		}
	}

	r.p.interrupt(t)
	for _, l := range drain(r.p.stdout.lines) {
		if e := parseEvent(t, l); !row.repeats || e.Event != row.event || e.Code != v.code {
			t.Errorf("more output: %v", e)
		}
	}
}
