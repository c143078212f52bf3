package demo

import (
	"context"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
	"google.golang.org/grpc/codes"

	"github.com/xdslens/xdslens/internal/testing/testmain"
	"github.com/xdslens/xdslens/xdsclient"
	"github.com/xdslens/xdslens/xdsclient/xdsresource"
	"github.com/xdslens/xdslens/xdsserver"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m, goleak.Cleanup(testmain.Exit)) }

// TestStart starts the demo with and without the tour's servers: the
// bootstrap names the control plane (and the secondary, second, for the
// tour), the resources are the demo's five, and Stop ends every server
// (goleak checks).
func TestStart(t *testing.T) {
	for _, tour := range []bool{false, true} {
		d, err := Start(t.Context(), []string{"127.0.0.1:1"}, tour)
		if err != nil {
			t.Fatalf("Start(tour %v): %v", tour, err)
		}
		servers := d.Bootstrap().Servers
		want := []string{d.Addr()}
		if tour {
			want = append(want, d.FallbackAddr())
		}
		if len(servers) != len(want) {
			t.Errorf("tour %v: %d servers in the bootstrap, want %d", tour, len(servers), len(want))
		}
		for i := range min(len(servers), len(want)) {
			if servers[i].URI != want[i] {
				t.Errorf("tour %v: server %d is %q, want %q", tour, i, servers[i].URI, want[i])
			}
		}
		if got := (d.FallbackAddr() != ""); got != tour {
			t.Errorf("tour %v: FallbackAddr %q", tour, d.FallbackAddr())
		}
		var names []string
		for _, r := range d.Resources() {
			names = append(names, r.Type.ShortName()+":"+r.Name)
		}
		wantNames := "lds:demo rds:demo-route cds:demo-cluster eds:demo-cluster lds:grpc/server?xds.resource.listening_address=127.0.0.1:1"
		if got := strings.Join(names, " "); got != wantNames {
			t.Errorf("tour %v: resources %s, want %s", tour, got, wantNames)
		}
		if try := d.ServeTry("127.0.0.1:1"); !strings.Contains(try, "-servername "+ServerName+" 127.0.0.1:1 ") {
			t.Errorf("ServeTry: %s", try)
		}
		d.Stop()
	}
}

// TestPlan: the tour has its fourteen steps, each waits for a goal at
// least, the first and the server's last with the xDS-enabled server
// SERVING, the resilience step for one endpoint ejected and the last for
// none, with RPCs in one attempt without fault; and every goal's cache
// holds the demo's resources.
func TestPlan(t *testing.T) {
	specs, steps, err := Plan("127.0.0.1:1", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if len(steps) != 14 {
		t.Fatalf("%d steps, want 14", len(steps))
	}
	byTitle := map[string]Step{}
	for i, s := range steps {
		byTitle[s.Title] = s
		if len(s.Goals) == 0 {
			t.Errorf("step %d (%s) has no goal", i+1, s.Title)
		}
		for _, g := range s.Goals {
			for _, r := range specs {
				if _, ok := g.Cache[keyOf(r)]; !ok {
					t.Errorf("step %d (%s): a goal without %v", i+1, s.Title, keyOf(r))
				}
			}
		}
	}
	for _, title := range []string{"start", "serving again"} {
		if g := byTitle[title].Goals; len(g) == 0 || g[0].Serving == nil || *g[0].Serving != xdsserver.ModeServing {
			t.Errorf("step %s: goals %+v, want SERVING", title, g)
		}
	}
	for _, tc := range []struct {
		title   string
		ejected int
		plain   bool
	}{{"resilience", 1, false}, {steps[len(steps)-1].Title, 0, true}} {
		g := byTitle[tc.title].Goals
		if len(g) == 0 || g[0].Ejected == nil || *g[0].Ejected != tc.ejected || g[0].RPC.Plain != tc.plain {
			t.Errorf("step %s: goals %+v, want %d ejected, plain RPCs %v", tc.title, g, tc.ejected, tc.plain)
		}
	}
}

// TestChanges: what the tour says changed between two goals, grouped by
// the state reached, with every demo resource named as such.
func TestChanges(t *testing.T) {
	specs, _, err := Plan("127.0.0.1:1", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	addr := func(r Role) string { return string(r) + ":1" }
	v1 := allAt(specs, "1", Primary)
	cds := xdsresource.ClusterType
	for _, tc := range []struct {
		name       string
		prev, next Cache
		want       string
	}{
		{"from nothing", nil, v1, "every demo resource ACKED, using version 1, from the primary server primary:1"},
		{"nothing", v1, v1, "no change"},
		{"one NACK", allAt(specs, "2", Primary), allAt(specs, "3", Primary).with(cds, Cluster, held(xdsclient.StateNACKed, "2", Primary)),
			"cds demo-cluster NACKED, using version 2; every other demo resource ACKED, using version 3"},
		{"fallback", v1, allAt(specs, "1", Secondary), "every demo resource ACKED, using version 1, from the secondary server secondary:1"},
		{"a new entry", v1, v1.with(cds, TimeoutCluster, empty(xdsclient.StateRequested)), "cds tour-timeout REQUESTED"},
		{"an entry gone", v1.with(cds, TimeoutCluster, empty(xdsclient.StateRequested)), allAt(specs, "2", Primary),
			"every demo resource ACKED, using version 2; cds tour-timeout no longer in the cache"},
		{"only an entry gone", v1.with(cds, TimeoutCluster, empty(xdsclient.StateRequested)), v1, "cds tour-timeout no longer in the cache"},
	} {
		if got := changes(tc.prev, tc.next, specs, addr); got != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.name, got, tc.want)
		}
	}
}

