package dashboards_test

// The end-to-end test of the xDS-enabled servers row and alerts: xdswatch
// serves two addresses (--serve), one under mTLS and RBAC, the other
// with no Listener; the test connects with and without certificates (and
// with a raw HTTP/2 client that ignores the GOAWAY of its drained
// connection), a
// real Prometheus scrapes xdswatch, and every server panel query and
// alert expression is evaluated through Prometheus's HTTP API.

import (
	"context"
	"crypto/tls"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	rbacconfigv3 "github.com/envoyproxy/go-control-plane/envoy/config/rbac/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/xdslens/xdslens/dashboards"
	"github.com/xdslens/xdslens/internal/testing/certtest"
	"github.com/xdslens/xdslens/internal/testing/h2test"
	"github.com/xdslens/xdslens/internal/testing/promtest"
	"github.com/xdslens/xdslens/internal/testing/servertest"
	"github.com/xdslens/xdslens/internal/xdswatch/demo/serverres"
)

// serverAlerts are the alerts on xDS-enabled servers, which
// TestServerOnPrometheus checks.
var serverAlerts = []string{dashboards.AlertServerNotServing, dashboards.AlertServerHandshakeFailures, dashboards.AlertServerGoAwayIgnored, dashboards.AlertServerDenialSpike}

// loopbackAddr returns 127.0.0.1:PORT with a port nothing listens on now.
func loopbackAddr(t *testing.T) string {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer lis.Close()
	return lis.Addr().String()
}

// mtlsListener is the Listener of addr: one chain "mtls" under mTLS whose
// RBAC filter allows EmptyCall to the client identity of servertest and
// denies the rest; policy names the allowing policy (a new name is a
// change of the chain).
func mtlsListener(t *testing.T, addr, policy string) proto.Message {
	host, port := servertest.HostPort(t, addr)
	rbac := serverres.RBAC("authz", rbacconfigv3.RBAC_ALLOW, map[string]*rbacconfigv3.Policy{
		policy: serverres.Policy(serverres.PathPrefix("/grpc.testing.TestService/EmptyCall"), serverres.PrincipalExact(servertest.ClientSPIFFE)),
	})
	return serverres.Listener(servertest.ListenerName(addr), host, port, nil,
		serverres.Chain("mtls", nil, serverres.InlineHCM(serverres.Routes("r", serverres.Serve("/")), rbac), serverres.TLS(servertest.Provider, servertest.Provider, true)))
}

