package xdswatch

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/xdslens/xdslens/xdsclient/xdsresource/lbpolicy"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/xdslens/xdslens/internal/xdswatch/demo"
	"github.com/xdslens/xdslens/internal/xdswatch/demo/backends"
	"github.com/xdslens/xdslens/internal/xdswatch/demo/controlplane"
	"github.com/xdslens/xdslens/xdsclient/xdsconfig"
	"github.com/xdslens/xdslens/xdsclient/xdsresource"
)

// channelEvent is a JSON line of an xds:/// channel: config, config_error
// or rpc, with the fields DESIGN.md gives them.
type channelEvent struct {
	TS          string                     `json:"ts"`
	Event       string                     `json:"event"`
	Target      string                     `json:"target"`
	Listener    string                     `json:"listener"`
	RouteConfig *string                    `json:"route_config"`
	VirtualHost string                     `json:"virtual_host"`
	Clusters    map[string]json.RawMessage `json:"clusters"`
	Code        string                     `json:"code"`
	Message     *string                    `json:"message"`
	Method      string                     `json:"method"`
	Peer        *string                    `json:"peer"`
	Cluster     *string                    `json:"cluster"`
	Attempts    int                        `json:"attempts"`
	Fault       string                     `json:"fault"`
	Endpoint    string                     `json:"endpoint"`
	Ejected     bool                       `json:"ejected"`
	Algorithm   string                     `json:"algorithm"`
}

// channelKeys are the keys of each channel line, in order.
var channelKeys = map[string][]string{
	eventConfig:      {"ts", "event", "target", "listener", "route_config", "virtual_host", "clusters"},
	eventConfigError: {"ts", "event", "target", "code", "message"},
	eventRPC:         {"ts", "event", "target", "method", "code", "message", "peer", "cluster", "attempts"},
	eventEjection:    {"ts", "event", "target", "cluster", "endpoint", "ejected", "algorithm"},
}

// channelEvent returns the next standard output line, which must be a
// channel line with exactly its keys, in order.
func (p *proc) channelEvent(t *testing.T) channelEvent {
	t.Helper()
	return parseChannelEvent(t, p.line(t))
}

// parseChannelEvent decodes a channel line and checks its keys and time.
func parseChannelEvent(t *testing.T, line string) channelEvent {
	t.Helper()
	var e channelEvent
	dec := json.NewDecoder(strings.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&e); err != nil {
		t.Fatalf("line %s: %v", line, err)
	}
	want := channelKeys[e.Event]
	if e.Event == eventRPC && e.Fault != "" {
		want = append(slices.Clip(want), "fault")
	}
	if !slices.Equal(topKeys(t, line), want) {
		t.Fatalf("line %s: keys %q, want %q", line, topKeys(t, line), want)
	}
	if _, err := time.Parse(time.RFC3339Nano, e.TS); err != nil {
		t.Errorf("line %s: ts: %v", line, err)
	}
	return e
}

// nextOf returns the next channel line of event, skipping the others
// (rpc lines among config lines, say).
func (p *proc) nextOf(t *testing.T, event string) channelEvent {
	t.Helper()
	for {
		if e := p.channelEvent(t); e.Event == event {
			return e
		}
	}
}

// The resources of the channel tests.

// socketAddr is the address addr ("ip:port").
func socketAddr(addr string) *corev3.Address {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		panic(err)
	}
	p, _ := strconv.Atoi(port)
	return &corev3.Address{Address: &corev3.Address_SocketAddress{SocketAddress: &corev3.SocketAddress{
		Address: host, PortSpecifier: &corev3.SocketAddress_PortValue{PortValue: uint32(p)},
	}}}
}

// endpointAt is an endpoint of health h.
type endpointAt struct {
	addr string
	h    corev3.HealthStatus
}

