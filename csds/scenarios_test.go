package csds_test

// Each test drives a client into one cache state with a scripted ADS server,
// then reads it over CSDS with the generated client on loopback.

import (
	"strings"
	"testing"
	"time"

	adminv3 "github.com/envoyproxy/go-control-plane/envoy/admin/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	statusv3 "github.com/envoyproxy/go-control-plane/envoy/service/status/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/xdslens/xdslens/internal/testing/xdstest"
	"github.com/xdslens/xdslens/internal/xdswatch/demo/controlplane"
	"github.com/xdslens/xdslens/xdsclient"
	"github.com/xdslens/xdslens/xdsclient/bootstrap"
	"github.com/xdslens/xdslens/xdsclient/xdsresource"
)

// want is what one generic_xds_config should hold.
type want struct {
	status  adminv3.ClientResourceStatus
	version string     // version_info of the held resource
	config  *anypb.Any // xds_config; nil: none held
	// error_state; errDetails empty means no error_state at all.
	errDetails []string // substrings of details
	errVersion string
	errAttempt bool   // last_update_attempt set
	failed     []byte // failed_configuration's value, nil when absent
}

// check compares g with w, and checks that timestamps fall in [from, to].
func check(t *testing.T, g *statusv3.ClientConfig_GenericXdsConfig, name string, w want, from, to time.Time) {
	t.Helper()
	if g.GetTypeUrl() != cdsURL || g.GetName() != name {
		t.Errorf("type_url %q name %q, want %q %q", g.GetTypeUrl(), g.GetName(), cdsURL, name)
	}
	if g.GetClientStatus() != w.status {
		t.Errorf("client_status %v, want %v", g.GetClientStatus(), w.status)
	}
	if g.GetVersionInfo() != w.version {
		t.Errorf("version_info %q, want %q", g.GetVersionInfo(), w.version)
	}
	if !proto.Equal(g.GetXdsConfig(), w.config) {
		t.Errorf("xds_config %v, want %v", g.GetXdsConfig(), w.config)
	}
	inRange := func(what string, ts interface{ AsTime() time.Time }) {
		if at := ts.AsTime(); at.Before(from) || at.After(to) {
			t.Errorf("%s %v not within [%v, %v]", what, at, from, to)
		}
	}
	switch {
	case w.config != nil && g.GetLastUpdated() == nil:
		t.Errorf("last_updated unset while a resource is held")
	case w.config != nil:
		inRange("last_updated", g.GetLastUpdated())
	case g.GetLastUpdated() != nil:
		t.Errorf("last_updated %v set while no resource is held", g.GetLastUpdated().AsTime())
	}
	if g.GetConfigStatus() != statusv3.ConfigStatus_UNKNOWN || g.GetIsStaticResource() {
		t.Errorf("config_status %v is_static_resource %v, want unset and false", g.GetConfigStatus(), g.GetIsStaticResource())
	}
	es := g.GetErrorState()
	if len(w.errDetails) == 0 {
		if es != nil {
			t.Errorf("error_state %v, want none", es)
		}
		return
	}
	if es == nil {
		t.Fatalf("no error_state, want one")
	}
	for _, d := range w.errDetails {
		if !strings.Contains(es.GetDetails(), d) {
			t.Errorf("error_state.details %q does not contain %q", es.GetDetails(), d)
		}
	}
	if strings.HasPrefix(es.GetDetails(), "rpc error") {
		t.Errorf("error_state.details %q carries the Go status wrapping", es.GetDetails())
	}
	if es.GetVersionInfo() != w.errVersion {
		t.Errorf("error_state.version_info %q, want %q", es.GetVersionInfo(), w.errVersion)
	}
	switch {
	case w.errAttempt && es.GetLastUpdateAttempt() == nil:
		t.Errorf("error_state.last_update_attempt unset")
	case w.errAttempt:
		inRange("error_state.last_update_attempt", es.GetLastUpdateAttempt())
	case es.GetLastUpdateAttempt() != nil:
		t.Errorf("error_state.last_update_attempt %v, want unset", es.GetLastUpdateAttempt().AsTime())
	}
	fc := es.GetFailedConfiguration()
	switch {
	case w.failed == nil && fc != nil:
		t.Errorf("error_state.failed_configuration %v, want none", fc)
	case w.failed != nil && (fc.GetTypeUrl() != cdsURL || string(fc.GetValue()) != string(w.failed)):
		t.Errorf("error_state.failed_configuration %v, want the rejected bytes as a %s", fc, cdsURL)
	}
}

