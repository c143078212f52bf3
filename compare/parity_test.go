package compare_test

import (
	"context"
	"sync"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/xdslens/xdslens/internal/testing/rpctest"
	"github.com/xdslens/xdslens/internal/testing/xdstest"
	"github.com/xdslens/xdslens/internal/xdswatch/demo/backends"
	"github.com/xdslens/xdslens/internal/xdswatch/demo/controlplane"
)

// TestSideBySideRetryOnAsWritten: a route retries on "Unavailable",
// capitalized, and its backend fails every other RPC. A deliberate
// difference, asserted: xdslens compares each retry_on condition as
// written, as gRPC C-core does, so "Unavailable" names no condition gRPC
// knows and about half the RPCs fail; grpc-go lower-cases it and retries
// them all to success.
func TestSideBySideRetryOnAsWritten(t *testing.T) {
	s := newSideBySide(t, 1)
	e := s.e
	e.Set(controlplane.Listener("svc", "svc-route"),
		rpctest.RouteConfig("svc-route", rpctest.Route(rpctest.PrefixMatch("/"),
			controlplane.WithRetry(rpctest.ToCluster("c"), "Unavailable", 3, 10*time.Millisecond, 50*time.Millisecond))),
		controlplane.Cluster("c", ""), controlplane.Endpoints("c", e.Addr(0)))
	s.ready(t)
	e.Backends[0].Fail(backends.Failure{Every: 2})
	ctx := xdstest.Context(t)
	if got := counts(ctx, s.theirs, 100); got[codes.OK] != 100 {
		t.Errorf("grpc-go: %v of 100 RPCs, want all OK, retried (if this changed, so did the difference)", got)
	}
	if got := counts(ctx, s.ours, 100); got[codes.Unavailable] < 40 || got[codes.Unavailable] > 60 {
		t.Errorf("xdslens: %v of 100 RPCs, want about half UNAVAILABLE, not retried", got)
	}
}

// TestSideBySideRuntimeFractionWithoutDefault: a route to c1 whose
// runtime_fraction has no default_value comes before a route to c2. A
// deliberate difference, asserted: xdslens reads no fraction, as gRPC
// C-core does, and the first route takes every RPC; grpc-go reads a
// fraction of 0, and every RPC goes past it to c2.
func TestSideBySideRuntimeFractionWithoutDefault(t *testing.T) {
	s := newSideBySide(t, 2)
	e := s.e
	s.clusterOf = map[string]string{e.Addr(0): "c1", e.Addr(1): "c2"}
	fraction := rpctest.PrefixMatch("/")
	fraction.RuntimeFraction = &corev3.RuntimeFractionalPercent{RuntimeKey: "k"}
	e.Set(controlplane.Listener("svc", "svc-route"),
		rpctest.RouteConfig("svc-route",
			rpctest.Route(fraction, rpctest.ToCluster("c1")),
			rpctest.Route(rpctest.PrefixMatch("/"), rpctest.ToCluster("c2"))),
		controlplane.Cluster("c1", ""), controlplane.Endpoints("c1", e.Addr(0)),
		controlplane.Cluster("c2", ""), controlplane.Endpoints("c2", e.Addr(1)))
	s.ready(t)
	ctx := xdstest.Context(t)
	for range 10 {
		if ours, theirs := s.where(rpctest.Call(ctx, s.ours, "/pkg.Svc/M")), s.where(rpctest.Call(ctx, s.theirs, "/pkg.Svc/M")); ours != "c1" || theirs != "c2" {
			t.Fatalf("xdslens reached %s, grpc-go %s; want c1 and c2 (if grpc-go reached c1, the difference is gone)", ours, theirs)
		}
	}
}

// TestSideBySideOptionalFilterWithoutConfig: the Listener moves from
// route configuration r1 (to c1) to r2 (to c2), and gains an optional
// HTTP filter without typed_config. A deliberate difference, asserted:
// xdslens rejects the Listener, as gRPC C-core does (is_optional excuses a
// type gRPC does not know, not a missing one), and keeps sending to c1
// (gRFC A88 keeps the last good resource); grpc-go skips the filter and
// sends to c2.
func TestSideBySideOptionalFilterWithoutConfig(t *testing.T) {
	s := newSideBySide(t, 2)
	e := s.e
	rest := s.listenerSwitch(t)
	e.Set(append([]proto.Message{editHCM(t, controlplane.Listener("svc", "r2"), func(hcm *hcmv3.HttpConnectionManager) {
		hcm.HttpFilters = append([]*hcmv3.HttpFilter{{Name: "bare", IsOptional: true}}, hcm.HttpFilters...)
	})}, rest...)...)
	waitNACKed(t, e, listenerTypeURL, "svc")
	ctx := xdstest.Context(t)
	if !rpctest.Poll(ctx, func(ctx context.Context) bool { return s.where(rpctest.Call(ctx, s.theirs, "/pkg.Svc/M")) == "c2" }) {
		t.Fatal("grpc-go never sent to c2 (if it now rejects the Listener too, this difference is gone)")
	}
	for range 10 {
		if got := s.where(rpctest.Call(ctx, s.ours, "/pkg.Svc/M")); got != "c1" {
			t.Fatalf("xdslens reached %s after rejecting the Listener, want c1, the last good Listener's", got)
		}
	}
}

