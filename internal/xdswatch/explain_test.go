package xdswatch

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/cespare/xxhash/v2"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/xdslens/xdslens/internal/xdswatch/demo/backends"
	"github.com/xdslens/xdslens/internal/xdswatch/demo/controlplane"
)

// explainMethod is the method the explain tests ask about.
const explainMethod = "/grpc.testing.TestService/EmptyCall"

// explainConfigs is listener L's configuration for the explain tests:
// route "canary" (header x-lane: canary, hashed by x-user, a 5s
// max_stream_duration) to cluster canary, then a route splitting the rest
// 80/20 between main and canary; one backend each.
func explainConfigs(t *testing.T) []proto.Message {
	var addrs []string
	for range 2 {
		b, err := backends.Start()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(b.Stop)
		addrs = append(addrs, b.Addr())
	}
	rc := routes("R", routeTo{prefix: "/", header: "x-lane", value: "canary", cluster: "canary"}, routeTo{prefix: "/", cluster: "main"})
	canary := rc.VirtualHosts[0].Routes[0]
	canary.Name = "canary"
	a := canary.GetRoute()
	a.HashPolicy = []*routev3.RouteAction_HashPolicy{{PolicySpecifier: &routev3.RouteAction_HashPolicy_Header_{Header: &routev3.RouteAction_HashPolicy_Header{HeaderName: "x-user"}}}}
	a.MaxStreamDuration = &routev3.RouteAction_MaxStreamDuration{MaxStreamDuration: durationpb.New(5e9)}
	rc.VirtualHosts[0].Routes[1].GetRoute().ClusterSpecifier = &routev3.RouteAction_WeightedClusters{WeightedClusters: &routev3.WeightedCluster{
		Clusters: []*routev3.WeightedCluster_ClusterWeight{{Name: "main", Weight: wrapperspb.UInt32(80)}, {Name: "canary", Weight: wrapperspb.UInt32(20)}},
	}}
	return []proto.Message{controlplane.Listener("L", "R"), rc,
		controlplane.Cluster("main", ""), controlplane.Endpoints("main", addrs[0]),
		controlplane.Cluster("canary", ""), controlplane.Endpoints("canary", addrs[1])}
}

// explain runs xdswatch explain with args after the bootstrap of cp and
// returns its one line and its exit status.
func explain(t *testing.T, cp *controlPlane, args ...string) (string, int) {
	t.Helper()
	p := startRun(t, append([]string{"--bootstrap", cp.bootstrapFile, "--rpc-timeout", "20s"}, args...)...)
	line := p.line(t)
	code := p.exitCode(t)
	if rest := drain(p.stdout.lines); len(rest) > 0 {
		t.Errorf("more than one line: %q", rest)
	}
	return line, code
}

// parseExplain decodes an explain line, refusing unknown fields.
func parseExplain(t *testing.T, line string) explainEvent {
	t.Helper()
	var e explainEvent
	dec := json.NewDecoder(strings.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&e); err != nil {
		t.Fatalf("explain line %q: %v", line, err)
	}
	return e
}

