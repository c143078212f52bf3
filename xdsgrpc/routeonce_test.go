package xdsgrpc_test

import (
	"context"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/credentials/insecure"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	testpb "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/peer"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/xdslens/xdslens/internal/testing/rpctest"
	"github.com/xdslens/xdslens/internal/testing/xdstest"
	"github.com/xdslens/xdslens/internal/xdswatch/demo/controlplane"
	"github.com/xdslens/xdslens/xdsgrpc"
)

// fastReconnect has a channel retry a refused connection within tens of
// milliseconds, where gRPC's default backoff starts at a second.
var fastReconnect = grpc.WithConnectParams(grpc.ConnectParams{
	Backoff:           backoff.Config{BaseDelay: 10 * time.Millisecond, Multiplier: 1.2, MaxDelay: 50 * time.Millisecond},
	MinConnectTimeout: time.Second,
})

// dialModes are the two ways to dial an xdslens channel: with its
// interceptors, which route an RPC when it starts, and with the resolver
// alone, whose picker routes an RPC at its first pick.
func dialModes(e *rpctest.Env) map[string]func(target string) *grpc.ClientConn {
	return map[string]func(string) *grpc.ClientConn{
		"interceptors": func(target string) *grpc.ClientConn { return e.Dial(target, fastReconnect) },
		"resolver-only": func(target string) *grpc.ClientConn {
			conn, err := grpc.NewClient(target, grpc.WithResolvers(e.Builder), grpc.WithTransportCredentials(insecure.NewCredentials()), fastReconnect)
			if err != nil {
				e.T.Fatal(err)
			}
			e.T.Cleanup(func() { conn.Close() })
			return conn
		},
	}
}

// TestWeightedChoiceDrawnOnce sends RPCs that wait for their clusters'
// endpoints while the config changes five times, each change giving every
// waiting RPC a new picker: each RPC's weighted choice is drawn once, and
// it is answered by the backend of the cluster it was given.
func TestWeightedChoiceDrawnOnce(t *testing.T) {
	for _, mode := range []string{"interceptors", "resolver-only"} {
		t.Run(mode, func(t *testing.T) {
			var draws, configs atomic.Int64
			rnd := func(n uint32) uint32 { draws.Add(1); return rand.Uint32N(n) }
			e := rpctest.NewEnv(t, 2, xdsgrpc.WithRoutingRand(rnd), xdsgrpc.WithHooks(&xdsgrpc.Hooks{
				ConfigChanged: func(xdsgrpc.ConfigInfo) { configs.Add(1) },
			}))
			ctx := xdstest.Context(t)
			e.Backends[0].Stop()
			e.Backends[1].Stop()
			// Each version adds a route that matches nothing of the test's.
			set := func(version string) {
				e.Set(controlplane.Listener("L", "R"),
					rpctest.RouteConfig("R",
						rpctest.Route(rpctest.PrefixMatch("/v"+version+"/"), rpctest.ToCluster("A")),
						rpctest.Route(rpctest.PrefixMatch(""),
							rpctest.ToWeighted(rpctest.WeightedCluster{Name: "A", Weight: 1}, rpctest.WeightedCluster{Name: "B", Weight: 1}))),
					controlplane.Cluster("A", ""), controlplane.Cluster("B", ""),
					controlplane.Endpoints("A", e.Addr(0)), controlplane.Endpoints("B", e.Addr(1)))
			}
			set("0")
			conn := dialModes(e)[mode]("xdslens:///L")

			const n = 20
			type result struct {
				cluster, backend string
				err              error
				withInfo         bool
			}
			results := make([]result, n)
			var wg sync.WaitGroup
			for i := range n {
				wg.Go(func() {
					var p peer.Peer
					cctx := ctx
					var info xdsgrpc.CallInfo
					if i%2 == 0 { // half the RPCs with a CallInfo, half without
						cctx = xdsgrpc.WithCallInfo(ctx, &info)
					}
					err := conn.Invoke(cctx, "/grpc.testing.TestService/EmptyCall", &emptypb.Empty{}, &emptypb.Empty{}, grpc.WaitForReady(true), grpc.Peer(&p))
					r := result{cluster: info.Cluster, err: err, withInfo: i%2 == 0}
					if p.Addr != nil {
						r.backend = p.Addr.String()
					}
					results[i] = r
				})
			}
			// Every RPC has been routed and waits once all have drawn.
			if !rpctest.Poll(ctx, func(context.Context) bool { return draws.Load() >= n }) {
				t.Fatalf("%d draws, want %d", draws.Load(), n)
			}
			// Each change reaches the channel before the backends come
			// back: the new pickers see the waiting RPCs.
			for v := range 5 {
				set(strconv.Itoa(v + 1))
				if !rpctest.Poll(ctx, func(context.Context) bool { return configs.Load() >= int64(v+2) }) {
					t.Fatalf("config %d never reached the channel", v+2)
				}
			}
			if err := e.Backends[0].Restart(); err != nil {
				t.Fatal(err)
			}
			if err := e.Backends[1].Restart(); err != nil {
				t.Fatal(err)
			}
			wg.Wait()
			if got := draws.Load(); got != n {
				t.Errorf("%d weighted draws for %d RPCs, want one each", got, n)
			}
			want := map[string]string{"A": e.Addr(0), "B": e.Addr(1)}
			for i, r := range results {
				if r.err != nil {
					t.Errorf("RPC %d: %v", i, r.err)
					continue
				}
				if r.withInfo && want[r.cluster] != r.backend {
					t.Errorf("RPC %d: routed to cluster %q but answered by %s", i, r.cluster, r.backend)
				}
			}
		})
	}
}

