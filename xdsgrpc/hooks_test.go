package xdsgrpc_test

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/xdslens/xdslens/internal/testing/rpctest"
	"github.com/xdslens/xdslens/internal/testing/xdstest"
	"github.com/xdslens/xdslens/internal/xdswatch/demo/controlplane"
	"github.com/xdslens/xdslens/xdsgrpc"
)

// hookLog records what the data-plane hooks report.
type hookLog struct {
	mu       sync.Mutex
	configs  []xdsgrpc.ConfigInfo
	picks    []xdsgrpc.PickInfo
	finished []xdsgrpc.CallEndInfo
}

func (l *hookLog) hooks() *xdsgrpc.Hooks {
	return &xdsgrpc.Hooks{
		ConfigChanged: func(i xdsgrpc.ConfigInfo) {
			l.mu.Lock()
			l.configs = append(l.configs, i)
			l.mu.Unlock()
			xdstest.Notify()
		},
		Picked: func(i xdsgrpc.PickInfo) { l.mu.Lock(); l.picks = append(l.picks, i); l.mu.Unlock() },
		CallFinished: func(i xdsgrpc.CallEndInfo) {
			l.mu.Lock()
			l.finished = append(l.finished, i)
			l.mu.Unlock()
			xdstest.Notify()
		},
	}
}

// lastPick returns the last pick reported.
func (l *hookLog) lastPick() xdsgrpc.PickInfo {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.picks) == 0 {
		return xdsgrpc.PickInfo{}
	}
	return l.picks[len(l.picks)-1]
}

// emptyCall is a method the backends answer (and can hold).
const emptyCall = "/grpc.testing.TestService/EmptyCall"

// TestHooksAndCallInfo checks that every outcome of a pick is reported, with
// the cluster, and that CallInfo tells the caller where its RPC went.
func TestHooksAndCallInfo(t *testing.T) {
	var log hookLog
	e := rpctest.NewEnv(t, 2, xdsgrpc.WithHooks(log.hooks()))
	dropAll := controlplane.Endpoints("dropping", e.Addr(1))
	dropAll.Policy = &endpointv3.ClusterLoadAssignment_Policy{DropOverloads: []*endpointv3.ClusterLoadAssignment_Policy_DropOverload{{
		Category: "lb", DropPercentage: &typev3.FractionalPercent{Numerator: 100, Denominator: typev3.FractionalPercent_HUNDRED},
	}}}
	limited := controlplane.Cluster("limited", "")
	limited.CircuitBreakers = &clusterv3.CircuitBreakers{Thresholds: []*clusterv3.CircuitBreakers_Thresholds{{MaxRequests: wrapperspb.UInt32(1)}}}
	e.Set(controlplane.Listener("svc", "svc-route"),
		rpctest.RouteConfig("svc-route",
			rpctest.Route(rpctest.PathMatch("/pkg.Svc/Drop"), rpctest.ToCluster("dropping")),
			rpctest.Route(rpctest.PathMatch(emptyCall), rpctest.ToCluster("limited")),
			&routev3.Route{Match: rpctest.PathMatch("/pkg.Svc/NonForwarding"), Action: &routev3.Route_NonForwardingAction{NonForwardingAction: &routev3.NonForwardingAction{}}},
			rpctest.Route(rpctest.PrefixMatch("/pkg.Svc/"), rpctest.ToCluster("c")),
		),
		controlplane.Cluster("c", ""), controlplane.Endpoints("c", e.Addr(0)),
		controlplane.Cluster("dropping", ""), dropAll,
		limited, controlplane.Endpoints("limited", e.Addr(1)))
	conn := e.Dial("xdslens:///svc")
	ctx := xdstest.Context(t)
	if !rpctest.Poll(ctx, func(ctx context.Context) bool { return rpctest.Call(ctx, conn, "/pkg.Svc/M").Err == nil }) {
		t.Fatal("no RPC succeeded")
	}

	o := rpctest.Call(ctx, conn, "/pkg.Svc/M")
	if o.Err != nil || o.Cluster != "c" || o.Backend != e.Addr(0) {
		t.Errorf("RPC: %+v, want cluster c and backend 0", o)
	}
	if p := log.lastPick(); p.Outcome != xdsgrpc.PickSent || p.Cluster != "c" || p.Leaf != "c" || p.Target != "xdslens:///svc" {
		t.Errorf("pick: %+v, want sent to c", p)
	}
	xdstest.WaitFor(t, ctx, "CallFinished", func() bool {
		log.mu.Lock()
		defer log.mu.Unlock()
		return len(log.finished) > 0 && log.finished[len(log.finished)-1].Cluster == "c"
	})

	for _, tc := range []struct {
		method  string
		outcome xdsgrpc.PickOutcome
		cluster string
		msg     string
	}{
		{"/other.Svc/M", xdsgrpc.PickNoRoute, "", `no route of virtual host "svc-route-vh" in RDS resource "svc-route" matches the RPC "/other.Svc/M"`},
		{"/pkg.Svc/NonForwarding", xdsgrpc.PickUnsupportedAction, "", "cannot forward it"},
		{"/pkg.Svc/Drop", xdsgrpc.PickDropped, "dropping", `dropped by drop_overloads category "lb"`},
	} {
		o := rpctest.Call(ctx, conn, tc.method)
		if status.Code(o.Err) != codes.Unavailable || !strings.Contains(o.Err.Error(), tc.msg) || !strings.Contains(o.Err.Error(), rpctest.NodeID) && tc.outcome != xdsgrpc.PickDropped {
			t.Errorf("%s: %v; want UNAVAILABLE saying %q and the node ID", tc.method, o.Err, tc.msg)
		}
		if o.Cluster != tc.cluster {
			t.Errorf("%s: CallInfo.Cluster %q, want %q", tc.method, o.Cluster, tc.cluster)
		}
		if p := log.lastPick(); p.Outcome != tc.outcome || p.Cluster != tc.cluster {
			t.Errorf("%s: pick %+v, want outcome %v in cluster %q", tc.method, p, tc.outcome, tc.cluster)
		}
	}

	// Circuit breaking: one RPC held in "limited", the next refused.
	release := e.Backends[1].Hold()
	held := make(chan rpctest.Outcome, 1)
	go func() { held <- rpctest.Call(ctx, conn, emptyCall) }()
	if err := e.Backends[1].WaitCalls(ctx, 1); err != nil {
		t.Fatal(err)
	}
	o = rpctest.Call(ctx, conn, emptyCall)
	if status.Code(o.Err) != codes.Unavailable || !strings.Contains(o.Err.Error(), "max_requests 1") {
		t.Errorf("second RPC to limited: %v, want UNAVAILABLE naming max_requests 1", o.Err)
	}
	if p := log.lastPick(); p.Outcome != xdsgrpc.PickOverloaded || p.Cluster != "limited" {
		t.Errorf("pick: %+v, want overloaded in limited", p)
	}
	if got := e.Builder.InFlight(); !slices.ContainsFunc(got, func(i xdsgrpc.InFlightInfo) bool {
		return i.Cluster == "limited" && i.InFlight == 1 && i.MaxRequests == 1
	}) {
		t.Errorf("InFlight() = %+v, want limited at 1 of 1", got)
	}
	release()
	if o := <-held; o.Err != nil {
		t.Errorf("held RPC: %v", o.Err)
	}

	// ConfigChanged runs on the channel's hook queue, which may still be
	// behind the RPCs that the config let through.
	xdstest.WaitFor(t, ctx, "ConfigChanged", func() bool {
		log.mu.Lock()
		defer log.mu.Unlock()
		return len(log.configs) > 0
	})
	log.mu.Lock()
	defer log.mu.Unlock()
	if !slices.Contains(log.configs[0].Changes.Added, "c") {
		t.Errorf("first ConfigChanged: %+v, want it to add cluster c", log.configs)
	}
}

