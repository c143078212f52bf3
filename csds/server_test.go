package csds_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	statusv3 "github.com/envoyproxy/go-control-plane/envoy/service/status/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/xdslens/xdslens/csds"
	"github.com/xdslens/xdslens/internal/testing/xdstest"
	"github.com/xdslens/xdslens/internal/xdswatch/demo/controlplane"
	"github.com/xdslens/xdslens/xdsclient"
	"github.com/xdslens/xdslens/xdsclient/xdsresource"
)

func withNodeMatcher() *statusv3.ClientStatusRequest {
	return &statusv3.ClientStatusRequest{NodeMatchers: []*matcherv3.NodeMatcher{{
		NodeId: &matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_Exact{Exact: testNodeID}},
	}}}
}

func TestNodeMatchersInvalidArgument(t *testing.T) {
	f := newFixture(t, nil)
	_, err := f.csds.FetchClientStatus(f.Ctx, withNodeMatcher())
	if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "node_matchers") {
		t.Errorf("FetchClientStatus with node_matchers: %v, want INVALID_ARGUMENT naming node_matchers", err)
	}

	// On a stream, a good request is answered, then the one with
	// node_matchers ends the stream.
	stream, err := f.csds.StreamClientStatus(f.Ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := stream.Send(&statusv3.ClientStatusRequest{}); err != nil {
		t.Fatal(err)
	}
	if _, err := stream.Recv(); err != nil {
		t.Fatalf("first response: %v", err)
	}
	if err := stream.Send(withNodeMatcher()); err != nil {
		t.Fatal(err)
	}
	if _, err := stream.Recv(); status.Code(err) != codes.InvalidArgument {
		t.Errorf("stream after node_matchers: %v, want INVALID_ARGUMENT", err)
	}
}

// One response per request on a stream, each reading the cache afresh; the
// stream ends with OK when the caller closes its side.
func TestStreamSeveralRequests(t *testing.T) {
	f := newFixture(t, nil)
	rec, st, _ := f.watchCached("c1")
	stream, err := f.csds.StreamClientStatus(f.Ctx)
	if err != nil {
		t.Fatal(err)
	}
	ask := func() string {
		t.Helper()
		if err := stream.Send(&statusv3.ClientStatusRequest{}); err != nil {
			t.Fatal(err)
		}
		resp, err := stream.Recv()
		if err != nil {
			t.Fatal(err)
		}
		_, g := only(t, resp)
		return g.GetClientStatus().String() + "@" + g.GetVersionInfo()
	}
	if got := ask(); got != "ACKED@1" {
		t.Errorf("first response %s, want ACKED@1", got)
	}
	f.Send(st, xdstest.Response(cdsURL, "2", xdstest.InvalidCluster("c1")))
	rec.Expect(t, xdsclient.NotifyAmbientError, codes.InvalidArgument)
	f.RecvType(st, cdsURL)
	if got := ask(); got != "NACKED@1" {
		t.Errorf("second response %s, want NACKED@1", got)
	}
	f.Send(st, xdstest.Response(cdsURL, "3", controlplane.Cluster("c1", "x")))
	rec.Expect(t, xdsclient.NotifyResource, 0)
	if got := ask(); got != "ACKED@3" {
		t.Errorf("third response %s, want ACKED@3", got)
	}
	if got := ask(); got != "ACKED@3" {
		t.Errorf("fourth response %s, want ACKED@3", got)
	}
	if err := stream.CloseSend(); err != nil {
		t.Fatal(err)
	}
	if _, err := stream.Recv(); !errors.Is(err, io.EOF) {
		t.Errorf("after CloseSend: %v, want io.EOF (status OK)", err)
	}
}

func TestExcludeResourceContents(t *testing.T) {
	f := newFixture(t, nil)
	rec, st, _ := f.watchCached("c1")
	f.Send(st, xdstest.Response(cdsURL, "2", xdstest.InvalidCluster("c1")))
	rec.Expect(t, xdsclient.NotifyAmbientError, codes.InvalidArgument)
	resp, err := f.csds.FetchClientStatus(f.Ctx, &statusv3.ClientStatusRequest{ExcludeResourceContents: true})
	if err != nil {
		t.Fatal(err)
	}
	_, g := only(t, resp)
	if g.GetXdsConfig() != nil || g.GetErrorState().GetFailedConfiguration() != nil {
		t.Errorf("exclude_resource_contents: xds_config %v failed_configuration %v, want neither", g.GetXdsConfig(), g.GetErrorState().GetFailedConfiguration())
	}
	if g.GetVersionInfo() != "1" || g.GetLastUpdated() == nil || g.GetErrorState().GetVersionInfo() != "2" {
		t.Errorf("exclude_resource_contents dropped more than the contents: %v", g)
	}
}

