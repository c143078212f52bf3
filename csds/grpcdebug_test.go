package csds_test

// These tests read the response the way the `xds status` and `xds config`
// commands of grpcdebug (github.com/grpc-ecosystem/grpcdebug) do: the same
// fields, the same field accesses (no nil checks where grpcdebug has none),
// the same JSON options, in its current and older builds.

import (
	"fmt"
	"strings"
	"testing"
	"text/tabwriter"
	"time"

	statusv3 "github.com/envoyproxy/go-control-plane/envoy/service/status/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/xdslens/xdslens/csds"
	"github.com/xdslens/xdslens/internal/controlplane"
	"github.com/xdslens/xdslens/internal/xdstest"
	"github.com/xdslens/xdslens/xdsclient"
	"github.com/xdslens/xdslens/xdsclient/xdsresource"
)

// grpcdebugTime is grpcdebug's prettyTime with its -t flag (RFC 3339 rather
// than "3 seconds ago"): it reads the fields of ts directly, so a nil
// last_updated panics there.
func grpcdebugTime(ts *timestamppb.Timestamp) string {
	if ts.Seconds == 0 && ts.Nanos == 0 {
		return ""
	}
	return ts.AsTime().Format(time.RFC3339Nano)
}

// grpcdebugStatus renders `grpcdebug HOST:PORT xds status`: current builds
// print a Scope column and every ClientConfig; older ones print only
// config[0], without the column.
func grpcdebugStatus(resp *statusv3.ClientStatusResponse, older bool) string {
	var sb strings.Builder
	w := tabwriter.NewWriter(&sb, 10, 0, 3, ' ', 0)
	configs := resp.Config
	if older {
		configs = configs[:1] // grpcdebug: config := clientStatus.Config[0]
		fmt.Fprintln(w, "Name\tStatus\tVersion\tType\tLastUpdated")
	} else {
		fmt.Fprintln(w, "Scope\tName\tStatus\tVersion\tType\tLastUpdated")
	}
	for _, cfg := range configs {
		for _, g := range cfg.GenericXdsConfigs {
			if !older {
				fmt.Fprintf(w, "%v\t", cfg.ClientScope)
			}
			fmt.Fprintf(w, "%v\t%v\t%v\t%v\t%v\t\n", g.Name, g.ClientStatus, g.VersionInfo, g.TypeUrl, grpcdebugTime(g.LastUpdated))
		}
	}
	w.Flush()
	return sb.String()
}

// grpcdebugConfig renders `grpcdebug HOST:PORT xds config [--type cds]`.
// Older builds refuse a response with other than one ClientConfig.
func grpcdebugConfig(resp *statusv3.ClientStatusResponse, cdsOnly, older bool) (string, error) {
	if older && len(resp.Config) != 1 {
		return "", fmt.Errorf("Unexpected number of ClientConfig %v", len(resp.Config))
	}
	opts := protojson.MarshalOptions{Multiline: true, Indent: "  "}
	if !cdsOnly {
		b, err := opts.Marshal(resp)
		return string(b), err
	}
	var sb strings.Builder
	for _, cfg := range resp.Config {
		for _, g := range cfg.GenericXdsConfigs {
			tokens := strings.Split(g.TypeUrl, ".")
			if tokens[len(tokens)-1] != "Cluster" {
				continue
			}
			var m proto.Message = g.GetXdsConfig() // a typed nil when none is held
			b, err := opts.Marshal(m)
			if err != nil {
				return "", err
			}
			sb.Write(b)
			sb.WriteByte('\n')
		}
	}
	return sb.String(), nil
}