// TestExplainJSON explains two RPCs of listener L: one the canary route
// takes by its header, hashed by x-user; one that goes on to the weighted
// route. The canary's cluster is the one an RPC through xdswatch's channel
// gets.
func TestExplainJSON(t *testing.T) {
	t.Parallel()
	cp := startControlPlane(t, explainConfigs(t)...)

	line, code := explain(t, cp, "--output", "json", "explain", "xds:///L", "--method", explainMethod, "--header", "x-lane=canary", "--header", "X-User=alice")
	e := parseExplain(t, line)
	wantHash := fmt.Sprintf("%#016x", xxhash.Sum64String("alice"))
	if code != exitOK || e.Event != eventExplain || e.Target != "xds:///L" || e.Method != explainMethod || e.VirtualHost != "vh" ||
		e.Route != "canary" || e.Match != `prefix "/", header "x-lane" exact "canary"` || e.RouteShare != nil || e.Outcome != "routed" || e.Error != nil ||
		e.Cluster != "canary" || e.Weights != nil || e.Hash != wantHash || e.Plan.Timeout != "5s" || e.Plan.Retry != nil ||
		len(e.Tried) != 1 || !e.Tried[0].Matched || e.Tried[0].Share != 1 {
		t.Errorf("exit %d, line %s; want route canary to cluster canary, hash %s, timeout 5s", code, line, wantHash)
	}
	if c := e.Clusters["canary"]; len(e.Clusters) != 1 || c.Type != "eds" || c.LBPolicy != "round_robin" {
		t.Errorf("clusters %+v", e.Clusters)
	}

	line, _ = explain(t, cp, "--output", "json", "explain", "xds:///L", "--method", explainMethod, "--header", "x-lane=prod")
	e = parseExplain(t, line)
	if e.Route != "#1" || e.Cluster != "" || e.Weights["main"] != 80 || e.Weights["canary"] != 20 || len(e.Weights) != 2 || e.Hash != "" ||
		len(e.Tried) != 2 || e.Tried[0].Matched || e.Tried[0].Why != `header "x-lane" exact "canary" does not match "prod"` ||
		!strings.Contains(e.Reason, `it draws its cluster at random, by weight: "main" 80/100 (80%)`) {
		t.Errorf("line %s; want route #1, main 80 and canary 20, and why the canary route did not match", line)
	}

	// The route a real RPC takes.
	p := startRun(t, "--bootstrap", cp.bootstrapFile, "--output", "json", "--rpc-interval", "1h", "--rpc-timeout", "20s",
		"--rpc-method", explainMethod, "--rpc-header", "x-lane=canary", "xds:///L")
	p.listening(t)
	if rpc := p.nextOf(t, eventRPC); rpc.Code != "OK" || *rpc.Cluster != "canary" {
		t.Errorf("rpc line %+v, want OK through cluster canary, as explained", rpc)
	}
	p.interrupt(t)
}

// TestExplainText checks the text line: the target, the method, the
// virtual host and the reason, on one line.
func TestExplainText(t *testing.T) {
	t.Parallel()
	cp := startControlPlane(t, explainConfigs(t)...)
	line, code := explain(t, cp, "explain", "xds:///L", "--method", explainMethod)
	want := regexp.MustCompile(`^\d\d:\d\d:\d\d\.\d{3} xds:///L explain /grpc\.testing\.TestService/EmptyCall: virtual host "vh": route #1 \(prefix "/"\) is the first that matches /grpc\.testing\.TestService/EmptyCall; the routes before it do not: route canary \(prefix "/", header "x-lane" exact "canary"\): header "x-lane" exact "canary" does not match: the RPC has no such header; it draws its cluster at random, by weight: "main" 80/100 \(80%\) \(eds round_robin\), "canary" 20/100 \(20%\) \(eds round_robin\)$`)
	if code != exitOK || !want.MatchString(line) {
		t.Errorf("exit %d, line\n%s\nwant it to match\n%s", code, line, want)
	}
}

