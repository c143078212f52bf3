package csds_test

// These tests read the response the way the `xds status` and `xds config`
// commands of grpcdebug (github.com/grpc-ecosystem/grpcdebug) do, in two
// builds: v1.0.5, its latest release, and a later change, on no release,
// that adds a Scope column and `xds config --scope` (its main branch up to
// 64d2b46, of 2025-03, refuses more than one ClientConfig as v1.0.5 does).
// v1.0.5 refuses any response with other than one ClientConfig, its protos
// predate client_scope (dropped when it decodes) and the RECEIVED_ERROR and
// TIMEOUT states (printed as their numbers). Both builds print an entry
// without last_updated with an empty time.

import (
	"fmt"
	"strings"
	"testing"
	"text/tabwriter"
	"time"

	adminv3 "github.com/envoyproxy/go-control-plane/envoy/admin/v3"
	statusv3 "github.com/envoyproxy/go-control-plane/envoy/service/status/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/xdslens/xdslens/csds"
	"github.com/xdslens/xdslens/internal/testing/xdstest"
	"github.com/xdslens/xdslens/internal/xdswatch/demo/controlplane"
	"github.com/xdslens/xdslens/xdsclient"
	"github.com/xdslens/xdslens/xdsclient/xdsresource"
)

// grpcdebugBuild is the grpcdebug build a test reads the response as.
type grpcdebugBuild int

const (
	// v105 is the v1.0.5 release.
	v105 grpcdebugBuild = iota
	// scoped is the later change with the Scope column and --scope.
	scoped
)

func (b grpcdebugBuild) String() string {
	if b == v105 {
		return "v1.0.5"
	}
	return "scoped"
}

// decode is what the build's protos make of resp: v1.0.5 knows neither
// client_scope nor the last two cache states.
func (b grpcdebugBuild) decode(resp *statusv3.ClientStatusResponse) *statusv3.ClientStatusResponse {
	resp = proto.Clone(resp).(*statusv3.ClientStatusResponse)
	if b == v105 {
		for _, cfg := range resp.Config {
			cfg.ClientScope = ""
		}
	}
	return resp
}

// statusName prints s as the build's protos do.
func (b grpcdebugBuild) statusName(s adminv3.ClientResourceStatus) string {
	if b == v105 && s > adminv3.ClientResourceStatus_NACKED {
		return fmt.Sprint(int32(s))
	}
	return s.String()
}

// grpcdebugTime is grpcdebug's prettyTime with its -t flag (RFC 3339 rather
// than "3 seconds ago"): nothing for an unset or zero time.
func grpcdebugTime(ts *timestamppb.Timestamp) string {
	if ts == nil || (ts.Seconds == 0 && ts.Nanos == 0) {
		return ""
	}
	return ts.AsTime().Format(time.RFC3339Nano)
}

// grpcdebugStatus renders `grpcdebug HOST:PORT xds status`: v1.0.5 fails
// unless there is exactly one ClientConfig; the scoped build prints a
// Scope column and every ClientConfig.
func grpcdebugStatus(resp *statusv3.ClientStatusResponse, b grpcdebugBuild) (string, error) {
	if b == v105 && len(resp.Config) != 1 {
		return "", fmt.Errorf("Received unexpected number of ClientConfig %v", len(resp.Config))
	}
	if len(resp.Config) == 0 {
		return "", fmt.Errorf("no ClientConfig returned")
	}
	resp = b.decode(resp)
	var sb strings.Builder
	w := tabwriter.NewWriter(&sb, 10, 0, 3, ' ', 0)
	if b == v105 {
		fmt.Fprintln(w, "Name\tStatus\tVersion\tType\tLastUpdated")
	} else {
		fmt.Fprintln(w, "Scope\tName\tStatus\tVersion\tType\tLastUpdated")
	}
	for _, cfg := range resp.Config {
		for _, g := range cfg.GenericXdsConfigs {
			if b == scoped {
				fmt.Fprintf(w, "%v\t", cfg.ClientScope)
			}
			fmt.Fprintf(w, "%v\t%v\t%v\t%v\t%v\t\n", g.Name, b.statusName(g.ClientStatus), g.VersionInfo, g.TypeUrl, grpcdebugTime(g.LastUpdated))
		}
	}
	w.Flush()
	return sb.String(), nil
}