// prioritized returns endpoints resource name with one locality per
// priority, in order.
func prioritized(name string, priorities ...[]endpointAt) *endpointv3.ClusterLoadAssignment {
	cla := &endpointv3.ClusterLoadAssignment{ClusterName: name}
	for i, eps := range priorities {
		l := &endpointv3.LocalityLbEndpoints{
			Locality:            &corev3.Locality{Zone: fmt.Sprintf("z%d", i)},
			LoadBalancingWeight: wrapperspb.UInt32(1),
			Priority:            uint32(i),
		}
		for _, ep := range eps {
			l.LbEndpoints = append(l.LbEndpoints, &endpointv3.LbEndpoint{
				HostIdentifier: &endpointv3.LbEndpoint_Endpoint{Endpoint: &endpointv3.Endpoint{Address: socketAddr(ep.addr)}},
				HealthStatus:   ep.h,
			})
		}
		cla.Endpoints = append(cla.Endpoints, l)
	}
	return cla
}

// logicalDNS returns a LOGICAL_DNS cluster of addr, "host:port".
func logicalDNS(name, addr string) *clusterv3.Cluster {
	return &clusterv3.Cluster{
		Name:                 name,
		ClusterDiscoveryType: &clusterv3.Cluster_Type{Type: clusterv3.Cluster_LOGICAL_DNS},
		LoadAssignment: &endpointv3.ClusterLoadAssignment{ClusterName: name, Endpoints: []*endpointv3.LocalityLbEndpoints{{
			LbEndpoints: []*endpointv3.LbEndpoint{{HostIdentifier: &endpointv3.LbEndpoint_Endpoint{Endpoint: &endpointv3.Endpoint{Address: socketAddr(addr)}}}},
		}}},
	}
}

// routeTo is one route: RPCs whose path starts with prefix (and, when
// header is set, that carry header: value) go to cluster.
type routeTo struct {
	prefix, header, value, cluster string
}

// routes returns route configuration name, with one virtual host "vh" for
// every domain.
func routes(name string, rs ...routeTo) *routev3.RouteConfiguration {
	vh := &routev3.VirtualHost{Name: "vh", Domains: []string{"*"}}
	for _, r := range rs {
		m := &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: r.prefix}}
		if r.header != "" {
			m.Headers = []*routev3.HeaderMatcher{{Name: r.header, HeaderMatchSpecifier: &routev3.HeaderMatcher_StringMatch{
				StringMatch: &matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_Exact{Exact: r.value}},
			}}}
		}
		vh.Routes = append(vh.Routes, &routev3.Route{Match: m, Action: &routev3.Route_Route{Route: &routev3.RouteAction{
			ClusterSpecifier: &routev3.RouteAction_Cluster{Cluster: r.cluster},
		}}})
	}
	return &routev3.RouteConfiguration{Name: name, VirtualHosts: []*routev3.VirtualHost{vh}}
}

// mixedConfig is listener L's configuration with every kind of cluster
// slot: c1 (EDS, two priorities, endpoints of every usable and unusable
// health), agg (an aggregate of c2 and dns), c2 (EDS), dns (LOGICAL_DNS),
// empty (EDS with no endpoints) and missing (no Cluster resource).
func mixedConfig(dnsAddr string) []proto.Message {
	return []proto.Message{
		controlplane.Listener("L", "R"),
		routes("R",
			routeTo{prefix: "/a", cluster: "c1"}, routeTo{prefix: "/b", cluster: "agg"},
			routeTo{prefix: "/c", cluster: "empty"}, routeTo{prefix: "/d", cluster: "missing"}),
		controlplane.Cluster("c1", ""),
		prioritized("c1",
			[]endpointAt{{"127.0.0.1:13", corev3.HealthStatus_UNHEALTHY}, {"127.0.0.1:12", corev3.HealthStatus_UNKNOWN},
				{"127.0.0.1:11", corev3.HealthStatus_HEALTHY}, {"127.0.0.1:14", corev3.HealthStatus_DRAINING}},
			[]endpointAt{{"127.0.0.1:21", corev3.HealthStatus_HEALTHY}}),
		controlplane.AggregateCluster("agg", "c2", "dns"),
		controlplane.Cluster("c2", ""),
		controlplane.Endpoints("c2", "127.0.0.1:31"),
		logicalDNS("dns", dnsAddr),
		controlplane.Cluster("empty", ""),
		&endpointv3.ClusterLoadAssignment{ClusterName: "empty"},
	}
}

