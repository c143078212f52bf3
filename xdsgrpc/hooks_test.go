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

	"github.com/xdslens/xdslens/internal/controlplane"
	"github.com/xdslens/xdslens/internal/xdstest"
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
		Picked:       func(i xdsgrpc.PickInfo) { l.mu.Lock(); l.picks = append(l.picks, i); l.mu.Unlock() },
		CallFinished: func(i xdsgrpc.CallEndInfo) { l.mu.Lock(); l.finished = append(l.finished, i); l.mu.Unlock() },
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
	e := newEnv(t, 2, xdsgrpc.WithHooks(log.hooks()))
	dropAll := controlplane.Endpoints("dropping", e.addr(1))
	dropAll.Policy = &endpointv3.ClusterLoadAssignment_Policy{DropOverloads: []*endpointv3.ClusterLoadAssignment_Policy_DropOverload{{
		Category: "lb", DropPercentage: &typev3.FractionalPercent{Numerator: 100, Denominator: typev3.FractionalPercent_HUNDRED},
	}}}
	limited := controlplane.Cluster("limited", "")
	limited.CircuitBreakers = &clusterv3.CircuitBreakers{Thresholds: []*clusterv3.CircuitBreakers_Thresholds{{MaxRequests: wrapperspb.UInt32(1)}}}
	e.set(controlplane.Listener("svc", "svc-route"),
		routeConfig("svc-route",
			route(pathMatch("/pkg.Svc/Drop"), toCluster("dropping")),
			route(pathMatch(emptyCall), toCluster("limited")),
			&routev3.Route{Match: pathMatch("/pkg.Svc/NonForwarding"), Action: &routev3.Route_NonForwardingAction{NonForwardingAction: &routev3.NonForwardingAction{}}},
			route(prefixMatch("/pkg.Svc/"), toCluster("c")),
		),
		controlplane.Cluster("c", ""), controlplane.Endpoints("c", e.addr(0)),
		controlplane.Cluster("dropping", ""), dropAll,
		limited, controlplane.Endpoints("limited", e.addr(1)))
	conn := e.dial("xdslens:///svc")
	ctx := xdstest.Context(t)
	if !poll(ctx, func(ctx context.Context) bool { return call(ctx, conn, "/pkg.Svc/M").err == nil }) {
		t.Fatal("no RPC succeeded")
	}

	o := call(ctx, conn, "/pkg.Svc/M")
	if o.err != nil || o.cluster != "c" || o.backend != e.addr(0) {
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
		o := call(ctx, conn, tc.method)
		if status.Code(o.err) != codes.Unavailable || !strings.Contains(o.err.Error(), tc.msg) || !strings.Contains(o.err.Error(), nodeID) && tc.outcome != xdsgrpc.PickDropped {
			t.Errorf("%s: %v; want UNAVAILABLE saying %q and the node ID", tc.method, o.err, tc.msg)
		}
		if o.cluster != tc.cluster {
			t.Errorf("%s: CallInfo.Cluster %q, want %q", tc.method, o.cluster, tc.cluster)
		}
		if p := log.lastPick(); p.Outcome != tc.outcome || p.Cluster != tc.cluster {
			t.Errorf("%s: pick %+v, want outcome %v in cluster %q", tc.method, p, tc.outcome, tc.cluster)
		}
	}

	// Circuit breaking: one RPC held in "limited", the next refused.
	release := e.backends[1].Hold()
	held := make(chan outcome, 1)
	go func() { held <- call(ctx, conn, emptyCall) }()
	if err := e.backends[1].WaitCalls(ctx, 1); err != nil {
		t.Fatal(err)
	}
	o = call(ctx, conn, emptyCall)
	if status.Code(o.err) != codes.Unavailable || !strings.Contains(o.err.Error(), "max_requests 1") {
		t.Errorf("second RPC to limited: %v, want UNAVAILABLE naming max_requests 1", o.err)
	}
	if p := log.lastPick(); p.Outcome != xdsgrpc.PickOverloaded || p.Cluster != "limited" {
		t.Errorf("pick: %+v, want overloaded in limited", p)
	}
	if got := e.builder.InFlight(); !slices.ContainsFunc(got, func(i xdsgrpc.InFlightInfo) bool {
		return i.Cluster == "limited" && i.InFlight == 1 && i.MaxRequests == 1
	}) {
		t.Errorf("InFlight() = %+v, want limited at 1 of 1", got)
	}
	release()
	if o := <-held; o.err != nil {
		t.Errorf("held RPC: %v", o.err)
	}

	log.mu.Lock()
	defer log.mu.Unlock()
	if len(log.configs) == 0 || !slices.Contains(log.configs[0].Changes.Added, "c") {
		t.Errorf("first ConfigChanged: %+v, want it to add cluster c", log.configs)
	}
}

// TestChannelHooks checks that a channel's start comes before its first
// config and its close after its last.
func TestChannelHooks(t *testing.T) {
	var mu sync.Mutex
	var events []string
	add := func(s string) { mu.Lock(); events = append(events, s); mu.Unlock(); xdstest.Notify() }
	e := newEnv(t, 1, xdsgrpc.WithHooks(&xdsgrpc.Hooks{
		ChannelStarted: func(i xdsgrpc.ChannelInfo) { add("started " + i.Target + " " + i.Listener) },
		ConfigChanged:  func(i xdsgrpc.ConfigInfo) { add("config") },
		ChannelClosed:  func(i xdsgrpc.ChannelInfo) { add("closed " + i.Target) },
	}))
	e.set(controlplane.Listener("svc", "svc-route"), routeConfig("svc-route", route(prefixMatch("/"), toCluster("c"))),
		controlplane.Cluster("c", ""), controlplane.Endpoints("c", e.addr(0)))
	conn := e.dial("xdslens:///svc")
	if o := call(xdstest.Context(t), conn, "/pkg.Svc/M"); o.err != nil {
		t.Fatal(o.err)
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
