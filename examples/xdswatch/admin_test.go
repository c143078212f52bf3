package main

import (
	"context"
	"strings"
	"testing"

	adminv3 "github.com/envoyproxy/go-control-plane/envoy/admin/v3"
	statusv3 "github.com/envoyproxy/go-control-plane/envoy/service/status/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/xdslens/xdslens/xdsclient/xdsresource"
)

// TestCSDS runs xdswatch with --csds-addr on port 0 against its demo
// control plane, reads the bound address from the listening line and
// fetches the client's status over CSDS: exactly one ClientConfig, scoped
// "xdswatch" (the default target), holding the watched listener.
func TestCSDS(t *testing.T) {
	p := startProc(t, cleanEnv(), "--output", "json", "--csds-addr", "127.0.0.1:0", "lds:demo")
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

	cc, err := grpc.NewClient(*l.CSDS, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
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