// TestChannelHooks checks that a channel's start comes before its first
// config and its close after its last.
func TestChannelHooks(t *testing.T) {
	var mu sync.Mutex
	var events []string
	add := func(s string) { mu.Lock(); events = append(events, s); mu.Unlock(); xdstest.Notify() }
	e := rpctest.NewEnv(t, 1, xdsgrpc.WithHooks(&xdsgrpc.Hooks{
		ChannelStarted: func(i xdsgrpc.ChannelInfo) { add("started " + i.Target + " " + i.Listener) },
		ConfigChanged:  func(i xdsgrpc.ConfigInfo) { add("config") },
		ChannelClosed:  func(i xdsgrpc.ChannelInfo) { add("closed " + i.Target) },
	}))
	e.Set(controlplane.Listener("svc", "svc-route"), rpctest.RouteConfig("svc-route", rpctest.Route(rpctest.PrefixMatch("/"), rpctest.ToCluster("c"))),
		controlplane.Cluster("c", ""), controlplane.Endpoints("c", e.Addr(0)))
	conn := e.Dial("xdslens:///svc")
	if o := rpctest.Call(xdstest.Context(t), conn, "/pkg.Svc/M"); o.Err != nil {
		t.Fatal(o.Err)
	}
	conn.Close()
	xdstest.WaitFor(t, xdstest.Context(t), "the channel's close", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(events) > 0 && strings.HasPrefix(events[len(events)-1], "closed")
	})
	mu.Lock()
	defer mu.Unlock()
	if want := []string{"started xdslens:///svc svc", "config", "closed xdslens:///svc"}; !slices.Equal(events, want) {
		t.Errorf("events %q, want %q", events, want)
	}
}