// TestExplainFailures: a config that fails is its config_error line and
// exit status 1; an RPC that no route takes is explained, with the error
// it fails with; bad command lines are usage errors.
func TestExplainFailures(t *testing.T) {
	t.Parallel()
	cp := startControlPlane(t, append(explainConfigs(t), controlplane.ServerListener("S", "127.0.0.1", 1, "R"))...)
	line, code := explain(t, cp, "--output", "json", "explain", "xds:///S", "--method", explainMethod)
	if e := parseChannelEvent(t, line); code != exitFailure || e.Event != eventConfigError || e.Target != "xds:///S" || !strings.Contains(*e.Message, "not an API listener") {
		t.Errorf("exit %d, line %s; want a config_error line and exit 1", code, line)
	}

	cfgs := explainConfigs(t)
	cfgs[1] = routes("R", routeTo{prefix: "/other/", cluster: "main"})
	cp.set("2", cfgs...)
	line, code = explain(t, cp, "--output", "json", "explain", "xds:///L", "--method", explainMethod)
	e := parseExplain(t, line)
	if code != exitOK || e.Outcome != "no_route" || e.Route != "" || e.Error == nil || e.Error.Code != "UNAVAILABLE" ||
		!strings.Contains(e.Error.Message, `no route of virtual host "vh" in RDS resource "R" matches the RPC`) || len(e.Tried) != 1 || e.Tried[0].Why != "the path does not match" {
		t.Errorf("exit %d, line %s; want no route, and the error such an RPC fails with", code, line)
	}

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"explain", "xds:///L"}, "--method /SERVICE/METHOD is required"},
		{[]string{"explain", "xds:///L", "--method", "Check"}, `--method "Check": want /SERVICE/METHOD`},
		{[]string{"explain", "--method", "/a/b"}, "explain: want one xds:///LISTENER"},
		{[]string{"explain", "xds:///L", "xds:///M", "--method", "/a/b"}, "explain: want one xds:///LISTENER"},
		{[]string{"explain", "cds:c", "--method", "/a/b"}, "explain: want one xds:///LISTENER"},
		{[]string{"explain", "xds:///L", "--method", "/a/b", "--header", "grpc-x=1"}, "set by gRPC itself"},
		{[]string{"explain", "xds:///L", "--method", "/a/b", "--stdin"}, "explain: --stdin does not apply"},
		{[]string{"explain", "xds:///L", "--method", "/a/b", "--rpc-interval", "1s"}, "explain: --rpc-interval does not apply"},
		{[]string{"--method", "/a/b", "xds:///L"}, "--method is a flag of xdswatch explain"},
		{[]string{"--header", "a=b", "cds:c"}, "--header is a flag of xdswatch explain"},
	} {
		if _, err := parseArgs(tc.args); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("parseArgs(%q) = %v, want an error containing %q", tc.args, err, tc.want)
		}
	}
	if cfg, err := parseArgs([]string{"--rpc-timeout", "3s", "explain", "xds:///L", "--method", "/a/b", "--header", "k=v"}); err != nil ||
		!cfg.explain.on || cfg.explain.method != "/a/b" || cfg.explain.headers.md.Get("k")[0] != "v" || len(cfg.targets) != 1 || cfg.rpc.timeout != 3e9 {
		t.Errorf("parseArgs(explain ...) = %+v, %v", cfg, err)
	}
}

// TestExplainAuthorityEncoded explains an RPC of a channel whose listener
// name has a byte an authority may not hold: the virtual host is chosen
// by the authority gRPC gives the channel, percent-encoded ("a%20b"), as
// an RPC through xdswatch's channel shows.
func TestExplainAuthorityEncoded(t *testing.T) {
	t.Parallel()
	configs := explainConfigs(t)
	rc := routes("R", routeTo{prefix: "/", cluster: "main"})
	rc.VirtualHosts[0].Name = "any"
	encoded := routes("R", routeTo{prefix: "/", cluster: "canary"}).VirtualHosts[0]
	encoded.Name, encoded.Domains = "encoded", []string{"a%20b"}
	rc.VirtualHosts = append(rc.VirtualHosts, encoded)
	configs[0], configs[1] = controlplane.Listener("a b", "R"), rc
	cp := startControlPlane(t, configs...)

	line, code := explain(t, cp, "--output", "json", "explain", "xds:///a%20b", "--method", explainMethod)
	if e := parseExplain(t, line); code != exitOK || e.VirtualHost != "encoded" || e.Cluster != "canary" {
		t.Errorf("exit %d, line %s; want virtual host encoded, cluster canary", code, line)
	}
	p := startRun(t, "--bootstrap", cp.bootstrapFile, "--output", "json", "--rpc-interval", "1h", "--rpc-timeout", "20s",
		"--rpc-method", explainMethod, "xds:///a%20b")
	p.listening(t)
	if rpc := p.nextOf(t, eventRPC); rpc.Code != "OK" || *rpc.Cluster != "canary" {
		t.Errorf("rpc line %+v, want OK through cluster canary, as explained", rpc)
	}
	p.interrupt(t)
}