func TestServerOnPrometheus(t *testing.T) {
	t.Parallel() // waits on Prometheus's scrapes and rule evaluations
	if testing.Short() {
		t.Skip("end-to-end test: runs xdswatch and Prometheus")
	}
	promBin := promtest.Binary(t)
	dir := t.TempDir()
	env := servertest.NewEnv(t, servertest.Options{})
	bootstrapFile := filepath.Join(dir, "bootstrap.json")
	if err := os.WriteFile(bootstrapFile, []byte(env.Bootstrap), 0o644); err != nil {
		t.Fatal(err)
	}
	secure, absent := loopbackAddr(t), loopbackAddr(t)

	watch := startXdswatch(t, "--bootstrap", bootstrapFile, "--target", "srv", "--metrics-addr", "127.0.0.1:0", "--output", "json",
		"--resource-timeout", "1s", "--serve", secure, "--serve", absent)
	prom := startPrometheus(t, promBin, dir, watch.metrics)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	call := func(conn *grpc.ClientConn, method string) {
		c, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		conn.Invoke(c, method, &emptypb.Empty{}, &emptypb.Empty{}) //nolint:errcheck // the outcomes are what the metrics count
	}
	dial := func(opts ...grpc.DialOption) *grpc.ClientConn {
		conn, err := grpc.NewClient("passthrough:///"+secure, opts...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		return conn
	}

	// Before the Listener: the connection is refused (not serving).
	plain := dial(grpc.WithTransportCredentials(insecure.NewCredentials()))
	call(plain, "/grpc.testing.TestService/EmptyCall")
	prom.WaitFor(t, "a refused connection", dashboards.MetricServerConnectionsRefused+`{reason="not_serving"} > 0`)
	env.Set(mtlsListener(t, secure, "client-empty-call"))
	prom.WaitFor(t, "the address serving", dashboards.MetricServerServing+`{`+dashboards.LabelAddress+`="`+secure+`"} == 1`)

	// Allowed and denied RPCs, and plaintext handshakes that fail, until
	// the panels and alerts have them; then a change of the chain drains
	// the connection.
	client := dial(grpc.WithTransportCredentials(env.ClientTLS(&certtest.Names{URIs: []string{servertest.ClientSPIFFE}})))
	done := make(chan struct{})
	traffic := make(chan struct{})
	go func() {
		defer close(traffic)
		for {
			select {
			case <-done:
				return
			case <-time.After(50 * time.Millisecond):
			}
			call(client, "/grpc.testing.TestService/EmptyCall")
			call(client, "/grpc.testing.TestService/UnaryCall")
			// A new plaintext channel each time, to each address: its
			// handshake fails at once on the mTLS one, its connection is
			// refused on the one not serving, without gRPC's reconnect
			// backoff.
			for _, a := range []string{secure, absent} {
				p, err := grpc.NewClient("passthrough:///"+a, grpc.WithTransportCredentials(insecure.NewCredentials()))
				if err == nil {
					call(p, "/grpc.testing.TestService/EmptyCall")
					p.Close()
				}
			}
		}
	}()
	defer func() { close(done); <-traffic }()
	prom.WaitFor(t, "denials", dashboards.MetricServerRBACDecisions+`{xdslens_rbac_decision="deny"} > 0`)
	// A client that ignores the GOAWAY: its connection is drained with
	// the others, and closed when it opens a stream after the final one.
	raw := rawTLSClient(t, env, secure)
	raw.Call(1, "/grpc.testing.TestService/EmptyCall")
	raw.Want("the raw client's RPC served", true, h2test.ServedOn(1))
	env.Set(mtlsListener(t, secure, "client-empty-call-v2"))
	prom.WaitFor(t, "a drained connection", dashboards.MetricServerConnectionsDrained+`{reason="listener_changed"} > 0`)
	raw.Want("the final GOAWAY", true, h2test.GoAwayWith(1))
	raw.Call(3, "/grpc.testing.TestService/EmptyCall")
	raw.Want("the raw client's connection closed", true, h2test.Closed)
	prom.WaitFor(t, "a drained connection closed", dashboards.MetricServerDrainForcedCloses+`{reason="goaway_ignored"} > 0`)

	// Every server panel query returns series for the xdswatch process,
	// and nothing for a job that does not exist.
	fleet := fleetOf(watch)
	n := 0
	for _, q := range allPanelQueries(t) {
		if !readsServer(q.expr) {
			continue
		}
		n++
		expectPanelData(t, prom, q, substitute(q.expr, rateWindow, fleet))
		expectNoOtherJob(t, prom, q)
	}
	if n < 8 {
		t.Errorf("%d server panel queries, want one per query of the row's six panels", n)
	}
	// Selected panels show what the scenario did.
	prom.ExpectLabels(t, "serving state", panelExpr(t, "Serving state by address", fleet)+" == 1", dashboards.LabelAddress, secure)
	prom.ExpectLabels(t, "not serving", panelExpr(t, "Serving state by address", fleet)+" == 0", dashboards.LabelAddress, absent)
	prom.ExpectLabels(t, "RBAC policies", panelRefExpr(t, "RBAC decisions by policy", "A", fleet)+" > 0", dashboards.LabelRBACPolicy,
		"client-empty-call", "client-empty-call-v2")
	prom.ExpectLabels(t, "handshake failures", panelExpr(t, "TLS handshake failures", fleet), dashboards.LabelFilterChain, "mtls")
	prom.ExpectLabels(t, "drained connections closed", panelExpr(t, "Drained connections closed with their RPCs", fleet), dashboards.LabelReason, "goaway_ignored")

	// Every server alert fires on what the scenario did.
	want := map[string]struct {
		label  string
		values []string
	}{
		dashboards.AlertServerNotServing:        {dashboards.LabelAddress, []string{absent}},
		dashboards.AlertServerHandshakeFailures: {dashboards.LabelFilterChain, []string{"mtls"}},
		dashboards.AlertServerGoAwayIgnored:     {dashboards.LabelFilterChain, []string{"mtls"}},
		dashboards.AlertServerDenialSpike:       {dashboards.LabelRBACFilter, []string{"authz"}},
	}
	for _, r := range e2eRules().Rules {
		if w, ok := want[r.Alert]; ok {
			expectAlert(t, prom, r, w.label, w.values...)
		}
	}
	prom.WaitForAlerts(t, serverAlerts)
}

// rawTLSClient is a raw HTTP/2 client of addr over mTLS, with the client
// identity of servertest.
func rawTLSClient(t *testing.T, env *servertest.Env, addr string) *h2test.Client {
	cert := env.CA.Issue(t, certtest.Names{URIs: []string{servertest.ClientSPIFFE}}).TLS
	conn, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: env.CA.Pool(), ServerName: servertest.ServerDNS,
		Certificates: []tls.Certificate{cert}, NextProtos: []string{"h2"}})
	if err != nil {
		t.Fatalf("a TLS connection to %s: %v", addr, err)
	}
	return h2test.New(t, conn)
}