// nodeNote is the resolution note of a cluster with no ambient error in
// the tests' bootstraps; emptyNote (JSON-escaped) that of an EDS resource
// without endpoints.
const (
	nodeNote  = "xDS node ID:" + testNodeID
	emptyNote = `EDS resource \"empty\": contains no localities (node ID \"` + testNodeID + `\")`
)

// missingTimeout is the --resource-timeout of the tests in which some
// resources must arrive and others time out: long enough for a control
// plane in this process, slowed by the tests that run beside it, to
// answer first (it answers in milliseconds; a test waits for the timer).
const missingTimeout = "3s"

// TestChannelConfigJSON checks a config line field by field: the
// listener, its route configuration and virtual host, and one slot of
// each kind (EDS with priorities, an aggregate and its leaves, LOGICAL_DNS,
// EDS with no endpoints, a cluster that does not exist, with the code the
// client reported).
func TestChannelConfigJSON(t *testing.T) {
	t.Parallel()
	cp := startControlPlane(t, mixedConfig("127.0.0.1:41")...)
	p := startRun(t, "--bootstrap", cp.bootstrapFile, "--output", "json", "--resource-timeout", missingTimeout, "xds:///L")
	p.listening(t)
	e := p.channelEvent(t)
	if e.Event != eventConfig || e.Target != "xds:///L" || e.Listener != "L" || e.RouteConfig == nil || *e.RouteConfig != "R" || e.VirtualHost != "vh" {
		t.Fatalf("config line %+v: want target xds:///L, listener L, route_config R, virtual_host vh", e)
	}
	want := map[string]string{
		"c1":    `{"type":"eds","lb_policy":"round_robin","priorities":[["127.0.0.1:11","127.0.0.1:12"],["127.0.0.1:21"]],"resolution_note":"` + nodeNote + `"}`,
		"agg":   `{"type":"aggregate","leaves":["c2","dns"]}`,
		"c2":    `{"type":"eds","lb_policy":"round_robin","priorities":[["127.0.0.1:31"]],"resolution_note":"` + nodeNote + `"}`,
		"dns":   `{"type":"logical_dns","lb_policy":"round_robin","priorities":[["127.0.0.1:41"]],"resolution_note":"` + nodeNote + `"}`,
		"empty": `{"type":"eds","lb_policy":"round_robin","priorities":[],"resolution_note":"` + emptyNote + `"}`,
	}
	for name, w := range want {
		if got := string(e.Clusters[name]); got != w {
			t.Errorf("cluster %s = %s, want %s", name, got, w)
		}
	}
	var missing struct {
		Error struct{ Code, Message string } `json:"error"`
	}
	dec := json.NewDecoder(strings.NewReader(string(e.Clusters["missing"])))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&missing); err != nil {
		t.Errorf("cluster missing = %s: %v", e.Clusters["missing"], err)
	}
	if m := missing.Error.Message; missing.Error.Code != "NOT_FOUND" || !strings.Contains(m, `CDS resource "missing"`) || !strings.Contains(m, `node ID "`+testNodeID+`"`) {
		t.Errorf("cluster missing = %s, want error NOT_FOUND naming the resource and the node ID", e.Clusters["missing"])
	}
	if len(e.Clusters) != len(want)+1 {
		t.Errorf("clusters %q, want %d slots", slices.Sorted(mapsKeys(e.Clusters)), len(want)+1)
	}

	// A change of an endpoint is a new line; a route configuration inline
	// in the listener is "".
	inline := routes("R", routeTo{prefix: "", cluster: "c2"})
	cp.set("2", controlplane.ListenerInlineRoute("L", inline), controlplane.Cluster("c2", ""), controlplane.Endpoints("c2", "127.0.0.1:32"))
	c2 := `{"type":"eds","lb_policy":"round_robin","priorities":[["127.0.0.1:32"]],"resolution_note":"` + nodeNote + `"}`
	for {
		// The listener and the endpoints may come in either order.
		e = p.nextOf(t, eventConfig)
		if *e.RouteConfig == "" && string(e.Clusters["c2"]) == c2 {
			break
		}
	}
	if len(e.Clusters) != 1 || e.VirtualHost != "vh" {
		t.Errorf("clusters after version 2 = %s, virtual host %q, want only c2 in vh", e.Clusters, e.VirtualHost)
	}
	p.interrupt(t)
}

