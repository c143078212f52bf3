package xdsgrpc_test

import (
	"context"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/xds"
	"google.golang.org/protobuf/proto"

	"github.com/xdslens/xdslens/internal/controlplane"
	"github.com/xdslens/xdslens/internal/xdstest"
)

// dialGRPC returns a channel to target ("xds:///...") through grpc-go's
// own xDS resolver, configured by the env's bootstrap.
func (e *env) dialGRPC(target string) *grpc.ClientConn {
	e.t.Helper()
	rb, err := xds.NewXDSResolverWithConfigForTesting([]byte(e.bootstrap))
	if err != nil {
		e.t.Fatal(err)
	}
	conn, err := grpc.NewClient(target, grpc.WithResolvers(rb), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { conn.Close() })
	return conn
}

// sideBySide is one channel through xdslens and one through grpc-go's xDS
// resolver, to the same listener of the same control plane.
type sideBySide struct {
	e            *env
	ours, theirs *grpc.ClientConn
	clusterOf    map[string]string // backend address → cluster, for the scenario
}

func newSideBySide(t *testing.T, nBackends int) *sideBySide {
	e := newEnv(t, nBackends)
	return &sideBySide{e: e, ours: e.dial("xdslens:///svc"), theirs: e.dialGRPC("xds:///svc")}
}

// where returns the cluster a backend address belongs to, or a failure
// description.
func (s *sideBySide) where(o outcome) string {
	if o.err != nil {
		if testing.Verbose() {
			return "error " + o.err.Error()
		}
		return "error " + grpcCode(o.err)
	}
	if c, ok := s.clusterOf[o.backend]; ok {
		return c
	}
	return "backend " + o.backend
}

// both makes the RPC on both channels and fails the test unless both reach
// the same cluster, which is returned.
func (s *sideBySide) both(t *testing.T, method string, md ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), xdstest.Timeout)
	defer cancel()
	ours := s.where(call(ctx, s.ours, method, md...))
	theirs := s.where(call(ctx, s.theirs, method, md...))
	if ours != theirs {
		t.Errorf("%s %v: xdslens reached %s, grpc-go %s", method, md, ours, theirs)
	}
	return ours
}

// eventually repeats both until they reach want or the deadline passes.
func (s *sideBySide) eventually(t *testing.T, want, method string, md ...string) {
	t.Helper()
	var ours, theirs string
	if !poll(xdstest.Context(t), func(ctx context.Context) bool {
		ours, theirs = s.where(call(ctx, s.ours, method, md...)), s.where(call(ctx, s.theirs, method, md...))
		return ours == want && theirs == want
	}) {
		t.Fatalf("%s: the channels did not both reach %s: xdslens reached %s, grpc-go %s", method, want, ours, theirs)
	}
}

func TestSideBySideRouting(t *testing.T) {
	s := newSideBySide(t, 4)
	e := s.e
	rc := routeConfig("svc-route",
		route(pathMatch("/pkg.Svc/Exact"), toCluster("c1")),
		route(withHeader(prefixMatch("/pkg.Svc/"), "x-canary", "yes"), toCluster("c2")),
		route(regexMatch("/pkg\\.Svc/Re[a-z]+"), toCluster("c3")),
		route(withHeader(prefixMatch("/pkg.Svc/"), "content-type", "application/grpc"), toCluster("c4")),
		route(prefixMatch("/"), toCluster("c1")),
	)
	var res []proto.Message
	res = append(res, controlplane.Listener("svc", "svc-route"), rc)
	s.clusterOf = map[string]string{}
	for i, c := range []string{"c1", "c2", "c3", "c4"} {
		res = append(res, controlplane.Cluster(c, ""), controlplane.Endpoints(c, e.addr(i)))
		s.clusterOf[e.addr(i)] = c
	}
	e.set(res...)
	s.eventually(t, "c1", "/pkg.Svc/Exact")
	for _, tc := range []struct {
		method string
		md     []string
		want   string
	}{
		{"/pkg.Svc/Exact", nil, "c1"},
		{"/pkg.Svc/Exact", []string{"x-canary", "yes"}, "c1"}, // first match wins
		{"/pkg.Svc/Other", []string{"x-canary", "yes"}, "c2"},
		{"/pkg.Svc/Other", []string{"X-Canary", "yes"}, "c2"},
		{"/pkg.Svc/Regex", nil, "c3"},
		{"/other.Svc/M", nil, "c1"},
	} {
		if got := s.both(t, tc.method, tc.md...); got != tc.want {
			t.Errorf("%s %v: both reached %s, want %s", tc.method, tc.md, got, tc.want)
		}
	}
	// A deliberate difference: a header matcher on content-type sees
	// "application/grpc" in xdslens, as in gRPC C-core (and as gRFC A28
	// means it, naming content-type as the way to match gRPC requests),
	// while grpc-go's config selector runs before the content-type is
	// added and never sees one.
	ctx := xdstest.Context(t)
	if got := s.where(call(ctx, s.ours, "/pkg.Svc/Re9")); got != "c4" {
		t.Errorf("xdslens: content-type route: reached %s, want c4", got)
	}
	if got := s.where(call(ctx, s.theirs, "/pkg.Svc/Re9")); got != "c1" {
		t.Errorf("grpc-go: content-type route: reached %s, want c1 (if grpc-go now matches content-type, this difference is gone)", got)
	}
}

