package controlplane_test

import (
	"context"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/xdslens/xdslens/internal/testing/leaktest"
	"github.com/xdslens/xdslens/internal/xdswatch/demo/controlplane"
)

func testContext(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func startServer(t *testing.T, opts ...controlplane.Option) *controlplane.Server {
	t.Helper()
	srv, err := controlplane.Start(testContext(t), "127.0.0.1:0", opts...)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(srv.Stop)
	return srv
}

func dial(t *testing.T, addr string) discoveryv3.AggregatedDiscoveryServiceClient {
	t.Helper()
	cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatalf("grpc.NewClient(%q): %v", addr, err)
	}
	t.Cleanup(func() { cc.Close() })
	return discoveryv3.NewAggregatedDiscoveryServiceClient(cc)
}

// sotwClient is one State of the World ADS stream as a test drives it.
type sotwClient struct {
	t      *testing.T
	node   *corev3.Node
	stream discoveryv3.AggregatedDiscoveryService_StreamAggregatedResourcesClient
}

func openSotw(t *testing.T, ctx context.Context, addr, nodeID string) *sotwClient {
	t.Helper()
	st, err := dial(t, addr).StreamAggregatedResources(ctx)
	if err != nil {
		t.Fatalf("StreamAggregatedResources: %v", err)
	}
	return &sotwClient{t: t, node: &corev3.Node{Id: nodeID}, stream: st}
}

func (c *sotwClient) send(typeURL, version, nonce string, names ...string) {
	c.t.Helper()
	req := &discoveryv3.DiscoveryRequest{
		Node: c.node, TypeUrl: typeURL, VersionInfo: version, ResponseNonce: nonce, ResourceNames: names,
	}
	if err := c.stream.Send(req); err != nil {
		c.t.Fatalf("send %s request: %v", typeURL, err)
	}
}

func (c *sotwClient) recv() *discoveryv3.DiscoveryResponse {
	c.t.Helper()
	resp, err := c.stream.Recv()
	if err != nil {
		c.t.Fatalf("recv: %v", err)
	}
	return resp
}

// fetch subscribes to names of typeURL, receives the response, checks its
// type and version, and acknowledges it.
func (c *sotwClient) fetch(typeURL, wantVersion string, names ...string) []proto.Message {
	c.t.Helper()
	c.send(typeURL, "", "", names...)
	resp := c.recv()
	if resp.GetTypeUrl() != typeURL || resp.GetVersionInfo() != wantVersion {
		c.t.Fatalf("response is %s version %q, want %s version %q", resp.GetTypeUrl(), resp.GetVersionInfo(), typeURL, wantVersion)
	}
	c.send(typeURL, resp.GetVersionInfo(), resp.GetNonce(), names...)
	return unpack(c.t, resp)
}

func unpack(t *testing.T, resp *discoveryv3.DiscoveryResponse) []proto.Message {
	t.Helper()
	var out []proto.Message
	for _, a := range resp.GetResources() {
		m, err := a.UnmarshalNew()
		if err != nil {
			t.Fatalf("unpack %s: %v", a.GetTypeUrl(), err)
		}
		out = append(out, m)
	}
	return out
}

func TestDemoResourcesOverADS(t *testing.T) {
	ctx := testContext(t)
	srv := startServer(t)
	want := controlplane.DemoResources("demo")
	if err := srv.SetResources(ctx, "node-1", "1", want...); err != nil {
		t.Fatalf("SetResources: %v", err)
	}
	c := openSotw(t, ctx, srv.Addr(), "node-1")

	steps := []struct {
		typeURL string
		name    string
		want    proto.Message
	}{
		{resourcev3.ListenerType, "demo", want[0]},
		{resourcev3.RouteType, "demo-route", want[1]},
		{resourcev3.ClusterType, "demo-cluster", want[2]},
		{resourcev3.EndpointType, "demo-cluster", want[3]},
	}
	for _, step := range steps {
		got := c.fetch(step.typeURL, "1", step.name)
		if len(got) != 1 || !proto.Equal(got[0], step.want) {
			t.Errorf("%s %q: got %v, want %v", step.typeURL, step.name, got, step.want)
		}
	}
}