// mapsKeys returns the keys of m.
func mapsKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// textTS matches the time that starts a text line.
var textTS = regexp.MustCompile(`^\d\d:\d\d:\d\d\.\d{3} `)

// textLine returns the next standard output line without its time.
func (p *proc) textLine(t *testing.T) string {
	t.Helper()
	l := p.line(t)
	if !textTS.MatchString(l) {
		t.Fatalf("text line %q does not start with a time", l)
	}
	return textTS.ReplaceAllString(l, "")
}

// TestChannelConfigText checks the text line of the same config.
func TestChannelConfigText(t *testing.T) {
	t.Parallel()
	cp := startControlPlane(t, mixedConfig("127.0.0.1:41")...)
	p := startRun(t, "--bootstrap", cp.bootstrapFile, "--resource-timeout", missingTimeout, "xds:///L")
	got := p.textLine(t)
	wantRE := regexp.MustCompile(`^xds:///L config: listener L, route config R, virtual host vh; ` +
		`cluster agg: aggregate of c2, dns; ` +
		`cluster c1: eds round_robin \[127\.0\.0\.1:11 127\.0\.0\.1:12\] \[127\.0\.0\.1:21\], note: ` + nodeNote + `; ` +
		`cluster c2: eds round_robin \[127\.0\.0\.1:31\], note: ` + nodeNote + `; ` +
		`cluster dns: logical_dns round_robin \[127\.0\.0\.1:41\], note: ` + nodeNote + `; ` +
		`cluster empty: eds round_robin, no endpoints, note: ` + regexp.QuoteMeta(strings.ReplaceAll(emptyNote, `\"`, `"`)) + `; ` +
		`cluster missing: ERROR NOT_FOUND: CDS resource "missing": .*node ID "` + testNodeID + `".*$`)
	if !wantRE.MatchString(got) {
		t.Errorf("config line\n%s\ndoes not match\n%v", got, wantRE)
	}
	p.interruptClean(t)
}

// TestChannelConfigError checks config_error lines, JSON and text: a
// listener that does not exist, and a route configuration that does not,
// whose message then names the listener too; both name the node ID.
func TestChannelConfigError(t *testing.T) {
	t.Parallel()
	cp := startControlPlane(t, controlplane.Listener("L", "gone"))
	p := startRun(t, "--bootstrap", cp.bootstrapFile, "--output", "json", "--resource-timeout", missingTimeout, "xds:///nope", "xds:///L")
	p.listening(t)
	got := map[string]channelEvent{}
	for range 2 {
		e := p.channelEvent(t)
		got[e.Target] = e
	}
	for target, names := range map[string][]string{
		"xds:///nope": {`LDS resource "nope"`},
		"xds:///L":    {`listener "L": `, `RDS resource "gone"`},
	} {
		e := got[target]
		if e.Event != eventConfigError || e.Code != "NOT_FOUND" || e.Message == nil {
			t.Errorf("%s: %+v, want a config_error NOT_FOUND", target, e)
			continue
		}
		for _, n := range append(names, `node ID "`+testNodeID+`"`) {
			if !strings.Contains(*e.Message, n) {
				t.Errorf("%s: message %q does not name %q", target, *e.Message, n)
			}
		}
	}
	p.interrupt(t)

	p = startRun(t, "--bootstrap", cp.bootstrapFile, "--resource-timeout", "200ms", "xds:///nope")
	if l, want := p.textLine(t), `xds:///nope config ERROR NOT_FOUND: LDS resource "nope": `; !strings.HasPrefix(l, want) || !strings.Contains(l, testNodeID) {
		t.Errorf("text line %q, want %q... naming the node ID", l, want)
	}
	p.interruptClean(t)
}

