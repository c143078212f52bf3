package telemetry_test

import (
	"context"
	"net"
	"testing"
	"time"

	rbacconfigv3 "github.com/envoyproxy/go-control-plane/envoy/config/rbac/v3"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/xdslens/xdslens/internal/testing/certtest"
	"github.com/xdslens/xdslens/internal/testing/servertest"
	"github.com/xdslens/xdslens/internal/testing/xdstest"
	"github.com/xdslens/xdslens/internal/xdswatch/demo/serverres"
	"github.com/xdslens/xdslens/telemetry"
	"github.com/xdslens/xdslens/xdsserver"
)

// TestServerMetrics serves an xDS-enabled server under mTLS and RBAC and
// reads its instruments: the serving state, connections by chain
// (accepted, open, refused, drained), handshake failures and RBAC
// decisions by policy.
func TestServerMetrics(t *testing.T) {
	ctx := xdstest.Context(t)
	env := servertest.NewEnv(t, servertest.Options{})
	notify := &xdsserver.Hooks{
		ServingModeChanged: func(xdsserver.ServingModeChange) { xdstest.Notify() },
		ConnectionAccepted: func(xdsserver.ConnInfo) { xdstest.Notify() },
		ConnectionRefused:  func(xdsserver.ConnRefusedInfo) { xdstest.Notify() },
		ConnectionClosed:   func(xdsserver.ConnInfo) { xdstest.Notify() },
		ConnectionDrained:  func(xdsserver.ConnDrainInfo) { xdstest.Notify() },
		HandshakeFailed:    func(xdsserver.HandshakeInfo) { xdstest.Notify() },
		AuthzDecision:      func(xdsserver.AuthzInfo) { xdstest.Notify() },
	}
	srv, err := xdsserver.New(env.Pool(), xdsserver.WithDrainGraceTime(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	healthpb.RegisterHealthServer(srv, health.NewServer())
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer mp.Shutdown(context.Background())
	m, err := telemetry.NewServerMetrics(srv, telemetry.WithMeterProvider(mp))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	// The waits below read the instruments when notify wakes them: it
	// runs after the metrics' hooks, which are added first, so that a
	// wake-up always finds the count its event changed.
	defer srv.AddHooks(notify)()
	lis := servertest.Listen(t)
	addr := lis.Addr().String()
	served := make(chan error, 1)
	go func() { served <- srv.Serve(lis) }()
	defer func() {
		srv.Stop()
		<-served
	}()
	name := servertest.ListenerName(addr)
	a := func(kv ...string) string { return lbl(append([]string{telemetry.KeyAddress, addr}, kv...)...) }

	// Not serving yet: a connection is refused. It is one TCP
	// connection, not a gRPC client's, which would connect again.
	plain, err := (&net.Dialer{}).DialContext(ctx, "tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	waitSeries(t, ctx, reader, telemetry.MetricServerConnectionsRefused, map[string]float64{a(telemetry.KeyReason, "not_serving"): 1, a(telemetry.KeyReason, "no_filter_chain"): 0})
	waitSeries(t, ctx, reader, telemetry.MetricServerServing, map[string]float64{a(telemetry.KeyListener, name): 0})
	plain.Close()

	host, port := servertest.HostPort(t, addr)
	rbac := serverres.RBAC("authz", rbacconfigv3.RBAC_ALLOW, map[string]*rbacconfigv3.Policy{
		"health-for-client": serverres.Policy(serverres.PathPrefix("/grpc.health.v1.Health/Check"), serverres.PrincipalExact(servertest.ClientSPIFFE)),
	})
	mtls := serverres.TLS(servertest.Provider, servertest.Provider, true)
	env.Set(serverres.Listener(name, host, port, nil,
		serverres.Chain("mtls", nil, serverres.InlineHCM(serverres.Routes("r", serverres.Serve("/")), rbac), mtls)))
	waitSeries(t, ctx, reader, telemetry.MetricServerServing, map[string]float64{a(telemetry.KeyListener, name): 1})
	waitSeries(t, ctx, reader, telemetry.MetricServerModeChanges, map[string]float64{a(telemetry.KeyMode, "SERVING"): 1, a(telemetry.KeyMode, "NOT_SERVING"): 0})

	client := servertest.Dial(t, addr, grpc.WithTransportCredentials(env.ClientTLS(&certtest.Names{URIs: []string{servertest.ClientSPIFFE}})))
	hc := healthpb.NewHealthClient(client)
	hc.Check(ctx, &healthpb.HealthCheckRequest{}) //nolint:errcheck // allowed
	hc.Watch(ctx, &healthpb.HealthCheckRequest{}) //nolint:errcheck // a stream RPC, denied: no policy matches Watch
	noCert := servertest.Dial(t, addr, grpc.WithTransportCredentials(env.ClientTLS(nil)))
	noCert.Connect() // its handshake fails: mTLS requires a certificate

	waitSeries(t, ctx, reader, telemetry.MetricServerRBACDecisions, map[string]float64{
		a(telemetry.KeyFilterChain, "mtls", telemetry.KeyRBACFilter, "authz", telemetry.KeyRBACPolicy, "health-for-client", telemetry.KeyRBACDecision, "allow"): 1,
		a(telemetry.KeyFilterChain, "mtls", telemetry.KeyRBACFilter, "authz", telemetry.KeyRBACPolicy, "", telemetry.KeyRBACDecision, "deny"):                   1,
	})
	xdstest.WaitFor(t, ctx, "a handshake failure", func() bool {
		return series(collect(t, reader), telemetry.MetricServerHandshakeFailures)[a(telemetry.KeyFilterChain, "mtls")] >= 1
	})
	// The chain's drain series are born at 0 with its first connection.
	if got, ok := series(collect(t, reader), telemetry.MetricServerConnectionsDrained)[a(telemetry.KeyFilterChain, "mtls", telemetry.KeyReason, "listener_changed")]; !ok || got != 0 {
		t.Errorf("drains before any: %v (present %v), want a series at 0", got, ok)
	}
	xdstest.WaitFor(t, ctx, "the client's connection open", func() bool {
		return series(collect(t, reader), telemetry.MetricServerConnections)[a(telemetry.KeyFilterChain, "mtls")] >= 1
	})

	// The chain changes: its connections are drained.
	env.Set(serverres.Listener(name, host, port, nil,
		serverres.Chain("mtls", nil, serverres.InlineHCM(serverres.Routes("r", serverres.Serve("/"))), mtls)))
	xdstest.WaitFor(t, ctx, "a drained connection", func() bool {
		return series(collect(t, reader), telemetry.MetricServerConnectionsDrained)[a(telemetry.KeyFilterChain, "mtls", telemetry.KeyReason, "listener_changed")] >= 1
	})
	client.Close()
	noCert.Close()
	waitSeries(t, ctx, reader, telemetry.MetricServerConnections, map[string]float64{})
	if got := series(collect(t, reader), telemetry.MetricServerConnectionsAccepted)[a(telemetry.KeyFilterChain, "mtls")]; got < 2 {
		t.Errorf("accepted connections on mtls: %v, want both clients'", got)
	}
}
