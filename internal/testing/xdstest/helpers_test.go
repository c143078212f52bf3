package xdstest_test

import (
	"errors"
	"log/slog"
	"slices"
	"strings"
	"testing"

	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/xdslens/xdslens/internal/testing/xdstest"
	"github.com/xdslens/xdslens/xdsclient"
)

func TestScript(t *testing.T) {
	s := xdstest.Script{T: t, Ctx: xdstest.Context(t), Srv: xdstest.NewADSServer(t)}
	_, client := dial(t, s.Srv.Addr())
	cs := openStream(t, s.Ctx, client)
	send(t, cs, &discoveryv3.DiscoveryRequest{TypeUrl: ldsType})
	send(t, cs, &discoveryv3.DiscoveryRequest{TypeUrl: cdsType})

	st := s.NextStream()
	if req := s.RecvType(st, cdsType); req.GetTypeUrl() != cdsType {
		t.Fatalf("RecvType(%s) = %v", cdsType, req)
	}
	resp := xdstest.Response(cdsType, "1")
	sent := s.Send(st, resp)
	if sent.GetNonce() != "1" || sent.GetVersionInfo() != "1" || resp.GetNonce() != "" {
		t.Fatalf("Send returned nonce %q version %q and left nonce %q, want 1, 1 and the response as it was",
			sent.GetNonce(), sent.GetVersionInfo(), resp.GetNonce())
	}
	if got, err := cs.Recv(); err != nil || got.GetNonce() != sent.GetNonce() {
		t.Fatalf("client got %v (%v), want nonce %q", got, err, sent.GetNonce())
	}
	if req := s.RecvType(st, ldsType); req.GetTypeUrl() != ldsType {
		t.Fatalf("RecvType(%s) = %v", ldsType, req)
	}
}

func TestBootstrap(t *testing.T) {
	for _, tc := range []struct {
		b         xdstest.Bootstrap
		node      string
		authority string
	}{
		{b: xdstest.Bootstrap{Servers: []string{"127.0.0.1:1"}}},
		{b: xdstest.Bootstrap{Servers: []string{"127.0.0.1:1", "127.0.0.1:2"}, Features: []string{"a", "b"}, Node: `{"id": "n"}`}, node: "n"},
		{b: xdstest.Bootstrap{Servers: []string{"127.0.0.1:1"}, Authorities: `{"x": {"xds_servers": ` + xdstest.ServersJSON("127.0.0.1:3") + `}}`}, authority: "x"},
	} {
		cfg := tc.b.Parse(t)
		var uris []string
		for _, srv := range cfg.Servers {
			uris = append(uris, srv.URI)
			if !slices.Equal(srv.ServerFeatures, tc.b.Features) {
				t.Errorf("%s: server %s has features %v, want %v", tc.b.JSON(), srv.URI, srv.ServerFeatures, tc.b.Features)
			}
		}
		if !slices.Equal(uris, tc.b.Servers) {
			t.Errorf("%s: servers %v, want %v", tc.b.JSON(), uris, tc.b.Servers)
		}
		if cfg.Node.GetId() != tc.node {
			t.Errorf("%s: node %q, want %q", tc.b.JSON(), cfg.Node.GetId(), tc.node)
		}
		if a := cfg.Authorities[tc.authority]; tc.authority != "" && (a == nil || len(a.Servers) != 1 || a.Servers[0].URI != "127.0.0.1:3") {
			t.Errorf("%s: authority %q is %+v, want one server, 127.0.0.1:3", tc.b.JSON(), tc.authority, a)
		}
	}
}

func TestWatcher(t *testing.T) {
	w := xdstest.NewWatcher()
	w.ExpectNone(t)
	w.ResourceChanged(&xdsclient.Resource{Name: "c1", Version: "1"}, nil)
	w.ResourceChanged(nil, status.Error(codes.NotFound, "gone"))
	w.AmbientError(status.Error(codes.Unavailable, "down"))
	if c := w.Expect(t, xdsclient.NotifyResource, 0); c.Resource.Name != "c1" || c.String() != "resource(c1@1)" {
		t.Errorf("first callback %v", c)
	}
	w.Expect(t, xdsclient.NotifyResourceError, codes.NotFound)
	if c := w.Next(t); c.Kind != xdsclient.NotifyAmbientError || status.Code(c.Err) != codes.Unavailable {
		t.Errorf("third callback %v", c)
	}
	w.ExpectNone(t)
}

func TestCountdown(t *testing.T) {
	c := xdstest.NewCountdown(2)
	for range 2 {
		c.ResourceChanged(nil, nil)
	}
	c.Wait()
	c.Reset()
	c.AmbientError(errors.New("ignored"))
	c.ResourceChanged(nil, nil)
	c.ResourceChanged(nil, nil)
	c.Wait()
	if resp := xdstest.FullStateClusters(3, 1); len(resp.GetResources()) != 3 || resp.GetNonce() != "1" || resp.GetVersionInfo() != "1" {
		t.Errorf("FullStateClusters(3, 1) = %v", resp)
	}
}

func TestSyncBuffer(t *testing.T) {
	var b xdstest.SyncBuffer
	slog.New(slog.NewTextHandler(&b, nil)).Info("hello")
	if !strings.Contains(b.String(), "msg=hello") {
		t.Errorf("buffer holds %q", b.String())
	}
}