// grpcdebugConfig renders `grpcdebug HOST:PORT xds config [--type cds]`.
func grpcdebugConfig(resp *statusv3.ClientStatusResponse, cdsOnly bool, b grpcdebugBuild) (string, error) {
	if b == v105 && len(resp.Config) != 1 {
		return "", fmt.Errorf("Received unexpected number of ClientConfig %v", len(resp.Config))
	}
	resp = b.decode(resp)
	opts := protojson.MarshalOptions{Multiline: true, Indent: "  "}
	if !cdsOnly {
		out, err := opts.Marshal(resp)
		return string(out), err
	}
	var sb strings.Builder
	for _, cfg := range resp.Config {
		for _, g := range cfg.GenericXdsConfigs {
			tokens := strings.Split(g.TypeUrl, ".")
			if tokens[len(tokens)-1] != "Cluster" {
				continue
			}
			var m proto.Message = g.GetXdsConfig() // a typed nil when none is held
			out, err := opts.Marshal(m)
			if err != nil {
				return "", err
			}
			sb.Write(out)
			sb.WriteByte('\n')
		}
	}
	return sb.String(), nil
}

// A single client in every state grpcdebug shows: exactly one ClientConfig,
// which both builds read; entries that hold nothing have no last_updated,
// printed as an empty time (no "1970-01-01").
func TestGrpcdebugCompatible(t *testing.T) {
	f := newFixture(t, nil, xdsclient.WithResourceTimeout(time.Hour))
	recs := map[string]*xdstest.Watcher{}
	for _, n := range []string{"c1", "c2", "c3", "c4"} {
		recs[n] = xdstest.NewWatcher()
		t.Cleanup(f.c.Watch(xdsresource.ClusterType, n, recs[n]))
	}
	st := f.NextStream()
	xdstest.WaitFor(t, f.Ctx, "a subscription to c1 to c4", func() bool {
		return len(f.c.Dump()) == 4
	})
	// c1 valid, c2 invalid, c3 absent (never received: still REQUESTED),
	// c4 an error from the server.
	resp := xdstest.Response(cdsURL, "7", controlplane.Cluster("c1", "c1"), xdstest.InvalidCluster("c2"))
	resp.ResourceErrors = append(resp.ResourceErrors, xdstest.ResourceError("c4", codes.Unavailable, "backend store down"))
	f.Send(st, resp)
	recs["c1"].Expect(t, xdsclient.NotifyResource, 0)
	recs["c2"].Expect(t, xdsclient.NotifyResourceError, codes.InvalidArgument)
	recs["c4"].Expect(t, xdsclient.NotifyResourceError, codes.Unavailable)

	got := fetch(t, serveCSDS(t, f.c))
	if len(got.Config) != 1 {
		t.Fatalf("%d ClientConfigs for one client, want exactly 1", len(got.Config))
	}
	for _, g := range got.GetConfig()[0].GetGenericXdsConfigs() {
		if (g.GetXdsConfig() == nil) != (g.GetLastUpdated() == nil) {
			t.Errorf("%s: xds_config %v but last_updated %v", g.GetName(), g.GetXdsConfig() != nil, g.GetLastUpdated())
		}
	}
	for _, b := range []grpcdebugBuild{v105, scoped} {
		out, err := grpcdebugStatus(got, b)
		if err != nil {
			t.Fatalf("xds status (%v): %v", b, err)
		}
		t.Logf("xds status (%v):\n%s", b, out)
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if len(lines) != 5 {
			t.Fatalf("xds status (%v) printed %d lines, want a header and 4 rows", b, len(lines))
		}
		received := "RECEIVED_ERROR"
		if b == v105 {
			received = "5"
		}
		for i, want := range []string{"c1 ACKED 7 " + cdsURL + " 20", "c2 NACKED " + cdsURL, "c3 REQUESTED " + cdsURL, "c4 " + received + " " + cdsURL} {
			row := strings.Join(strings.Fields(lines[i+1]), " ")
			if b == scoped {
				want = testTarget + " " + want
			}
			if !strings.HasPrefix(row, want) {
				t.Errorf("xds status (%v) row %q, want it to start with %q", b, row, want)
			}
			if i > 0 && strings.HasSuffix(row, "Z") {
				t.Errorf("xds status (%v) row %q prints a time for an entry that holds nothing", b, row)
			}
		}

		all, err := grpcdebugConfig(got, false, b)
		if err != nil {
			t.Fatalf("xds config (%v): %v", b, err)
		}
		all = strings.Join(strings.Fields(all), " ") // protojson varies its spacing
		for _, w := range []string{`"@type": "` + cdsURL + `"`, `"clientStatus": "NACKED"`, `"failedConfiguration"`, `"id": "` + testNodeID + `"`} {
			if !strings.Contains(all, w) {
				t.Errorf("xds config (%v) output lacks %s:\n%s", b, w, all)
			}
		}
		if hasScope := strings.Contains(all, `"clientScope": "`+testTarget+`"`); hasScope != (b == scoped) {
			t.Errorf("xds config (%v): clientScope printed %v", b, hasScope)
		}
		if n := strings.Count(all, `"lastUpdated"`); n != 1 || strings.Contains(all, "1970-01-01") {
			t.Errorf("xds config (%v): %d lastUpdated fields (want 1, c1's), or a zero time:\n%s", b, n, all)
		}

		cds, err := grpcdebugConfig(got, true, b)
		if err != nil {
			t.Fatalf("xds config --type cds (%v): %v", b, err)
		}
		// c1's cluster, then {} for c2 to c4, which hold nothing.
		cds = strings.Join(strings.Fields(cds), " ")
		if !strings.HasPrefix(cds, `{ "@type": "`+cdsURL+`", "name": "c1",`) || !strings.HasSuffix(cds, "} {} {} {}") || strings.Count(cds, `"@type"`) != 1 {
			t.Errorf("xds config --type cds (%v) printed %q, want c1's cluster then {} three times", b, cds)
		}
	}
}

