package xdswatch

import (
	"strconv"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/xdslens/xdslens/internal/testing/rpctest"
	"github.com/xdslens/xdslens/internal/xdswatch/demo/backends"
	"github.com/xdslens/xdslens/internal/xdswatch/demo/controlplane"
)

// TestRPCLinesAttemptsAndFaults: an rpc line counts the RPC's attempts
// (a retry_policy retried it) and names a fault the fault filter put on
// it; with --rpc-concurrency 2, two loops print lines.
func TestRPCLinesAttemptsAndFaults(t *testing.T) {
	t.Parallel()
	b, err := backends.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Stop)
	b.Fail(backends.Failure{Every: 2})
	cp := startControlPlane(t,
		controlplane.ListenerWithFault("L", "R", controlplane.FaultFromHeaders(), 0),
		rpctest.RouteConfig("R", rpctest.Route(rpctest.PrefixMatch(""),
			controlplane.WithRetry(rpctest.ToCluster("c"), "unavailable", 2, time.Millisecond, time.Millisecond))),
		controlplane.Cluster("c", ""), controlplane.Endpoints("c", b.Addr()))
	p := startRun(t, "--bootstrap", cp.bootstrapFile, "--output", "json", "--rpc-interval", "1h", "--rpc-timeout", "10s",
		"--rpc-concurrency", "2", "--rpc-method", "/grpc.testing.TestService/EmptyCall", "xds:///L")
	p.listening(t)
	most := 0
	for range 2 {
		e := p.nextOf(t, eventRPC)
		if e.Code != "OK" {
			t.Errorf("rpc line %+v, want OK", e)
		}
		most = max(most, e.Attempts)
	}
	// One RPC of the two at least failed its first attempt (every other
	// attempt fails) and was retried.
	if most < 2 {
		t.Errorf("rpc lines of at most %d attempts, want one retried", most)
	}
	p.interrupt(t)

	p = startRun(t, "--bootstrap", cp.bootstrapFile, "--output", "json", "--rpc-interval", "1h", "--rpc-timeout", "10s",
		"--rpc-header", "x-envoy-fault-abort-grpc-request="+strconv.Itoa(int(codes.ResourceExhausted)), "xds:///L")
	p.listening(t)
	if e := p.nextOf(t, eventRPC); e.Code != "RESOURCE_EXHAUSTED" || e.Fault != "abort" || e.Attempts != 1 {
		t.Errorf("rpc line %+v, want RESOURCE_EXHAUSTED by fault abort in 1 attempt", e)
	}
	p.interrupt(t)
}

// TestEjectionLines: with one of three backends failing every RPC, the
// cluster's outlier detection ejects it, and xdswatch prints an ejection
// line naming the cluster, the endpoint and the algorithm.
func TestEjectionLines(t *testing.T) {
	t.Parallel()
	var addrs []string
	for i := range 3 {
		b, err := backends.Start()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(b.Stop)
		if i == 2 {
			b.Fail(backends.Failure{Every: 1})
		}
		addrs = append(addrs, b.Addr())
	}
	cp := startControlPlane(t,
		controlplane.Listener("L", "R"),
		rpctest.RouteConfig("R", rpctest.Route(rpctest.PrefixMatch(""), rpctest.ToCluster("c"))),
		// An interval in which the RPCs, one per 5ms, give each endpoint
		// the 5 the algorithm needs.
		controlplane.WithOutlierDetection(controlplane.Cluster("c", ""), 300*time.Millisecond, time.Hour),
		controlplane.Endpoints("c", addrs...))
	p := startRun(t, "--bootstrap", cp.bootstrapFile, "--output", "json", "--rpc-interval", "5ms", "--rpc-timeout", "10s",
		"--rpc-method", "/grpc.testing.TestService/EmptyCall", "xds:///L")
	p.listening(t)
	e := p.nextOf(t, eventEjection)
	if *e.Cluster != "c" || e.Endpoint != addrs[2] || !e.Ejected || e.Algorithm != "failure_percentage" || e.Target != "xds:///L" {
		t.Errorf("ejection line %+v, want %s of c ejected by failure_percentage", e, addrs[2])
	}
	p.interrupt(t)
}