// TestChannelRPCsThroughDemo sends RPCs through xds:///demo of the demo:
// each rpc line names the method, the code OK, the demo cluster and a
// backend, and the RPCs alternate between the demo's two backends.
func TestChannelRPCsThroughDemo(t *testing.T) {
	t.Parallel()
	// The first RPC waits for the config, however slow it is to come.
	p := startRun(t, "--output", "json", "--csds-addr", "", "--metrics-addr", "", "--rpc-interval", "20ms", "--rpc-timeout", "30s", "xds:///demo")
	p.listening(t)
	cfg := p.channelEvent(t)
	var slot struct{ Priorities [][]string }
	if err := json.Unmarshal(cfg.Clusters[demo.Cluster], &slot); err != nil || cfg.Event != eventConfig || len(slot.Priorities) != 1 || len(slot.Priorities[0]) != 2 {
		t.Fatalf("first line %+v (%v), want the demo's config with two endpoints", cfg, err)
	}
	addrs := slot.Priorities[0]
	okRPC := func(e channelEvent) bool {
		return e.Event == eventRPC && e.Target == "xds:///demo" && e.Method == defaultRPCMethod && e.Code == "OK" &&
			*e.Message == "" && *e.Cluster == demo.Cluster && slices.Contains(addrs, *e.Peer)
	}
	var peers []string
	for len(peers) < 12 {
		e := p.channelEvent(t)
		if !okRPC(e) {
			t.Fatalf("line %+v, want an rpc line: OK from one of %q in cluster %s", e, addrs, demo.Cluster)
		}
		peers = append(peers, *e.Peer)
	}
	// Round robin: once both backends are connected, they take turns.
	first := slices.IndexFunc(peers, func(p string) bool { return p != peers[0] })
	if first < 0 {
		t.Fatalf("every RPC went to %s", peers[0])
	}
	for i := first + 1; i < len(peers); i++ {
		if peers[i] == peers[i-1] {
			t.Errorf("RPCs %d and %d both went to %s: %q", i, i+1, peers[i], peers)
		}
	}
	// The RPCs go on until the signal: what follows is more of them.
	p.interrupt(t)
	for _, l := range drain(p.stdout.lines) {
		if e := parseChannelEvent(t, l); !okRPC(e) {
			t.Errorf("line %+v after the RPCs read, want more of them", e)
		}
	}
	if lines := drain(p.stderr.lines); len(lines) > 0 {
		t.Errorf("more stderr: %q", lines)
	}
}

// TestChannelRPCText checks the text lines of RPCs: one that succeeds
// and one that fails before reaching a cluster.
func TestChannelRPCText(t *testing.T) {
	t.Parallel()
	p := startRun(t, "--csds-addr", "", "--metrics-addr", "", "--rpc-interval", "1h", "--rpc-timeout", "30s", "xds:///demo")
	if l := p.textLine(t); !strings.HasPrefix(l, "xds:///demo config: listener demo, ") {
		t.Errorf("line %q, want the config", l)
	}
	okRE := regexp.MustCompile(`^xds:///demo rpc /grpc\.health\.v1\.Health/Check: OK, cluster demo-cluster, peer 127\.0\.0\.1:\d+$`)
	if l := p.textLine(t); !okRE.MatchString(l) {
		t.Errorf("line %q does not match %v", l, okRE)
	}
	p.interrupt(t)

	cp := startControlPlane(t)
	p = startRun(t, "--bootstrap", cp.bootstrapFile, "--rpc-interval", "1h", "--rpc-timeout", "100ms", "xds:///absent")
	if l, want := p.textLine(t), "xds:///absent rpc /grpc.health.v1.Health/Check: DEADLINE_EXCEEDED, no cluster, no peer: "; !strings.HasPrefix(l, want) {
		t.Errorf("line %q, want %q...", l, want)
	}
	p.interruptClean(t)
}