func TestSideBySideWeightedClusters(t *testing.T) {
	s := newSideBySide(t, 2)
	e := s.e
	s.clusterOf = map[string]string{e.addr(0): "a", e.addr(1): "b"}
	e.set(controlplane.Listener("svc", "svc-route"),
		routeConfig("svc-route", route(prefixMatch("/"), toWeighted("a", 20, "b", 80))),
		controlplane.Cluster("a", ""), controlplane.Endpoints("a", e.addr(0)),
		controlplane.Cluster("b", ""), controlplane.Endpoints("b", e.addr(1)))
	s.eventually(t, "b", "/pkg.Svc/M")
	const n = 2000
	ctx := xdstest.Context(t)
	for name, conn := range map[string]*grpc.ClientConn{"xdslens": s.ours, "grpc-go": s.theirs} {
		counts := map[string]int{}
		for range n {
			counts[s.where(call(ctx, conn, "/pkg.Svc/M"))]++
		}
		// 400 expected for a; 4 standard deviations of a binomial(2000, 0.2) are 72.
		if a := counts["a"]; a < 328 || a > 472 || counts["a"]+counts["b"] != n {
			t.Errorf("%s: %v over %d RPCs, want a within 400±72", name, counts, n)
		}
	}
}

func TestSideBySidePriorities(t *testing.T) {
	s := newSideBySide(t, 2)
	e := s.e
	s.clusterOf = map[string]string{e.addr(0): "p0", e.addr(1): "p1"}
	e.set(controlplane.Listener("svc", "svc-route"),
		routeConfig("svc-route", route(prefixMatch("/"), toCluster("c"))),
		controlplane.Cluster("c", ""),
		endpoints("c", locality{zone: "a", weight: 1, priority: 0, addrs: []string{e.addr(0)}},
			locality{zone: "b", weight: 1, priority: 1, addrs: []string{e.addr(1)}}))
	s.eventually(t, "p0", "/pkg.Svc/M")
	e.backends[0].Stop()
	s.eventually(t, "p1", "/pkg.Svc/M")
	if err := e.backends[0].Restart(); err != nil {
		t.Fatal(err)
	}
	s.eventually(t, "p0", "/pkg.Svc/M")
}

func TestSideBySideAggregateCluster(t *testing.T) {
	s := newSideBySide(t, 2)
	e := s.e
	s.clusterOf = map[string]string{e.addr(0): "c1", e.addr(1): "c2"}
	e.set(controlplane.Listener("svc", "svc-route"),
		routeConfig("svc-route", route(prefixMatch("/"), toCluster("agg"))),
		controlplane.AggregateCluster("agg", "c1", "c2"),
		controlplane.Cluster("c1", ""), controlplane.Endpoints("c1", e.addr(0)),
		controlplane.Cluster("c2", ""), controlplane.Endpoints("c2", e.addr(1)))
	s.eventually(t, "c1", "/pkg.Svc/M")
	e.backends[0].Stop()
	s.eventually(t, "c2", "/pkg.Svc/M")
}