// A single client in every state grpcdebug shows: exactly one ClientConfig,
// and both commands, current and older builds, read it.
func TestGrpcdebugCompatible(t *testing.T) {
	f := newFixture(t, nil, xdsclient.WithResourceTimeout(time.Hour))
	recs := map[string]*xdstest.Watcher{}
	for _, n := range []string{"c1", "c2", "c3"} {
		recs[n] = xdstest.NewWatcher()
		t.Cleanup(f.c.Watch(xdsresource.ClusterType, n, recs[n]))
	}
	st := f.NextStream()
	xdstest.WaitFor(t, f.Ctx, "a subscription to c1, c2 and c3", func() bool {
		return len(f.c.Dump()) == 3
	})
	// c1 valid, c2 invalid, c3 absent (never received: still REQUESTED).
	f.Send(st, xdstest.Response(cdsURL, "7", controlplane.Cluster("c1", "c1"), xdstest.InvalidCluster("c2")))
	recs["c1"].Expect(t, xdsclient.NotifyResource, 0)
	recs["c2"].Expect(t, xdsclient.NotifyResourceError, codes.InvalidArgument)

	// Without WithZeroLastUpdated, entries holding nothing have no
	// last_updated, which grpcdebug's `xds status` would dereference.
	resp := fetch(t, serveCSDS(t, csds.ForClient(f.c)))
	for _, g := range resp.GetConfig()[0].GetGenericXdsConfigs() {
		if (g.GetXdsConfig() == nil) != (g.GetLastUpdated() == nil) {
			t.Errorf("%s: xds_config %v but last_updated %v", g.GetName(), g.GetXdsConfig() != nil, g.GetLastUpdated())
		}
	}

	resp = fetch(t, serveCSDS(t, csds.ForClient(f.c), csds.WithZeroLastUpdated()))
	if len(resp.Config) != 1 {
		t.Fatalf("%d ClientConfigs for one client, want exactly 1", len(resp.Config))
	}
	for _, older := range []bool{false, true} {
		out := grpcdebugStatus(resp, older)
		t.Logf("xds status (older build %v):\n%s", older, out)
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if len(lines) != 4 {
			t.Fatalf("xds status printed %d lines, want a header and 3 rows", len(lines))
		}
		for i, want := range []string{"c1 ACKED 7 " + cdsURL + " 20", "c2 NACKED " + cdsURL, "c3 REQUESTED " + cdsURL} {
			row := strings.Join(strings.Fields(lines[i+1]), " ")
			if !older {
				want = testTarget + " " + want
			}
			if !strings.HasPrefix(row, want) {
				t.Errorf("xds status row %q, want it to start with %q", row, want)
			}
		}
	}
	for _, older := range []bool{false, true} {
		all, err := grpcdebugConfig(resp, false, older)
		if err != nil {
			t.Fatalf("xds config (older build %v): %v", older, err)
		}
		all = strings.Join(strings.Fields(all), " ") // protojson varies its spacing
		for _, w := range []string{`"clientScope": "` + testTarget + `"`, `"@type": "` + cdsURL + `"`, `"clientStatus": "NACKED"`, `"failedConfiguration"`, `"id": "` + testNodeID + `"`} {
			if !strings.Contains(all, w) {
				t.Errorf("xds config output lacks %s:\n%s", w, all)
			}
		}
		cds, err := grpcdebugConfig(resp, true, older)
		if err != nil {
			t.Fatalf("xds config --type cds: %v", err)
		}
		// c1's cluster, then {} for c2 and c3, which hold nothing.
		cds = strings.Join(strings.Fields(cds), " ")
		if !strings.HasPrefix(cds, `{ "@type": "`+cdsURL+`", "name": "c1",`) || !strings.HasSuffix(cds, "} {} {}") || strings.Count(cds, `"@type"`) != 1 {
			t.Errorf("xds config --type cds printed %q, want c1's cluster then {} twice", cds)
		}
	}
}

// A pool of two targets: current builds print both, with their scopes.
func TestGrpcdebugPool(t *testing.T) {
	srv := xdstest.NewADSServer(t)
	pool := xdsclient.NewPool(bootstrapFor(t, srv.Addr()), xdstest.ClientOptions(xdsclient.WithResourceTimeout(time.Hour))...)
	for _, target := range []string{"#server", "dns:///backend.example.com"} {
		c, release, err := pool.Get(target)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(release)
		t.Cleanup(c.Watch(xdsresource.ListenerType, "listener-of-"+target, xdstest.NewWatcher()))
	}
	resp := fetch(t, serveCSDS(t, csds.ForPool(pool), csds.WithZeroLastUpdated()))
	out := grpcdebugStatus(resp, false)
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
	if _, err := grpcdebugConfig(resp, false, false); err != nil {
		t.Errorf("xds config: %v", err)
	}
}