// TestChannelRPCHeaders: --rpc-header is sent with every RPC, as metadata
// that a route matches: with the header the RPCs go to the cluster of the
// route that wants it, and its backend.
func TestChannelRPCHeaders(t *testing.T) {
	t.Parallel()
	var bs []*backends.Backend
	for range 2 {
		b, err := backends.Start()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(b.Stop)
		bs = append(bs, b)
	}
	cp := startControlPlane(t,
		controlplane.Listener("L", "R"),
		routes("R", routeTo{prefix: "/", header: "x-lane", value: "canary", cluster: "canary"}, routeTo{prefix: "/", cluster: "main"}),
		controlplane.Cluster("main", ""), controlplane.Endpoints("main", bs[0].Addr()),
		controlplane.Cluster("canary", ""), controlplane.Endpoints("canary", bs[1].Addr()),
	)
	for _, tc := range []struct {
		name    string
		headers []string
		cluster string
		backend string
	}{
		{"without the header", nil, "main", bs[0].Addr()},
		{"with the header", []string{"--rpc-header", "X-Lane=canary", "--rpc-header", "x-other=1"}, "canary", bs[1].Addr()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"--bootstrap", cp.bootstrapFile, "--output", "json", "--rpc-interval", "1h", "--rpc-timeout", "10s",
				"--rpc-method", "/grpc.testing.TestService/EmptyCall"}, tc.headers...)
			p := startRun(t, append(args, "xds:///L")...)
			p.listening(t)
			e := p.nextOf(t, eventRPC)
			if e.Code != "OK" || *e.Cluster != tc.cluster || *e.Peer != tc.backend || e.Method != "/grpc.testing.TestService/EmptyCall" {
				t.Errorf("rpc line %+v, want OK from %s in cluster %s", e, tc.backend, tc.cluster)
			}
			p.interrupt(t)
		})
	}
}

// TestChannelRPCBeforeConfig: an RPC made before the channel has a config
// waits for it, up to --rpc-timeout: it fails DEADLINE_EXCEEDED, reaching
// no cluster and no backend, no sooner than the timeout when no config
// comes, and succeeds when the config comes in time.
func TestChannelRPCBeforeConfig(t *testing.T) {
	t.Parallel()
	b, err := backends.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Stop)
	cp := startControlPlane(t)
	const timeout = 300 * time.Millisecond
	start := time.Now()
	p := startRun(t, "--bootstrap", cp.bootstrapFile, "--output", "json", "--resource-timeout", "1h",
		"--rpc-interval", "1h", "--rpc-timeout", timeout.String(), "xds:///L")
	p.listening(t)
	e := p.channelEvent(t)
	if e.Event != eventRPC || e.Code != "DEADLINE_EXCEEDED" || *e.Peer != "" || *e.Cluster != "" {
		t.Errorf("line %+v, want an rpc line DEADLINE_EXCEEDED with no peer and no cluster", e)
	}
	if d := time.Since(start); d < timeout {
		t.Errorf("the RPC failed after %v, before --rpc-timeout %v", d, timeout)
	}
	p.interruptClean(t)

	p = startRun(t, "--bootstrap", cp.bootstrapFile, "--output", "json", "--resource-timeout", "1h",
		"--rpc-interval", "1h", "--rpc-timeout", "30s", "xds:///L")
	p.listening(t)
	cp.set("2", controlplane.Listener("L", "R"), controlplane.RouteConfig("R", []string{"*"}, "c"),
		controlplane.Cluster("c", ""), controlplane.Endpoints("c", b.Addr()))
	// The config line, then the line of the RPC that waited for it
	// (although the channel is given the config before its hook reports
	// it, and the RPC goes on at once).
	if e := p.channelEvent(t); e.Event != eventConfig {
		t.Fatalf("line %+v, want the config", e)
	}
	if e := p.channelEvent(t); e.Event != eventRPC || e.Code != "OK" || *e.Peer != b.Addr() || *e.Cluster != "c" {
		t.Fatalf("line %+v, want the first RPC (which waited for the config) OK from %s", e, b.Addr())
	}
	p.interruptClean(t)
}

