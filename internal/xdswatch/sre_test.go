package xdswatch

// Two of the questions an SRE asks, answered as the README shows: why did
// this RPC go there (its trace and xdswatch explain agree), and what
// changed before the errors began (the config history's entry before the
// first failed RPC names the change).

import (
	"context"
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	testpb "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/emptypb"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/xdslens/xdslens/admin"
	"github.com/xdslens/xdslens/internal/xdswatch/demo/backends"
	"github.com/xdslens/xdslens/internal/xdswatch/demo/controlplane"
	"github.com/xdslens/xdslens/telemetry/dataplane"
	"github.com/xdslens/xdslens/xdsclient"
	"github.com/xdslens/xdslens/xdsclient/bootstrap"
	"github.com/xdslens/xdslens/xdsgrpc"
	"github.com/xdslens/xdslens/xdsgrpc/history"
)

// tracedChannel returns a channel to target, with the bootstrap of cp,
// whose RPCs are traced with spans recorded by the returned recorder.
func tracedChannel(t *testing.T, cp *controlPlane, target string) (*grpc.ClientConn, *tracetest.SpanRecorder) {
	t.Helper()
	data, err := os.ReadFile(cp.bootstrapFile)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := bootstrap.Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	sr := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sr))
	t.Cleanup(func() { tp.Shutdown(context.Background()) })
	b := xdsgrpc.NewBuilder(xdsclient.NewPool(cfg), dataplane.WithTracerProvider(tp))
	conn, err := grpc.NewClient(target, append(b.DialOptions(), grpc.WithTransportCredentials(insecure.NewCredentials()))...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn, sr
}

// spanAttrs returns the attributes of span s by key.
func spanAttrs(s sdktrace.ReadOnlySpan) map[string]string {
	out := map[string]string{}
	for _, kv := range s.Attributes() {
		out[string(kv.Key)] = kv.Value.Emit()
	}
	return out
}

// TestTraceAndExplainAgree sends two RPCs of listener L (explainConfigs)
// through a traced channel, one with x-lane: canary and one with x-lane:
// prod, and asks xdswatch explain about the same method and headers: the
// attempt span of each RPC names the virtual host, route and cluster that
// explain gives (for the weighted route, one of the clusters it draws
// from, with odds above zero).
func TestTraceAndExplainAgree(t *testing.T) {
	t.Parallel()
	cp := startControlPlane(t, explainConfigs(t)...)
	conn, sr := tracedChannel(t, cp, "xdslens:///L")
	client := testgrpc.NewTestServiceClient(conn)
	for _, lane := range []string{"canary", "prod"} {
		ctx := metadata.AppendToOutgoingContext(testContext(t), "x-lane", lane)
		if _, err := client.EmptyCall(ctx, &testpb.Empty{}, grpc.WaitForReady(true)); err != nil {
			t.Fatalf("x-lane %s: %v", lane, err)
		}
	}
	var attempts []map[string]string
	for _, s := range sr.Ended() {
		if s.Name() == "Attempt.grpc.testing.TestService.EmptyCall" {
			attempts = append(attempts, spanAttrs(s))
		}
	}
	if len(attempts) != 2 {
		t.Fatalf("%d attempt spans, want 2", len(attempts))
	}
	for i, lane := range []string{"canary", "prod"} {
		line, code := explain(t, cp, "--output", "json", "explain", "xds:///L", "--method", explainMethod, "--header", "x-lane="+lane)
		e := parseExplain(t, line)
		span := attempts[i]
		t.Logf("x-lane %s: span %v; explain %s", lane, span, line)
		if code != exitOK || e.Outcome != "routed" {
			t.Fatalf("x-lane %s: exit %d, line %s", lane, code, line)
		}
		// The span names a route by its name, and always by its index;
		// explain by its name, else "#INDEX".
		route := span[dataplane.KeyRouteName]
		if route == "" {
			route = "#" + span[dataplane.KeyRouteIndex]
		}
		if route != e.Route || span[dataplane.KeyVirtualHost] != e.VirtualHost || span[dataplane.KeyListener] != "L" {
			t.Errorf("x-lane %s: span says listener %q, virtual host %q, route %q; explain says virtual host %q, route %q",
				lane, span[dataplane.KeyListener], span[dataplane.KeyVirtualHost], route, e.VirtualHost, e.Route)
		}
		cluster := span[dataplane.KeyCluster]
		switch {
		case e.Cluster != "" && cluster != e.Cluster:
			t.Errorf("x-lane %s: span says cluster %q, explain %q", lane, cluster, e.Cluster)
		case e.Cluster == "" && e.Weights[cluster] == 0:
			t.Errorf("x-lane %s: span says cluster %q, which explain's weights %v do not draw", lane, cluster, e.Weights)
		}
		if c, ok := e.Clusters[cluster]; !ok || c.LBPolicy != span[dataplane.KeyPolicy] {
			t.Errorf("x-lane %s: span's policy %q, explain's cluster %q: %+v", lane, span[dataplane.KeyPolicy], cluster, c)
		}
	}
	if got := attempts[0][dataplane.KeyRouteName]; got != "canary" {
		t.Errorf("the canary RPC's route %q, want canary", got)
	}
}