// TestRemovedClusterServesRoutedRPCs routes an RPC to cluster A, whose
// backend is down, then removes A from the route configuration: the RPC
// keeps A (gRFC A74: a cluster stays while RPCs routed to it run) and is
// answered by A's backend when it comes back, while new RPCs go to B.
func TestRemovedClusterServesRoutedRPCs(t *testing.T) {
	for _, mode := range []string{"interceptors", "resolver-only"} {
		t.Run(mode, func(t *testing.T) {
			var draws atomic.Int64
			rnd := func(n uint32) uint32 { draws.Add(1); return rand.Uint32N(n) }
			e := rpctest.NewEnv(t, 2, xdsgrpc.WithRoutingRand(rnd))
			ctx := xdstest.Context(t)
			e.Backends[0].Stop()
			// A route with a runtime fraction of 100%, so that its
			// decision draws, and is seen.
			match := rpctest.PrefixMatch("")
			match.RuntimeFraction = &corev3.RuntimeFractionalPercent{DefaultValue: &typev3.FractionalPercent{Numerator: 100}}
			e.Set(controlplane.Listener("L", "R"),
				rpctest.RouteConfig("R", rpctest.Route(match, rpctest.ToCluster("A"))),
				controlplane.Cluster("A", ""), controlplane.Endpoints("A", e.Addr(0)))
			conn := dialModes(e)[mode]("xdslens:///L")

			var info xdsgrpc.CallInfo
			var p peer.Peer
			done := make(chan error, 1)
			go func() {
				done <- conn.Invoke(xdsgrpc.WithCallInfo(ctx, &info), "/grpc.testing.TestService/EmptyCall", &emptypb.Empty{}, &emptypb.Empty{}, grpc.WaitForReady(true), grpc.Peer(&p))
			}()
			if !rpctest.Poll(ctx, func(context.Context) bool { return draws.Load() >= 1 }) {
				t.Fatal("the RPC was never routed")
			}
			// The config without A: once an RPC reaches B, the channel
			// has it, and the first RPC still waits for A.
			e.Set(controlplane.Listener("L", "R"),
				rpctest.RouteConfig("R", rpctest.Route(rpctest.PrefixMatch(""), rpctest.ToCluster("B"))),
				controlplane.Cluster("B", ""), controlplane.Endpoints("B", e.Addr(1)))
			if !rpctest.Poll(ctx, func(ctx context.Context) bool {
				o := rpctest.Call(ctx, conn, "/pkg.S/M")
				return o.Err == nil && o.Cluster == "B"
			}) {
				t.Fatal("RPCs never reached cluster B")
			}
			select {
			case err := <-done:
				t.Fatalf("the RPC routed to A ended before A's backend came back: %v (cluster %q)", err, info.Cluster)
			default:
			}
			if err := e.Backends[0].Restart(); err != nil {
				t.Fatal(err)
			}
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			if info.Cluster != "A" || p.Addr == nil || p.Addr.String() != e.Addr(0) {
				t.Errorf("the RPC went to cluster %q, backend %v; want A at %s", info.Cluster, p.Addr, e.Addr(0))
			}
		})
	}
}

// TestClientStreamReleasesCluster makes a client-streaming RPC whose
// context outlives it: the RPC gives back its cluster when its response
// comes, as it is then over, not when its context ends.
func TestClientStreamReleasesCluster(t *testing.T) {
	e := rpctest.NewEnv(t, 1)
	e.Set(controlplane.Listener("L", "R"),
		rpctest.RouteConfig("R", rpctest.Route(rpctest.PrefixMatch(""), rpctest.ToCluster("c"))),
		controlplane.Cluster("c", ""), controlplane.Endpoints("c", e.Addr(0)))
	client := testgrpc.NewTestServiceClient(e.Dial("xdslens:///L"))
	ctx := xdstest.Context(t) // not done before the test ends
	var info xdsgrpc.CallInfo
	stream, err := client.StreamingInputCall(xdsgrpc.WithCallInfo(ctx, &info), grpc.WaitForReady(true))
	if err != nil {
		t.Fatal(err)
	}
	if err := stream.Send(&testpb.StreamingInputCallRequest{}); err != nil {
		t.Fatal(err)
	}
	if _, err := stream.CloseAndRecv(); err != nil {
		t.Fatal(err)
	}
	if info.Cluster != "c" || xdsgrpc.CallHeld(&info) {
		t.Errorf("after its response, the RPC to cluster %q holds it: %v, want false", info.Cluster, xdsgrpc.CallHeld(&info))
	}
}