// TestChannelStdin starts and closes channels with +xds:/// and -xds:///
// on standard input.
func TestChannelStdin(t *testing.T) {
	t.Parallel()
	b, err := backends.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Stop)
	cp := startControlPlane(t, controlplane.Listener("L", "R"), controlplane.RouteConfig("R", []string{"*"}, "c"),
		controlplane.Cluster("c", ""), controlplane.Endpoints("c", b.Addr()))
	// The first RPC waits for the config, however slow it is to come.
	p := startRun(t, "--bootstrap", cp.bootstrapFile, "--output", "json", "--stdin", "--rpc-interval", "20ms", "--rpc-timeout", "30s")
	p.listening(t)
	p.send(t, "+xds:///L")
	if e := p.channelEvent(t); e.Event != eventConfig || e.Target != "xds:///L" {
		t.Fatalf("line %+v, want the config of xds:///L", e)
	}
	if e := p.channelEvent(t); e.Event != eventRPC || e.Target != "xds:///L" || e.Code != "OK" {
		t.Fatalf("line %+v, want an RPC through xds:///L", e)
	}
	// Close it. Commands run in order: the error line for the second
	// close shows that the first is done, and no line of it follows.
	p.send(t, "-xds:///L")
	p.send(t, "-xds:///L")
	if l := p.errLine(t); !strings.Contains(l, `"-xds:///L": no channel to xds:///L`) {
		t.Fatalf("stderr line %q, want no channel to close", l)
	}
	p.send(t, "+xds://")
	if l := p.errLine(t); !strings.Contains(l, `"+xds://"`) {
		t.Fatalf("stderr line %q, want an error about +xds://", l)
	}
	// The lines of RPCs made before the close may still be on their way;
	// none may follow the cluster, nor the cluster's second watch.
	p.send(t, "+cds:c")
	for {
		l := p.line(t)
		if strings.Contains(l, `"event":"rpc"`) {
			parseChannelEvent(t, l)
			continue
		}
		if e := parseEvent(t, l); e.Event != eventResource || e.Name != "c" {
			t.Fatalf("after -xds:///L and +cds:c: %v, want the cluster", e)
		}
		break
	}
	p.send(t, "+cds:c")
	if l := p.line(t); !strings.Contains(l, `"event":"resource"`) {
		t.Fatalf("line %s, want the cluster's second watch: the RPCs are over", l)
	}
	p.interruptClean(t)
}

// TestConfigTextRepeats: in text output, a config line that says what the
// channel's last line said is not printed again, the transport's reason of
// an unreachable server aside; JSON output has every config.
func TestConfigTextRepeats(t *testing.T) {
	t.Parallel()
	note := func(reason string) string {
		return `LDS resource "L": lds "L" from xDS server "s" (node ID "n"): ` + unreachableCause + `"s"): ` + reason
	}
	cfg := func(note string) *xdsconfig.Config {
		return &xdsconfig.Config{ListenerName: "L", RouteConfigName: "R", Clusters: map[string]*xdsconfig.ClusterConfig{
			"c": {Name: "c", Cluster: &xdsresource.Cluster{Name: "c", Kind: xdsresource.ClusterEDS}, ResolutionNote: note},
		}}
	}
	configs := []*xdsconfig.Config{
		cfg(nodeNote),
		cfg(nodeNote),    // the same: not printed again
		cfg(note("EOF")), // a new note
		cfg(note("connection refused")),
		cfg(nodeNote),
	}
	for _, tc := range []struct {
		format string
		want   []int // the configs printed
	}{
		{outputText, []int{0, 2, 4}},
		{outputJSON, []int{0, 1, 2, 3, 4}},
	} {
		var buf strings.Builder
		ch := newChannel(&channelSet{out: newOutput(&buf, tc.format)}, target{arg: "xds:///L"}, "L")
		for _, c := range configs {
			ch.config(c)
		}
		lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
		if len(lines) != len(tc.want) {
			t.Errorf("%s: %d lines, want %d:\n%s", tc.format, len(lines), len(tc.want), buf.String())
			continue
		}
		for i, n := range tc.want {
			want := *configs[n].Clusters["c"]
			if !strings.Contains(lines[i], strings.ReplaceAll(want.ResolutionNote, `"`, `\"`)) && !strings.Contains(lines[i], want.ResolutionNote) {
				t.Errorf("%s: line %d = %s, want config %d", tc.format, i, lines[i], n)
			}
		}
	}
}