// errorResponse is a CDS response at version with one resource error: for
// name, of code with msg.
func errorResponse(version, name string, code codes.Code, msg string) *discoveryv3.DiscoveryResponse {
	return xdstest.ErrorResponse(cdsURL, version, xdstest.ResourceError(name, code, msg))
}

func TestACKED(t *testing.T) {
	f := newFixture(t, nil)
	from := time.Now()
	_, _, v1 := f.watchCached("c1")
	cfg, g := only(t, f.fetch())
	if cfg.GetClientScope() != testTarget {
		t.Errorf("client_scope %q, want %q", cfg.GetClientScope(), testTarget)
	}
	if !proto.Equal(cfg.GetNode(), f.c.Node()) {
		t.Errorf("node %v, want the node the client sends: %v", cfg.GetNode(), f.c.Node())
	}
	if n := cfg.GetNode(); n.GetId() != testNodeID || n.GetCluster() != "csds-cluster" || n.GetUserAgentName() != xdsclient.UserAgentName ||
		n.GetUserAgentVersion() != xdsclient.Version || len(n.GetClientFeatures()) == 0 || n.GetMetadata().GetFields()["team"].GetStringValue() != "xdslens" {
		t.Errorf("node %v lacks the bootstrap values or what the client adds", n)
	}
	if len(cfg.GetXdsConfig()) != 0 {
		t.Errorf("deprecated xds_config (PerXdsConfig) is set: %v", cfg.GetXdsConfig())
	}
	check(t, g, "c1", want{status: adminv3.ClientResourceStatus_ACKED, version: "1", config: v1}, from, time.Now())
}

// A NACK of a cached resource keeps the old config (A46): version_info and
// xds_config are version 1, error_state names version 2 and holds its bytes.
func TestNACKedOldConfigKept(t *testing.T) {
	f := newFixture(t, nil)
	from := time.Now()
	rec, st, v1 := f.watchCached("c1")
	bad := f.Send(st, xdstest.Response(cdsURL, "2", xdstest.InvalidCluster("c1")))
	rec.Expect(t, xdsclient.NotifyAmbientError, codes.InvalidArgument)
	_, g := only(t, f.fetch())
	check(t, g, "c1", want{
		status: adminv3.ClientResourceStatus_NACKED, version: "1", config: v1,
		errDetails: []string{`"c1"`, "NACK", `"2"`}, errVersion: "2", errAttempt: true,
		failed: bad.GetResources()[0].GetValue(),
	}, from, time.Now())
}

func TestNACKedNeverValid(t *testing.T) {
	f := newFixture(t, nil)
	from := time.Now()
	rec, st := f.watch("c1")
	bad := f.Send(st, xdstest.Response(cdsURL, "1", xdstest.InvalidCluster("c1")))
	rec.Expect(t, xdsclient.NotifyResourceError, codes.InvalidArgument)
	_, g := only(t, f.fetch())
	check(t, g, "c1", want{
		status:     adminv3.ClientResourceStatus_NACKED,
		errDetails: []string{`"c1"`, testNodeID}, errVersion: "1", errAttempt: true,
		failed: bad.GetResources()[0].GetValue(),
	}, from, time.Now())
}

// The does-not-exist timer: error_state has details only.
func TestDoesNotExistTimer(t *testing.T) {
	f := newFixture(t, nil, xdsclient.WithResourceTimeout(50*time.Millisecond))
	rec, _ := f.watch("c1") // the server stays silent
	rec.Expect(t, xdsclient.NotifyResourceError, codes.NotFound)
	_, g := only(t, f.fetch())
	check(t, g, "c1", want{status: adminv3.ClientResourceStatus_DOES_NOT_EXIST, errDetails: []string{`"c1"`, "does not exist"}}, time.Time{}, time.Now())
}