func TestNewVersionIsPushed(t *testing.T) {
	ctx := testContext(t)
	srv := startServer(t)
	if err := srv.SetResources(ctx, "n", "1", controlplane.Endpoints("c", "127.0.0.1:1001")); err != nil {
		t.Fatal(err)
	}
	c := openSotw(t, ctx, srv.Addr(), "n")
	got := c.fetch(resourcev3.EndpointType, "1", "c")
	if n := len(got[0].(*endpointv3.ClusterLoadAssignment).GetEndpoints()[0].GetLbEndpoints()); n != 1 {
		t.Fatalf("version 1 has %d endpoints, want 1", n)
	}

	v2 := controlplane.Endpoints("c", "127.0.0.1:1001", "127.0.0.1:1002")
	if err := srv.SetResources(ctx, "n", "2", v2); err != nil {
		t.Fatal(err)
	}
	resp := c.recv()
	if resp.GetVersionInfo() != "2" {
		t.Fatalf("pushed version %q, want %q", resp.GetVersionInfo(), "2")
	}
	if got := unpack(t, resp); len(got) != 1 || !proto.Equal(got[0], v2) {
		t.Errorf("version 2 is %v, want %v", got, v2)
	}
}

func TestMissingResourceGetsEmptyResponse(t *testing.T) {
	ctx := testContext(t)
	srv := startServer(t)
	// The listener names a route configuration that is not in the snapshot.
	if err := srv.SetResources(ctx, "n", "1", controlplane.Listener("l", "absent")); err != nil {
		t.Fatal(err)
	}
	c := openSotw(t, ctx, srv.Addr(), "n")
	if got := c.fetch(resourcev3.ClusterType, "1", "no-such-cluster"); len(got) != 0 {
		t.Errorf("CDS response holds %v, want no resources", got)
	}
}

func TestStopEndsOpenStream(t *testing.T) {
	ctx := testContext(t)
	srv, err := controlplane.Start(ctx, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.SetResources(ctx, "n", "1", controlplane.DemoResources("demo")...); err != nil {
		t.Fatal(err)
	}
	c := openSotw(t, ctx, srv.Addr(), "n")
	c.fetch(resourcev3.ListenerType, "1", "demo")

	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		srv.Stop()
	}()
	if _, err := c.stream.Recv(); !errors.Is(err, io.EOF) {
		t.Errorf("Recv after Stop: %v, want io.EOF (stream ended with status OK)", err)
	}
	select {
	case <-stopped:
	case <-ctx.Done():
		t.Fatal("Stop did not return")
	}
	srv.Stop() // a second Stop is a no-op
	if g := leaktest.Left(ctx, "github.com/xdslens/xdslens/internal/xdswatch/demo/controlplane"); len(g) > 0 {
		t.Errorf("goroutines left in package controlplane after Stop:\n%s", strings.Join(g, "\n\n"))
	}
}

func TestDefaultNode(t *testing.T) {
	ctx := testContext(t)
	srv := startServer(t, controlplane.WithDefaultNode())

	// A node that connects before any configuration exists waits, then gets
	// the default configuration pushed.
	early := openSotw(t, ctx, srv.Addr(), "early")
	early.send(resourcev3.ListenerType, "", "", "demo")

	if err := srv.SetResources(ctx, "", "1", controlplane.DemoResources("demo")...); err != nil {
		t.Fatal(err)
	}
	if resp := early.recv(); resp.GetVersionInfo() != "1" || len(resp.GetResources()) != 1 {
		t.Fatalf("early node got version %q with %d resources, want version 1 with 1", resp.GetVersionInfo(), len(resp.GetResources()))
	}

	// A node that connects later gets it too.
	late := openSotw(t, ctx, srv.Addr(), "late")
	late.fetch(resourcev3.ListenerType, "1", "demo")

	// A node with its own configuration keeps it when the default changes.
	own := controlplane.Listener("demo", "own-route")
	if err := srv.SetResources(ctx, "special", "7", own); err != nil {
		t.Fatal(err)
	}
	special := openSotw(t, ctx, srv.Addr(), "special")
	if got := special.fetch(resourcev3.ListenerType, "7", "demo"); !proto.Equal(got[0], own) {
		t.Errorf("special node got %v, want %v", got[0], own)
	}

	if err := srv.SetResources(ctx, "", "2", controlplane.DemoResources("demo")...); err != nil {
		t.Fatal(err)
	}
	if resp := late.recv(); resp.GetVersionInfo() != "2" {
		t.Errorf("late node got version %q, want 2", resp.GetVersionInfo())
	}
}

func TestWithoutDefaultNodeEmptyIDIsOneNode(t *testing.T) {
	ctx := testContext(t)
	srv := startServer(t)
	if err := srv.SetResources(ctx, "", "1", controlplane.DemoResources("demo")...); err != nil {
		t.Fatal(err)
	}
	c := openSotw(t, ctx, srv.Addr(), "")
	c.fetch(resourcev3.ListenerType, "1", "demo")
}

