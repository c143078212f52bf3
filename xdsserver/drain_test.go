package xdsserver_test

import (
	"context"
	"slices"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	rbacconfigv3 "github.com/envoyproxy/go-control-plane/envoy/config/rbac/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"google.golang.org/grpc/connectivity"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/xdslens/xdslens/internal/testing/servertest"
	"github.com/xdslens/xdslens/internal/xdswatch/demo/serverres"
	"github.com/xdslens/xdslens/xdsserver"
)

// watchHealth starts a health Watch stream on conn and returns a func that
// waits for its next status (failing t when the stream fails) and one that
// ends it.
func watchHealth(t *testing.T, s *served) (next func() (healthpb.HealthCheckResponse_ServingStatus, error), stop func()) {
	t.Helper()
	cc := s.plaintext(t)
	ctx, cancel := context.WithCancel(ctxT(t))
	st, err := healthpb.NewHealthClient(cc).Watch(ctx, &healthpb.HealthCheckRequest{})
	if err != nil {
		t.Fatal(err)
	}
	return func() (healthpb.HealthCheckResponse_ServingStatus, error) {
		r, err := st.Recv()
		return r.GetStatus(), err
	}, cancel
}

func plainChain(name string, m *listenerv3.FilterChainMatch, rbac bool) *listenerv3.FilterChain {
	var filters []*hcmv3.HttpFilter
	if rbac {
		filters = append(filters, serverres.RBAC("authz", rbacconfigv3.RBAC_ALLOW, map[string]*rbacconfigv3.Policy{
			"all": serverres.Policy(serverres.AnyPermission, serverres.AnyPrincipal),
		}))
	}
	return serverres.Chain(name, m, serverres.InlineHCM(serverres.Routes("r", serverres.Serve("/")), filters...), nil)
}

// On a Listener change, a connection whose chain changed gets a GOAWAY:
// its RPCs in progress go on, new ones go to a new connection; a
// connection whose chain did not change is kept.
func TestDrainOnChainChange(t *testing.T) {
	env := servertest.NewEnv(t, servertest.Options{})
	s := serve(t, env.Pool())
	env.Set(serverres.Listener(s.name(), s.host, s.port, nil, plainChain("c1", nil, false)))
	waitMode(t, s, xdsserver.ModeServing, "")
	next, stop := watchHealth(t, s)
	defer stop()
	if st, err := next(); err != nil || st != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("first health status %v, %v", st, err)
	}
	conn := s.plaintext(t)
	if err := servertest.Call(ctxT(t), conn, emptyCall); err != nil {
		t.Fatal(err)
	}

	// Another chain added, c1 unchanged: nothing is drained.
	env.Set(serverres.Listener(s.name(), s.host, s.port, nil, plainChain("c1", nil, false),
		plainChain("to-10", &listenerv3.FilterChainMatch{PrefixRanges: []*corev3.CidrRange{serverres.CIDR("10.0.0.0", 8)}}, false)))
	s.ev.wait(t, "the second Listener", func(e *events) bool { return len(e.changes) == 2 })
	// c1 changed (an RBAC filter added): both connections are drained.
	env.Set(serverres.Listener(s.name(), s.host, s.port, nil, plainChain("c1", nil, true)))
	// The Listener's change is reported after the drains it makes.
	s.ev.wait(t, "two drained connections", func(e *events) bool { return len(e.drained) == 2 && len(e.changes) == 3 })
	s.ev.mu.Lock()
	changes := s.ev.changes
	s.ev.mu.Unlock()
	want := []xdsserver.ListenerChangeInfo{
		{Address: s.addr, Listener: s.name(), Chains: 1},
		{Address: s.addr, Listener: s.name(), Chains: 2, Kept: 2},
		{Address: s.addr, Listener: s.name(), Chains: 1, Drained: 2},
	}
	if !slices.Equal(changes, want) {
		t.Errorf("Listener changes %+v, want %+v", changes, want)
	}
	if accepted, _ := s.ev.counts(); accepted != 2 {
		t.Errorf("%d connections accepted before the change, want 2", accepted)
	}

	// The stream in progress goes on.
	s.health.SetServingStatus("", healthpb.HealthCheckResponse_NOT_SERVING)
	if st, err := next(); err != nil || st != healthpb.HealthCheckResponse_NOT_SERVING {
		t.Errorf("the stream in progress after the drain: %v, %v; want NOT_SERVING", st, err)
	}
	// A new RPC on the drained channel goes to a new connection, once the
	// client has read the GOAWAY (the hook comes before it is sent, and
	// a stream the client opens before reading it is served).
	for conn.GetState() == connectivity.Ready {
		if !conn.WaitForStateChange(ctxT(t), connectivity.Ready) {
			t.Fatal("the drained channel stayed READY: no GOAWAY read")
		}
	}
	if err := servertest.Call(ctxT(t), conn, emptyCall); err != nil {
		t.Errorf("an RPC after the drain: %v", err)
	}
	s.ev.wait(t, "a new connection", func(e *events) bool { return len(e.conns) >= 3 })
	// The unary channel's drained connection had no RPC left: its client
	// closes it.
	s.ev.wait(t, "the idle drained connection closed by its client", func(e *events) bool { return len(e.closed) >= 1 })
	stop()
	s.ev.wait(t, "the drained connection closed once its stream ended", func(e *events) bool { return len(e.closed) >= 2 })
}

// When the address stops serving, its connections are drained, and closed
// at the grace time if their RPCs last longer (DrainGraceExpired).
func TestNotServingDrainsConnections(t *testing.T) {
	env := servertest.NewEnv(t, servertest.Options{Features: []string{"fail_on_data_errors"}})
	s := serve(t, env.Pool(), xdsserver.WithDrainGraceTime(100*time.Millisecond))
	env.Set(serverres.Listener(s.name(), s.host, s.port, nil, plainChain("c1", nil, false)))
	waitMode(t, s, xdsserver.ModeServing, "")
	next, stop := watchHealth(t, s)
	defer stop()
	if _, err := next(); err != nil {
		t.Fatal(err)
	}
	env.Set() // deleted: not serving
	waitMode(t, s, xdsserver.ModeNotServing, "deleted")
	s.ev.wait(t, "the connection drained", func(e *events) bool { return len(e.drained) == 1 })
	if _, err := next(); err == nil {
		t.Error("the stream outlived the drain grace time")
	}
	s.ev.wait(t, "the connection closed", func(e *events) bool { return len(e.closed) == 1 })
	s.ev.mu.Lock()
	expired := slices.Clone(s.ev.expired)
	s.ev.mu.Unlock()
	if len(expired) != 1 || expired[0].Chain != "c1" {
		t.Errorf("DrainGraceExpired reported %+v, want once, for the connection of chain c1", expired)
	}
}