// does_not_exist_but_cached: a CDS deletion ignored under A88 (no
// fail_on_data_errors) keeps the old resource in the entry.
func TestDoesNotExistButCached(t *testing.T) {
	f := newFixture(t, nil)
	from := time.Now()
	rec, st, v1 := f.watchCached("c1")
	f.Send(st, xdstest.Response(cdsURL, "2")) // full state without c1
	rec.Expect(t, xdsclient.NotifyAmbientError, codes.NotFound)
	_, g := only(t, f.fetch())
	check(t, g, "c1", want{
		status: adminv3.ClientResourceStatus_DOES_NOT_EXIST, version: "1", config: v1,
		errDetails: []string{"deleted"}, errVersion: "2", errAttempt: true,
	}, from, time.Now())
}

func TestReceivedErrorCached(t *testing.T) {
	f := newFixture(t, nil)
	from := time.Now()
	rec, st, v1 := f.watchCached("c1")
	f.Send(st, errorResponse("2", "c1", codes.Unavailable, "scripted TP3 error"))
	rec.Expect(t, xdsclient.NotifyAmbientError, codes.Unavailable)
	_, g := only(t, f.fetch())
	check(t, g, "c1", want{
		status: adminv3.ClientResourceStatus_RECEIVED_ERROR, version: "1", config: v1,
		errDetails: []string{"scripted TP3 error"}, errVersion: "2", errAttempt: true,
	}, from, time.Now())
}

// With fail_on_data_errors a TP3 NOT_FOUND drops the cached resource: the
// entry shows no resource any more.
func TestReceivedErrorDropped(t *testing.T) {
	f := newFixture(t, []string{bootstrap.FeatureFailOnDataErrors})
	from := time.Now()
	rec, st, _ := f.watchCached("c1")
	f.Send(st, errorResponse("2", "c1", codes.NotFound, "scripted TP3 error"))
	rec.Expect(t, xdsclient.NotifyResourceError, codes.NotFound)
	_, g := only(t, f.fetch())
	check(t, g, "c1", want{
		status:     adminv3.ClientResourceStatus_RECEIVED_ERROR,
		errDetails: []string{"scripted TP3 error"}, errVersion: "2", errAttempt: true,
	}, from, time.Now())
}

func TestTimeout(t *testing.T) {
	f := newFixture(t, []string{bootstrap.FeatureResourceTimerIsTransientError}, xdsclient.WithResourceTimeout(50*time.Millisecond))
	rec, _ := f.watch("c1")
	rec.Expect(t, xdsclient.NotifyResourceError, codes.Unavailable)
	_, g := only(t, f.fetch())
	check(t, g, "c1", want{status: adminv3.ClientResourceStatus_TIMEOUT, errDetails: []string{`"c1"`, "resource_timer_is_transient_error"}}, time.Time{}, time.Now())
}

func TestRequested(t *testing.T) {
	f := newFixture(t, nil, xdsclient.WithResourceTimeout(time.Hour))
	f.watch("c1") // the server stays silent
	_, g := only(t, f.fetch())
	check(t, g, "c1", want{status: adminv3.ClientResourceStatus_REQUESTED}, time.Time{}, time.Now())
}

// A later valid version clears error_state.
func TestErrorStateClearedByValidUpdate(t *testing.T) {
	f := newFixture(t, nil)
	from := time.Now()
	rec, st, _ := f.watchCached("c1")
	f.Send(st, xdstest.Response(cdsURL, "2", xdstest.InvalidCluster("c1")))
	rec.Expect(t, xdsclient.NotifyAmbientError, codes.InvalidArgument)
	f.RecvType(st, cdsURL) // NACK
	v3 := f.Send(st, xdstest.Response(cdsURL, "3", controlplane.Cluster("c1", "other")))
	rec.Expect(t, xdsclient.NotifyResource, 0)
	_, g := only(t, f.fetch())
	check(t, g, "c1", want{status: adminv3.ClientResourceStatus_ACKED, version: "3", config: v3.GetResources()[0]}, from, time.Now())
}