// A pool of two targets: v1.0.5 refuses the pool's response and the scoped
// build prints both clients with their scopes; a server over one target
// of the pool (ForTarget) answers with one ClientConfig, which v1.0.5
// reads.
func TestGrpcdebugPool(t *testing.T) {
	srv := xdstest.NewADSServer(t)
	pool := xdsclient.NewPool(bootstrapFor(t, srv.Addr()), xdstest.ClientOptions(xdsclient.WithResourceTimeout(time.Hour))...)
	targets := []string{"#server", "dns:///backend.example.com"}
	for _, target := range targets {
		c, release, err := pool.Get(target)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(release)
		t.Cleanup(c.Watch(xdsresource.ListenerType, "listener-of-"+target, xdstest.NewWatcher()))
	}
	resp := fetch(t, serveCSDS(t, pool))
	if _, err := grpcdebugStatus(resp, v105); err == nil || !strings.Contains(err.Error(), "unexpected number of ClientConfig 2") {
		t.Errorf("xds status (v1.0.5) of two clients: %v, want it refused", err)
	}
	if _, err := grpcdebugConfig(resp, false, v105); err == nil {
		t.Errorf("xds config (v1.0.5) of two clients: no error, want it refused")
	}
	out, err := grpcdebugStatus(resp, scoped)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("xds status:\n%s", out)
	var rows []string
	for _, l := range strings.Split(strings.TrimSpace(out), "\n")[1:] {
		rows = append(rows, strings.Join(strings.Fields(l), " "))
	}
	want := []string{
		"#server listener-of-#server REQUESTED " + ldsURL,
		"dns:///backend.example.com listener-of-dns:///backend.example.com REQUESTED " + ldsURL,
	}
	if strings.Join(rows, "\n") != strings.Join(want, "\n") {
		t.Errorf("xds status rows:\n%s\nwant:\n%s", strings.Join(rows, "\n"), strings.Join(want, "\n"))
	}
	if _, err := grpcdebugConfig(resp, false, scoped); err != nil {
		t.Errorf("xds config: %v", err)
	}

	for _, target := range targets {
		one := fetch(t, serveCSDS(t, csds.ForTarget(pool, target)))
		if len(one.GetConfig()) != 1 || one.GetConfig()[0].GetClientScope() != target {
			t.Fatalf("ForTarget(%q) answered %v, want that client alone", target, one)
		}
		out, err := grpcdebugStatus(one, v105)
		if err != nil {
			t.Fatalf("xds status (v1.0.5) over ForTarget(%q): %v", target, err)
		}
		if !strings.Contains(out, "listener-of-"+target+" ") || strings.Count(out, "listener-of-") != 1 {
			t.Errorf("xds status (v1.0.5) over ForTarget(%q):\n%s\nwant that client's listener alone", target, out)
		}
	}
	if none := fetch(t, serveCSDS(t, csds.ForTarget(pool, "not-in-the-pool"))); len(none.GetConfig()) != 0 {
		t.Errorf("ForTarget of a target the pool lacks answered %v, want no ClientConfig", none)
	}
}