// TestCacheMatches: a cache matches the client's entries when they are
// the same resources, each in the same state, holding the same version
// from the same server.
func TestCacheMatches(t *testing.T) {
	addr := func(r Role) string { return string(r) + ":1" }
	k := Key{TypeURL: xdsresource.ClusterType.TypeURL(), Name: Cluster}
	want := Cache{k: held(xdsclient.StateACKed, "2", Primary)}
	entry := xdsclient.EntrySnapshot{State: xdsclient.StateACKed, Cached: true, Version: "2", ResourceServer: "primary:1"}
	if !want.matches(map[Key]xdsclient.EntrySnapshot{k: entry}, addr) {
		t.Error("the same entry does not match")
	}
	for name, e := range map[string]xdsclient.EntrySnapshot{
		"another state":   {State: xdsclient.StateNACKed, Cached: true, Version: "2", ResourceServer: "primary:1"},
		"another version": {State: xdsclient.StateACKed, Cached: true, Version: "3", ResourceServer: "primary:1"},
		"another server":  {State: xdsclient.StateACKed, Cached: true, Version: "2", ResourceServer: "secondary:1"},
		"no resource":     {State: xdsclient.StateACKed},
	} {
		if want.matches(map[Key]xdsclient.EntrySnapshot{k: e}, addr) {
			t.Errorf("%s matches", name)
		}
	}
	if want.matches(map[Key]xdsclient.EntrySnapshot{k: entry, {TypeURL: k.TypeURL, Name: "other"}: entry}, addr) {
		t.Error("an entry more matches")
	}
}

// TestWithGoalReached: the func travels in the context the tour runs
// with.
func TestWithGoalReached(t *testing.T) {
	called := false
	ctx := WithGoalReached(context.Background(), func(context.Context) { called = true })
	f, ok := ctx.Value(goalSeenKey{}).(func(context.Context))
	if !ok {
		t.Fatal("no func in the context")
	}
	f(ctx)
	if !called {
		t.Error("the func given is not the one in the context")
	}
}

// TestRPCGoalMatches: a goal matches the code and the names it announces;
// a plain one only RPCs of one attempt without fault.
func TestRPCGoalMatches(t *testing.T) {
	ok := &RPC{Target: Target, Code: codes.OK, Attempts: 1}
	retried := &RPC{Target: Target, Code: codes.OK, Attempts: 2, Fault: "delay"}
	delayed := &RPC{Target: Target, Code: codes.OK, Attempts: 1, Fault: "delay"}
	failed := &RPC{Target: Target, Code: codes.Unavailable, Attempts: 1, Message: `cds "tour-missing": does not exist (node "xdswatch-demo")`}
	for _, tc := range []struct {
		goal RPCGoal
		rpc  *RPC
		want bool
	}{
		{RPCGoal{Code: codes.OK}, nil, false},
		{RPCGoal{Code: codes.OK}, ok, true},
		{RPCGoal{Code: codes.OK}, retried, true},
		{RPCGoal{Code: codes.OK, Plain: true}, ok, true},
		{RPCGoal{Code: codes.OK, Plain: true}, retried, false},
		{RPCGoal{Code: codes.OK, Plain: true}, delayed, false},
		{RPCGoal{Code: codes.OK}, failed, false},
		{RPCGoal{Code: codes.Unavailable, Names: []string{`"tour-missing"`, `"xdswatch-demo"`}}, failed, true},
		{RPCGoal{Code: codes.Unavailable, Names: []string{`"demo-cluster"`}}, failed, false},
	} {
		if got := tc.goal.Matches(tc.rpc); got != tc.want {
			t.Errorf("%v matches %+v: %v, want %v", tc.goal, tc.rpc, got, tc.want)
		}
	}
}