// TestSideBySideTypeURLOfAnotherHost: the Listener moves from route
// configuration r1 (to c1) to r2 (to c2), and its router filter's
// typed_config now names its type under another host than
// type.googleapis.com. A deliberate difference, asserted: xdslens reads
// the type after the last "/", as gRPC C-core and protobuf's Any do, and
// sends to c2; grpc-go finds no filter of that type URL, rejects the
// Listener (the control plane hears its NACK, xdslens's being an ACK) and
// keeps sending to c1.
func TestSideBySideTypeURLOfAnotherHost(t *testing.T) {
	nacked := make(chan struct{})
	var once sync.Once
	cb := controlplane.CallbackFuncs{StreamRequest: func(_ int64, req *discoveryv3.DiscoveryRequest) error {
		if req.GetTypeUrl() == "type.googleapis.com/envoy.config.listener.v3.Listener" && req.GetErrorDetail() != nil {
			once.Do(func() { close(nacked) })
		}
		return nil
	}}
	e := rpctest.NewEnvWith(t, 2, []controlplane.Option{controlplane.WithCallbacks(cb)})
	s := &sideBySide{e: e, ours: e.Dial("xdslens:///svc"), theirs: dialGRPC(e, "xds:///svc")}
	rest := s.listenerSwitch(t)
	e.Set(append([]proto.Message{editHCM(t, controlplane.Listener("svc", "r2"), func(hcm *hcmv3.HttpConnectionManager) {
		router := hcm.HttpFilters[len(hcm.HttpFilters)-1].GetTypedConfig()
		router.TypeUrl = "example.com/" + string(router.MessageName())
	})}, rest...)...)
	ctx := xdstest.Context(t)
	if !rpctest.Poll(ctx, func(ctx context.Context) bool { return s.where(rpctest.Call(ctx, s.ours, "/pkg.Svc/M")) == "c2" }) {
		t.Fatal("xdslens never sent to c2: it did not take the router under another host's type URL")
	}
	select {
	case <-nacked:
	case <-ctx.Done():
		t.Fatal("no client NACKed the Listener (if grpc-go now takes it too, this difference is gone)")
	}
	for range 10 {
		if got := s.where(rpctest.Call(ctx, s.theirs, "/pkg.Svc/M")); got != "c1" {
			t.Fatalf("grpc-go reached %s, want c1, the last good Listener's (if it reached c2, the difference is gone)", got)
		}
	}
}

// listenerSwitch serves Listener svc with route configuration r1, to c1,
// until both channels reach c1, and returns the other resources of the
// scenario, for the Listener that replaces it: r1, and r2 to c2.
func (s *sideBySide) listenerSwitch(t *testing.T) []proto.Message {
	t.Helper()
	e := s.e
	s.clusterOf = map[string]string{e.Addr(0): "c1", e.Addr(1): "c2"}
	rest := []proto.Message{
		rpctest.RouteConfig("r1", rpctest.Route(rpctest.PrefixMatch("/"), rpctest.ToCluster("c1"))),
		rpctest.RouteConfig("r2", rpctest.Route(rpctest.PrefixMatch("/"), rpctest.ToCluster("c2"))),
		controlplane.Cluster("c1", ""), controlplane.Endpoints("c1", e.Addr(0)),
		controlplane.Cluster("c2", ""), controlplane.Endpoints("c2", e.Addr(1)),
	}
	e.Set(append([]proto.Message{controlplane.Listener("svc", "r1")}, rest...)...)
	s.eventually(t, "c1", "/pkg.Svc/M")
	return rest
}

// editHCM applies edit to the HttpConnectionManager of the client
// Listener l.
func editHCM(t *testing.T, l *listenerv3.Listener, edit func(*hcmv3.HttpConnectionManager)) *listenerv3.Listener {
	t.Helper()
	hcm := new(hcmv3.HttpConnectionManager)
	if err := l.GetApiListener().GetApiListener().UnmarshalTo(hcm); err != nil {
		t.Fatal(err)
	}
	edit(hcm)
	a, err := anypb.New(hcm)
	if err != nil {
		t.Fatal(err)
	}
	l.ApiListener.ApiListener = a
	return l
}