// configHistory reads the config histories of the channels from the admin
// port that cc is connected to.
func configHistory(t *testing.T, cc *grpc.ClientConn) []history.Channel {
	t.Helper()
	out := new(structpb.Struct)
	if err := cc.Invoke(testContext(t), admin.ConfigHistoryList, &emptypb.Empty{}, out); err != nil {
		t.Fatalf("List: %v", err)
	}
	b, err := protojson.Marshal(out)
	if err != nil {
		t.Fatal(err)
	}
	var answer struct{ Channels []history.Channel }
	if err := json.Unmarshal(b, &answer); err != nil {
		t.Fatal(err)
	}
	return answer.Channels
}

// TestHistoryNamesTheChangeBeforeTheFailures routes listener L to cluster
// good, whose backend answers, then moves the route to cluster bad, whose
// backend fails every RPC, while xdswatch sends an RPC every 20ms: the
// last config history entry recorded before the first failed RPC ended is
// that move (route #0 from good to bad, cluster bad added), and no entry
// before it names cluster bad.
func TestHistoryNamesTheChangeBeforeTheFailures(t *testing.T) {
	t.Parallel()
	good, err := backends.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(good.Stop)
	bad, err := backends.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(bad.Stop)
	bad.Fail(backends.Failure{Every: 1})
	config := func(cluster string) []proto.Message {
		return []proto.Message{controlplane.Listener("L", "R"), routes("R", routeTo{prefix: "/", cluster: cluster}),
			controlplane.Cluster("good", ""), controlplane.Endpoints("good", good.Addr()),
			controlplane.Cluster("bad", ""), controlplane.Endpoints("bad", bad.Addr())}
	}
	cp := startControlPlane(t, config("good")...)
	p := startRun(t, "--bootstrap", cp.bootstrapFile, "--output", "json", "--csds-addr", "127.0.0.1:0",
		"--rpc-interval", "20ms", "--rpc-method", explainMethod, "xds:///L")
	l := p.event(t)
	cc := dial(t, *l.CSDS)

	for ok := 0; ok < 3; {
		if e := p.nextOf(t, eventRPC); e.Code == "OK" {
			ok++
		}
	}
	cp.set("2", config("bad")...)
	failed := p.nextOf(t, eventRPC)
	for failed.Code == "OK" {
		failed = p.nextOf(t, eventRPC)
	}
	firstFailure := parseTS(t, failed.TS)
	if *failed.Cluster != "bad" || failed.Code != "UNAVAILABLE" {
		t.Errorf("first failed RPC %+v, want UNAVAILABLE from cluster bad", failed)
	}

	chans := configHistory(t, cc)
	if len(chans) != 1 {
		t.Fatalf("%d channels in the history, want 1", len(chans))
	}
	entries := chans[0].Entries
	// The last entry recorded before the first failure ended.
	i := slices.IndexFunc(entries, func(e history.Entry) bool { return e.Time.After(firstFailure) })
	if i < 0 {
		i = len(entries)
	}
	if i == 0 {
		t.Fatalf("no history entry before the first failure at %v: %+v", firstFailure, entries)
	}
	before := entries[i-1]
	var changes []string
	for _, c := range before.Changes {
		changes = append(changes, c.Kind+" "+c.Name+" "+c.Op+": "+c.Before+" => "+c.After)
	}
	t.Logf("first failed RPC at %s: %s; entry %d at %s: %s", failed.TS, *failed.Message, before.Seq, before.Time.Format(time.RFC3339Nano), strings.Join(changes, "; "))
	want := []string{
		`route #0 changed: prefix "/" -> cluster "good" => prefix "/" -> cluster "bad"`,
	}
	if before.Event != history.EventConfig || len(changes) == 0 || changes[0] != want[0] ||
		!slices.ContainsFunc(before.Resources, func(r history.Resource) bool { return r.Type == "rds" && r.Name == "R" && r.Version == "2" }) {
		t.Errorf("entry %d before the first failure: %+v; want its first change %q, with rds R at version 2", before.Seq, before, want[0])
	}
	if !slices.ContainsFunc(before.Changes, func(c history.Change) bool { return c.Kind == "cluster" && c.Name == "bad" && c.Op == "added" }) {
		t.Errorf("entry %d: changes %q, want cluster bad added", before.Seq, changes)
	}
	// The entries before it routed to good: the move is what changed.
	for _, e := range entries[:i-1] {
		for _, c := range e.Changes {
			if strings.Contains(c.After, `cluster "bad"`) {
				t.Errorf("entry %d, before the move, already names cluster bad: %+v", e.Seq, c)
			}
		}
	}
	p.interrupt(t)
}

// parseTS parses the ts field of a line.
func parseTS(t *testing.T, ts string) time.Time {
	t.Helper()
	v, err := time.Parse(time.RFC3339Nano, ts)
	if err != nil {
		t.Fatalf("ts %q: %v", ts, err)
	}
	return v
}