// Two targets of one pool: one ClientConfig each, sorted by client_scope,
// each with its own entries, against a go-control-plane server.
func TestPoolTwoTargets(t *testing.T) {
	ctx := xdstest.Context(t)
	cp, err := controlplane.Start(ctx, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cp.Stop)
	if err := cp.SetResources(ctx, testNodeID, "1", controlplane.Cluster("c1", "c1")); err != nil {
		t.Fatal(err)
	}
	pool := xdsclient.NewPool(bootstrapFor(t, cp.Addr()), xdstest.ClientOptions(xdsclient.WithResourceTimeout(time.Hour))...)
	cl := serveCSDS(t, pool)

	// Made in reverse order, to check the sort.
	for _, tc := range []struct {
		target string
		names  []string
	}{{"b-target", []string{"c1", "c2"}}, {"a-target", []string{"c1"}}} {
		c, release, err := pool.Get(tc.target)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(release)
		for _, n := range tc.names {
			rec := xdstest.NewWatcher()
			t.Cleanup(c.Watch(xdsresource.ClusterType, n, rec))
			if n == "c1" {
				rec.Expect(t, xdsclient.NotifyResource, 0)
			}
		}
	}

	resp := fetch(t, cl)
	if len(resp.GetConfig()) != 2 {
		t.Fatalf("%d ClientConfigs, want 2: %v", len(resp.GetConfig()), resp)
	}
	wantEntries := map[string][]string{"a-target": {"c1:ACKED"}, "b-target": {"c1:ACKED", "c2:REQUESTED"}}
	for i, scope := range []string{"a-target", "b-target"} {
		cfg := resp.GetConfig()[i]
		if cfg.GetClientScope() != scope {
			t.Errorf("config[%d].client_scope %q, want %q", i, cfg.GetClientScope(), scope)
		}
		if cfg.GetNode().GetId() != testNodeID {
			t.Errorf("config[%d].node.id %q, want %q", i, cfg.GetNode().GetId(), testNodeID)
		}
		var got []string
		for _, g := range cfg.GetGenericXdsConfigs() {
			got = append(got, g.GetName()+":"+g.GetClientStatus().String())
		}
		if strings.Join(got, " ") != strings.Join(wantEntries[scope], " ") {
			t.Errorf("%s entries %v, want %v", scope, got, wantEntries[scope])
		}
	}
}

// A server's oversized strings are cut in what CSDS shows: a resource held
// at a version_info of 3 MiB, then NACKed at another, shows both versions
// cut at 1 KiB with a marker, and error_state.details within 16 KiB.
func TestServerStringsBounded(t *testing.T) {
	f := newFixture(t, nil)
	v1, v2 := strings.Repeat("1", 3<<20), strings.Repeat("2", 3<<20)
	rec, st := f.watch("c1")
	f.Send(st, xdstest.Response(cdsURL, v1, controlplane.Cluster("c1", "c1")))
	rec.Expect(t, xdsclient.NotifyResource, 0)
	f.Send(st, xdstest.Response(cdsURL, v2, xdstest.InvalidCluster("c1")))
	rec.Expect(t, xdsclient.NotifyAmbientError, codes.InvalidArgument)
	_, g := only(t, f.fetch())
	for _, v := range []struct{ field, got, digit string }{
		{"version_info", g.GetVersionInfo(), "1"},
		{"error_state.version_info", g.GetErrorState().GetVersionInfo(), "2"},
	} {
		if len(v.got) > 1<<10 || !strings.HasPrefix(v.got, v.digit) || !strings.HasSuffix(v.got, " more bytes]") {
			t.Errorf("%s: %d bytes, ending %q: want the version cut at 1 KiB, marked", v.field, len(v.got), v.got[max(0, len(v.got)-40):])
		}
	}
	if d := g.GetErrorState().GetDetails(); len(d) > 16<<10 || !strings.Contains(d, "unsupported cluster type STATIC") {
		t.Errorf("error_state.details: %d bytes, %.200q...: want at most 16 KiB, with the cause", len(d), d)
	}
}