// fakeClient is a Client that can fail in each of its methods.
type fakeClient struct {
	target                string
	panicTarget, panicDmp bool
}

func (f *fakeClient) Target() string {
	if f.panicTarget {
		panic("scripted Target failure")
	}
	return f.target
}

func (f *fakeClient) Node() *corev3.Node { return &corev3.Node{Id: "fake-node"} }

func (f *fakeClient) Dump() []xdsclient.EntrySnapshot {
	if f.panicDmp {
		panic(errors.New("scripted Dump failure"))
	}
	return []xdsclient.EntrySnapshot{{TypeURL: cdsURL, Name: "fake", State: xdsclient.StateRequested}}
}

// A client that is closed, one whose Dump panics and one whose Target
// panics do not empty the response: each still gets its ClientConfig with
// what could be read, and the failures are logged.
func TestIsolation(t *testing.T) {
	srv := xdstest.NewADSServer(t)
	pool := xdsclient.NewPool(bootstrapFor(t, srv.Addr()), xdstest.ClientOptions(xdsclient.WithResourceTimeout(time.Hour))...)
	live, releaseLive, err := pool.Get("live")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(releaseLive)
	t.Cleanup(live.Watch(xdsresource.ClusterType, "c1", xdstest.NewWatcher()))
	closed, releaseClosed, err := pool.Get("closed")
	if err != nil {
		t.Fatal(err)
	}
	closed.Watch(xdsresource.ClusterType, "c2", xdstest.NewWatcher())
	releaseClosed() // the last user: the pool closes it
	closed.Close()  // and it stays closed

	var logs xdstest.SyncBuffer
	list := func() []csds.Client {
		var out []csds.Client
		for _, c := range pool.Clients() {
			out = append(out, c)
		}
		return append(out, closed, &fakeClient{target: "panicky-dump", panicDmp: true}, &fakeClient{panicTarget: true})
	}
	cl := serve(t, csds.NewServerOf(list, csds.WithLogger(slog.New(slog.NewTextHandler(&logs, nil)))))
	resp := fetch(t, cl)

	var got []string
	for _, cfg := range resp.GetConfig() {
		s := cfg.GetClientScope() + "[" + cfg.GetNode().GetId() + "]"
		for _, g := range cfg.GetGenericXdsConfigs() {
			s += " " + g.GetName() + ":" + g.GetClientStatus().String()
		}
		got = append(got, s)
	}
	want := []string{
		"[fake-node] fake:REQUESTED", // Target panicked: no scope
		"closed[" + testNodeID + "]", // a closed client has dropped its cache
		"live[" + testNodeID + "] c1:REQUESTED",
		"panicky-dump[fake-node]",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("configs:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for _, w := range []string{"scripted Dump failure", "target=panicky-dump", "scripted Target failure", "stack="} {
		if !strings.Contains(logs.String(), w) {
			t.Errorf("log does not contain %q:\n%s", w, logs.String())
		}
	}
}

// A Source that fails gets INTERNAL, not a crash.
func TestSourceFailure(t *testing.T) {
	var logs xdstest.SyncBuffer
	s := csds.NewServerOf(func() []csds.Client { panic("scripted Clients failure") },
		csds.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	_, err := s.FetchClientStatus(context.Background(), &statusv3.ClientStatusRequest{})
	if status.Code(err) != codes.Internal || !strings.Contains(err.Error(), "scripted Clients failure") {
		t.Errorf("FetchClientStatus: %v, want INTERNAL with the cause", err)
	}
	if !strings.Contains(logs.String(), "scripted Clients failure") {
		t.Errorf("failure not logged: %s", logs.String())
	}
}

// An empty pool gives an empty response, not an error.
func TestEmptyPool(t *testing.T) {
	pool := xdsclient.NewPool(bootstrapFor(t, "127.0.0.1:1"))
	resp := fetch(t, serveCSDS(t, pool))
	if len(resp.GetConfig()) != 0 {
		t.Errorf("empty pool: %v, want no ClientConfig", resp)
	}
}