func TestCallbacksObserveStream(t *testing.T) {
	ctx := testContext(t)
	var (
		mu        sync.Mutex
		requests  []string
		responses []string
	)
	closed := make(chan *corev3.Node, 1)
	cb := controlplane.CallbackFuncs{
		StreamRequest: func(_ int64, req *discoveryv3.DiscoveryRequest) error {
			mu.Lock()
			defer mu.Unlock()
			requests = append(requests, req.GetTypeUrl()+" nonce="+req.GetResponseNonce())
			return nil
		},
		StreamResponse: func(_ context.Context, _ int64, _ *discoveryv3.DiscoveryRequest, resp *discoveryv3.DiscoveryResponse) {
			mu.Lock()
			defer mu.Unlock()
			responses = append(responses, resp.GetTypeUrl()+" nonce="+resp.GetNonce())
		},
		StreamClosed: func(_ int64, node *corev3.Node) { closed <- node },
	}
	srv := startServer(t, controlplane.WithCallbacks(cb))
	if err := srv.SetResources(ctx, "n", "1", controlplane.DemoResources("demo")...); err != nil {
		t.Fatal(err)
	}
	c := openSotw(t, ctx, srv.Addr(), "n")
	c.fetch(resourcev3.ListenerType, "1", "demo")
	if err := c.stream.CloseSend(); err != nil {
		t.Fatal(err)
	}
	select {
	case node := <-closed:
		if node.GetId() != "n" {
			t.Errorf("closed stream's node is %q, want %q", node.GetId(), "n")
		}
	case <-ctx.Done():
		t.Fatal("StreamClosed was not called")
	}

	mu.Lock()
	defer mu.Unlock()
	wantReq := []string{resourcev3.ListenerType + " nonce=", resourcev3.ListenerType + " nonce=1"}
	wantResp := []string{resourcev3.ListenerType + " nonce=1"}
	if strings.Join(requests, "|") != strings.Join(wantReq, "|") {
		t.Errorf("requests seen = %q, want %q", requests, wantReq)
	}
	if strings.Join(responses, "|") != strings.Join(wantResp, "|") {
		t.Errorf("responses seen = %q, want %q", responses, wantResp)
	}
}

func TestCallbackErrorEndsStream(t *testing.T) {
	ctx := testContext(t)
	srv := startServer(t, controlplane.WithCallbacks(controlplane.CallbackFuncs{
		StreamRequest: func(int64, *discoveryv3.DiscoveryRequest) error { return errors.New("refused") },
	}))
	c := openSotw(t, ctx, srv.Addr(), "n")
	c.send(resourcev3.ListenerType, "", "", "demo")
	if _, err := c.stream.Recv(); err == nil || !strings.Contains(err.Error(), "refused") {
		t.Errorf("Recv = %v, want the callback's error", err)
	}
}

func TestDeltaADS(t *testing.T) {
	ctx := testContext(t)
	srv := startServer(t)
	want := controlplane.DemoResources("demo")
	if err := srv.SetResources(ctx, "n", "1", want...); err != nil {
		t.Fatal(err)
	}
	st, err := dial(t, srv.Addr()).DeltaAggregatedResources(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Send(&discoveryv3.DeltaDiscoveryRequest{
		Node: &corev3.Node{Id: "n"}, TypeUrl: resourcev3.ListenerType, ResourceNamesSubscribe: []string{"demo"},
	}); err != nil {
		t.Fatal(err)
	}
	resp, err := st.Recv()
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.GetResources()) != 1 || resp.GetResources()[0].GetName() != "demo" {
		t.Fatalf("delta response resources = %v, want listener demo", resp.GetResources())
	}
	var lis listenerv3.Listener
	if err := resp.GetResources()[0].GetResource().UnmarshalTo(&lis); err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(&lis, want[0]) {
		t.Errorf("listener = %v, want %v", &lis, want[0])
	}

	// Removing the listener from the configuration is reported.
	if err := srv.SetResources(ctx, "n", "2", want[1:]...); err != nil {
		t.Fatal(err)
	}
	if err := st.Send(&discoveryv3.DeltaDiscoveryRequest{TypeUrl: resourcev3.ListenerType, ResponseNonce: resp.GetNonce()}); err != nil {
		t.Fatal(err)
	}
	resp, err = st.Recv()
	if err != nil {
		t.Fatal(err)
	}
	if got := resp.GetRemovedResources(); len(got) != 1 || got[0] != "demo" {
		t.Errorf("removed_resources = %q, want [demo]", got)
	}
}

func TestSetResourcesRejects(t *testing.T) {
	ctx := testContext(t)
	srv := startServer(t)
	tests := []struct {
		name      string
		resources []proto.Message
	}{
		{"nil resource", []proto.Message{nil}},
		{"duplicate name", []proto.Message{controlplane.Cluster("c", ""), controlplane.Cluster("c", "other")}},
		{"unknown type", []proto.Message{durationpb.New(time.Second)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := srv.SetResources(ctx, "n", "1", tt.resources...); err == nil {
				t.Error("SetResources succeeded, want an error")
			}
		})
	}
}
