package xdswatch

import (
	"context"
	"slices"
	"strings"
	"testing"

	adminv3 "github.com/envoyproxy/go-control-plane/envoy/admin/v3"
	statusv3 "github.com/envoyproxy/go-control-plane/envoy/service/status/v3"
	"google.golang.org/grpc"
	channelzgrpc "google.golang.org/grpc/channelz/grpc_channelz_v1"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	reflectionpb "google.golang.org/grpc/reflection/grpc_reflection_v1"

	"github.com/xdslens/xdslens/internal/xdswatch/demo/controlplane"
	"github.com/xdslens/xdslens/xdsclient/xdsresource"
)

// dial connects to a gRPC server of xdswatch; the connection closes with
// the test.
func dial(t *testing.T, addr string) *grpc.ClientConn {
	t.Helper()
	cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	return cc
}

// testContext returns a context that ends after testTimeout or with the
// test.
func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	t.Cleanup(cancel)
	return ctx
}

// healthCheck asks the health service at addr for the overall status.
func healthCheck(t *testing.T, addr string) healthpb.HealthCheckResponse_ServingStatus {
	t.Helper()
	resp, err := healthpb.NewHealthClient(dial(t, addr)).Check(testContext(t), &healthpb.HealthCheckRequest{})
	if err != nil {
		t.Fatalf("health Check at %s: %v", addr, err)
	}
	return resp.GetStatus()
}

// mustScrape returns the text of http://addr/metrics.
func mustScrape(t *testing.T, addr string) string {
	t.Helper()
	body, err := scrape(addr)
	if err != nil {
		t.Fatalf("GET http://%s/metrics: %v", addr, err)
	}
	return body
}

// TestAdminPort runs xdswatch against a control plane with --csds-addr and
// reads every service of the admin port: channelz lists the xDS channel to
// the control plane, READY; health says SERVING; reflection lists CSDS,
// channelz and health.
func TestAdminPort(t *testing.T) {
	t.Parallel()
	cp := startControlPlane(t, controlplane.DemoResources("demo")...)
	p := startRun(t, "--bootstrap", cp.bootstrapFile, "--output", "json", "--csds-addr", "127.0.0.1:0", "lds:demo")
	l := p.event(t)
	if l.CSDS == nil || *l.CSDS == "" || l.Metrics == nil || *l.Metrics != "" {
		t.Fatalf("listening line %+v, want the admin address and no metrics (a bootstrap was given)", l)
	}
	if e := p.event(t); e.Event != eventResource || e.Name != "demo" {
		t.Fatalf("got %v, want resource lds demo", e)
	}
	cc := dial(t, *l.CSDS)

	top, err := channelzgrpc.NewChannelzClient(cc).GetTopChannels(testContext(t), &channelzgrpc.GetTopChannelsRequest{})
	if err != nil {
		t.Fatalf("channelz GetTopChannels: %v", err)
	}
	var targets []string
	var xds *channelzgrpc.Channel
	for _, ch := range top.GetChannel() {
		targets = append(targets, ch.GetData().GetTarget())
		if ch.GetData().GetTarget() == cp.srv.Addr() {
			xds = ch
		}
	}
	if xds == nil {
		t.Fatalf("channelz top channels %q, want one to the xDS server %s", targets, cp.srv.Addr())
	}
	if st := xds.GetData().GetState().GetState(); st != channelzgrpc.ChannelConnectivityState_READY {
		t.Errorf("xDS channel state %v, want READY", st)
	}

	if st := healthCheck(t, *l.CSDS); st != healthpb.HealthCheckResponse_SERVING {
		t.Errorf("health %v, want SERVING", st)
	}

	stream, err := reflectionpb.NewServerReflectionClient(cc).ServerReflectionInfo(testContext(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := stream.Send(&reflectionpb.ServerReflectionRequest{MessageRequest: &reflectionpb.ServerReflectionRequest_ListServices{}}); err != nil {
		t.Fatal(err)
	}
	resp, err := stream.Recv()
	if err != nil {
		t.Fatalf("reflection: %v", err)
	}
	stream.CloseSend()
	var services []string
	for _, s := range resp.GetListServicesResponse().GetService() {
		services = append(services, s.GetName())
	}
	for _, want := range []string{"envoy.service.status.v3.ClientStatusDiscoveryService", "grpc.channelz.v1.Channelz", "grpc.health.v1.Health"} {
		if !slices.Contains(services, want) {
			t.Errorf("reflection lists %q, without %s", services, want)
		}
	}
	p.interrupt(t)
}

// TestCSDS runs xdswatch with --csds-addr on port 0 against its demo
// control plane, reads the bound address from the listening line and
// fetches the client's status over CSDS: exactly one ClientConfig, scoped
// "xdswatch" (the default target), holding the watched listener.
func TestCSDS(t *testing.T) {
	t.Parallel()
	p := startRun(t, "--output", "json", "--csds-addr", "127.0.0.1:0", "lds:demo")
	l := p.event(t)
	if l.Event != eventListening || l.CSDS == nil || !strings.HasPrefix(*l.CSDS, "127.0.0.1:") || strings.HasSuffix(*l.CSDS, ":0") {
		t.Fatalf("first line %+v, want listening with the bound CSDS address", l)
	}
	if l.Metrics == nil {
		t.Errorf("listening line has no metrics field")
	}
	if e := p.event(t); e.Event != eventResource || e.Type != "lds" || e.Name != "demo" {
		t.Fatalf("got %v, want resource lds demo", e)
	}

	cc := dial(t, *l.CSDS)
	ctx := testContext(t)
	resp, err := statusv3.NewClientStatusDiscoveryServiceClient(cc).FetchClientStatus(ctx, &statusv3.ClientStatusRequest{})
	if err != nil {
		t.Fatalf("FetchClientStatus: %v", err)
	}
	if len(resp.GetConfig()) != 1 {
		t.Fatalf("%d ClientConfigs, want exactly 1: %v", len(resp.GetConfig()), resp)
	}
	cfg := resp.GetConfig()[0]
	if cfg.GetClientScope() != "xdswatch" {
		t.Errorf("client_scope %q, want \"xdswatch\"", cfg.GetClientScope())
	}
	if cfg.GetNode().GetUserAgentName() == "" {
		t.Errorf("node %v lacks the user agent the client sends", cfg.GetNode())
	}
	var found bool
	for _, g := range cfg.GetGenericXdsConfigs() {
		if g.GetTypeUrl() == xdsresource.ListenerType.TypeURL() && g.GetName() == "demo" {
			found = true
			if g.GetClientStatus() != adminv3.ClientResourceStatus_ACKED || g.GetXdsConfig() == nil || g.GetLastUpdated() == nil {
				t.Errorf("lds demo: %v, want ACKED with its resource", g)
			}
		}
	}
	if !found {
		t.Errorf("no entry for lds demo in %v", cfg)
	}

	// A stream answers each request, and xdswatch still ends cleanly with
	// the stream open.
	stream, err := statusv3.NewClientStatusDiscoveryServiceClient(cc).StreamClientStatus(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := stream.Send(&statusv3.ClientStatusRequest{}); err != nil {
			t.Fatal(err)
		}
		if r, err := stream.Recv(); err != nil || len(r.GetConfig()) != 1 {
			t.Fatalf("stream response: %v, %v", r, err)
		}
	}
	p.interrupt(t)
}