// TestRPCLineAfterFirstConfig: the line of an RPC that a config routed
// comes after the channel's first config line, although the channel has
// the config (and its RPCs may end) before its hook prints it. An RPC
// that no config routed is printed at once, and one whose channel closes
// while it waits is not printed.
func TestRPCLineAfterFirstConfig(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	cs := newChannelSet(nil, nil, newOutput(&out, outputJSON), rpcConfig{method: defaultRPCMethod}, nil)
	printed := make(chan rpcResult, 3)
	defer cs.observeRPCs(func(r rpcResult) { printed <- r })()
	routed := rpcResult{target: "xds:///L", cluster: "c1", peer: "127.0.0.1:1"}

	ch := newChannel(cs, target{arg: "xds:///L"}, "L")
	reported := make(chan bool, 1)
	go func() { reported <- ch.report(context.Background(), routed) }()
	// Nothing marks the wait; an RPC line printed too early shows within
	// this time.
	select {
	case <-printed:
		t.Fatal("the line of a routed RPC was printed before the channel's first config line")
	case <-time.After(100 * time.Millisecond):
	}
	ch.config(&xdsconfig.Config{ListenerName: "L"})
	if ok := <-reported; !ok {
		t.Fatal("report = false after the first config, want true")
	}
	<-printed
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], `"event":"config"`) || !strings.Contains(lines[1], `"event":"rpc"`) {
		t.Fatalf("output %q, want the config line, then the RPC's", lines)
	}

	unrouted := rpcResult{target: "xds:///L", code: codes.Unavailable}
	if !newChannel(cs, target{arg: "xds:///L"}, "L").report(context.Background(), unrouted) || len(printed) != 1 {
		t.Error("an RPC that no config routed was not printed at once")
	}
	<-printed

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if newChannel(cs, target{arg: "xds:///L"}, "L").report(ctx, routed) || len(printed) != 0 {
		t.Error("a routed RPC of a channel closed before its first config was printed")
	}
}

// TestClusterLinePolicies checks the lb_policy of a leaf's slot for each
// policy a Cluster may name, and outlier_detection.
func TestClusterLinePolicies(t *testing.T) {
	for _, tc := range []struct {
		c    xdsresource.Cluster
		want string
	}{
		{xdsresource.Cluster{Config: lbpolicy.Config{LBPolicy: lbpolicy.RoundRobin}}, "round_robin"},
		{xdsresource.Cluster{Config: lbpolicy.Config{LBPolicy: lbpolicy.PickFirst}}, "pick_first"},
		{xdsresource.Cluster{Config: lbpolicy.Config{LBPolicy: lbpolicy.RingHash}}, "ring_hash_experimental"},
		{xdsresource.Cluster{Config: lbpolicy.Config{LBPolicy: lbpolicy.LeastRequest, LeastRequestChoiceCount: 2}}, "least_request_experimental"},
		{xdsresource.Cluster{Config: lbpolicy.Config{LBPolicy: lbpolicy.WRRLocality, LBChildPolicy: lbpolicy.WeightedRoundRobin, WeightedRoundRobin: &lbpolicy.WeightedRoundRobinConfig{WeightUpdatePeriod: time.Second}}}, "weighted_round_robin"},
		{xdsresource.Cluster{Config: lbpolicy.Config{LBPolicy: "no_such_policy_registered"}}, ""},
	} {
		tc.c.Kind = xdsresource.ClusterEDS
		got := clusterLine(&xdsconfig.ClusterConfig{Name: "c", Cluster: &tc.c})
		if got.LBPolicy != tc.want || got.OutlierDetection {
			t.Errorf("%s: lb_policy %q, outlier_detection %v; want %q, false", tc.c.LBPolicy, got.LBPolicy, got.OutlierDetection, tc.want)
		}
	}
	od := xdsresource.Cluster{Kind: xdsresource.ClusterEDS, OutlierDetection: &clusterv3.OutlierDetection{}, Config: lbpolicy.Config{LBPolicy: lbpolicy.RoundRobin}}
	if got := clusterLine(&xdsconfig.ClusterConfig{Name: "c", Cluster: &od}); !got.OutlierDetection {
		t.Error("outlier_detection false for a cluster that has it")
	}
}
