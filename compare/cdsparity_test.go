package compare_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	roundrobinv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/load_balancing_policies/round_robin/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/xdslens/xdslens/internal/testing/rpctest"
	"github.com/xdslens/xdslens/internal/testing/xdstest"
	"github.com/xdslens/xdslens/internal/xdswatch/demo/controlplane"
)

// The side-by-side cases of this file each serve a first configuration
// that both channels accept, sending RPCs to backend 0 ("old"), then a
// second one that sends them to backend 1 ("new") and holds a Cluster or
// ClusterLoadAssignment that gRPC C-core's parser reads otherwise than
// grpc-go's. xdslens, which follows C-core, and grpc-go then disagree,
// and the difference is asserted: the one that rejects the resource keeps
// its last good one (gRFC A88) and stays on "old", the other moves to
// "new".

const (
	clusterTypeURL   = "type.googleapis.com/envoy.config.cluster.v3.Cluster"
	endpointsTypeURL = "type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment"
	listenerTypeURL  = "type.googleapis.com/envoy.config.listener.v3.Listener"
	routeTypeURL     = "type.googleapis.com/envoy.config.route.v3.RouteConfiguration"
)

// nackLog records the NACKs that reach the control plane, from either
// channel's xDS client.
type nackLog struct {
	mu    sync.Mutex
	nacks []string // "TYPE_URL: message"
}

func (l *nackLog) record(_ int64, req *discoveryv3.DiscoveryRequest) error {
	if d := req.GetErrorDetail(); d != nil {
		l.mu.Lock()
		l.nacks = append(l.nacks, req.GetTypeUrl()+": "+d.GetMessage())
		l.mu.Unlock()
	}
	return nil
}

// has reports whether a NACK of typeURL whose message holds text arrived.
func (l *nackLog) has(typeURL, text string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, n := range l.nacks {
		if strings.HasPrefix(n, typeURL+": ") && strings.Contains(n, text) {
			return true
		}
	}
	return false
}

// parityCase is one side-by-side case of a CDS or EDS parsing difference.
type parityCase struct {
	first, second []proto.Message
	// ours says whether xdslens accepts second (and grpc-go rejects it)
	// or rejects it (and grpc-go accepts it).
	ours bool
	// typeURL and name are the resource that one of them rejects;
	// theirError is a part of grpc-go's NACK when it is grpc-go that
	// rejects it.
	typeURL, name, theirError string
}

// runParity starts a control plane and two backends, builds the case
// from them, serves its first configuration, then its second, and
// asserts the difference.
func runParity(t *testing.T, build func(e *rpctest.Env) parityCase) {
	t.Helper()
	log := &nackLog{}
	e := rpctest.NewEnvWith(t, 2, []controlplane.Option{
		controlplane.WithCallbacks(controlplane.CallbackFuncs{StreamRequest: log.record}),
	})
	s := &sideBySide{e: e, ours: e.Dial("xdslens:///svc"), theirs: dialGRPC(e, "xds:///svc"),
		clusterOf: map[string]string{e.Addr(0): "old", e.Addr(1): "new"}}
	c := build(e)
	e.Set(c.first...)
	s.eventually(t, "old", "/pkg.Svc/M")
	e.Set(c.second...)
	ctx := xdstest.Context(t)
	acceptor, rejecter, who := s.ours, s.theirs, "grpc-go"
	if !c.ours {
		acceptor, rejecter, who = s.theirs, s.ours, "xdslens"
	}
	if !rpctest.Poll(ctx, func(ctx context.Context) bool { return s.where(rpctest.Call(ctx, acceptor, "/pkg.Svc/M")) == "new" }) {
		t.Fatalf("the channel that should accept the second configuration never reached new (xdslens accepts it: %v)", c.ours)
	}
	if c.ours {
		// The NACK, once it has come, is grpc-go's: xdslens holds the
		// resource it sent, and uses it.
		if !rpctest.Poll(ctx, func(context.Context) bool { return log.has(c.typeURL, c.theirError) }) {
			t.Fatalf("grpc-go did not NACK %s %q with %q (if it now accepts it, this difference is gone)", c.typeURL, c.name, c.theirError)
		}
		if state := xdslensState(e, c.typeURL, c.name); state != "ACKED" {
			t.Fatalf("xdslens holds %q %s, want ACKED", c.name, state)
		}
	} else {
		waitNACKed(t, e, c.typeURL, c.name)
	}
	for range 10 {
		if got := s.where(rpctest.Call(ctx, rejecter, "/pkg.Svc/M")); got != "old" {
			t.Fatalf("%s reached %s after rejecting %q, want old, its last good resource's", who, got, c.name)
		}
	}
}

// xdslensState returns the cache state in which a client of e's pool
// holds resource name of typeURL, or "absent".
func xdslensState(e *rpctest.Env, typeURL, name string) string {
	for _, c := range e.Pool.Clients() {
		for _, d := range c.Dump() {
			if d.TypeURL == typeURL && d.Name == name {
				return d.State.String()
			}
		}
	}
	return "absent"
}

// waitNACKed waits until a client of e's pool holds resource name of
// typeURL NACKED.
func waitNACKed(t *testing.T, e *rpctest.Env, typeURL, name string) {
	t.Helper()
	if !rpctest.Poll(xdstest.Context(t), func(context.Context) bool { return xdslensState(e, typeURL, name) == "NACKED" }) {
		t.Fatalf("xdslens did not NACK %q: it holds it %s", name, xdslensState(e, typeURL, name))
	}
}

// routeTo is the listener and route configuration of "svc", sending every
// RPC to cluster.
func routeTo(cluster string) []proto.Message {
	return []proto.Message{controlplane.Listener("svc", "svc-route"),
		rpctest.RouteConfig("svc-route", rpctest.Route(rpctest.PrefixMatch("/"), rpctest.ToCluster(cluster)))}
}

// TestSideBySideAggregateOfAnotherName: the aggregate cluster "c" moves
// from child c1 to child c2, and its cluster_type from the name
// envoy.clusters.aggregate to "example.aggregate". A deliberate
// difference, asserted: xdslens, as gRPC C-core, knows an aggregate
// cluster by its typed_config's type and follows it to c2; grpc-go knows
// it by name, NACKs it and stays on c1.
func TestSideBySideAggregateOfAnotherName(t *testing.T) {
	runParity(t, func(e *rpctest.Env) parityCase {
		leaves := []proto.Message{controlplane.Cluster("c1", ""), controlplane.Endpoints("c1", e.Addr(0)),
			controlplane.Cluster("c2", ""), controlplane.Endpoints("c2", e.Addr(1))}
		renamed := controlplane.AggregateCluster("c", "c2")
		renamed.GetClusterType().Name = "example.aggregate"
		return parityCase{
			first:  append(append(routeTo("c"), controlplane.AggregateCluster("c", "c1")), leaves...),
			second: append(append(routeTo("c"), renamed), leaves...),
			ours:   true, typeURL: clusterTypeURL, name: "c", theirError: "unsupported cluster type",
		}
	})
}

// TestSideBySideLBPolicyUnderAnotherPrefix: cluster "c" moves from EDS
// service e0 to e1, and takes a load_balancing_policy whose one entry,
// round_robin, has a type URL under the prefix "example.com/". A
// deliberate difference, asserted: xdslens, as gRPC C-core, reads the
// type after the last "/" and uses round_robin; grpc-go matches whole
// type URLs, finds no policy it supports and NACKs the cluster.
func TestSideBySideLBPolicyUnderAnotherPrefix(t *testing.T) {
	runParity(t, func(e *rpctest.Env) parityCase {
		rr, err := anypb.New(&roundrobinv3.RoundRobin{})
		if err != nil {
			t.Fatal(err)
		}
		rr.TypeUrl = "example.com/envoy.extensions.load_balancing_policies.round_robin.v3.RoundRobin"
		withPolicy := controlplane.Cluster("c", "e1")
		withPolicy.LoadBalancingPolicy = &clusterv3.LoadBalancingPolicy{Policies: []*clusterv3.LoadBalancingPolicy_Policy{{
			TypedExtensionConfig: &corev3.TypedExtensionConfig{Name: "rr", TypedConfig: rr},
		}}}
		eps := []proto.Message{controlplane.Endpoints("e0", e.Addr(0)), controlplane.Endpoints("e1", e.Addr(1))}
		return parityCase{
			first:  append(append(routeTo("c"), controlplane.Cluster("c", "e0")), eps...),
			second: append(append(routeTo("c"), withPolicy), eps...),
			ours:   true, typeURL: clusterTypeURL, name: "c", theirError: "no supported policy",
		}
	})
}

// TestSideBySideZeroWeightLocalityWithoutLocality: the endpoints of
// cluster "c" move from backend 0 to backend 1, beside a locality of
// weight 0 that has no locality field. A deliberate difference, asserted:
// xdslens, as gRPC C-core, leaves a locality without weight out unread
// and moves; grpc-go rejects a locality without its locality field first,
// NACKs the resource and stays.
func TestSideBySideZeroWeightLocalityWithoutLocality(t *testing.T) {
	runParity(t, endpointsMove(true, "locality without ID", func(m *endpointv3.ClusterLoadAssignment) {
		m.Endpoints = append(m.Endpoints, &endpointv3.LocalityLbEndpoints{LoadBalancingWeight: wrapperspb.UInt32(0)})
	}))
}

// TestSideBySideEndpointWeightsBeyondUint32: the endpoints of cluster "c"
// move from backend 0 to backend 1, beside a standby locality at priority
// 1 (unused while priority 0 is up) whose two endpoints' weights add up
// to more than a uint32 holds. A deliberate difference, asserted:
// xdslens, as gRPC C-core, keeps each weight and moves; grpc-go rejects
// the sum, NACKs the resource and stays.
func TestSideBySideEndpointWeightsBeyondUint32(t *testing.T) {
	runParity(t, endpointsMove(true, "sum of weights of endpoints", func(m *endpointv3.ClusterLoadAssignment) {
		standby := controlplane.Endpoints("standby", "127.0.0.1:1", "127.0.0.1:2").Endpoints[0]
		standby.Locality, standby.Priority = &corev3.Locality{Region: "standby"}, 1
		standby.LbEndpoints[0].LoadBalancingWeight = wrapperspb.UInt32(4_000_000_000)
		standby.LbEndpoints[1].LoadBalancingWeight = wrapperspb.UInt32(300_000_000)
		m.Endpoints = append(m.Endpoints, standby)
	}))
}

// TestSideBySideDropWithoutPercentage: the endpoints of cluster "c" move
// from backend 0 to backend 1, with a drop_overloads category that has no
// drop_percentage. A deliberate difference, asserted: xdslens, as gRPC
// C-core, rejects the drop and keeps the last good endpoints; grpc-go
// reads it as 0 out of 100, a drop that never drops, and moves.
func TestSideBySideDropWithoutPercentage(t *testing.T) {
	runParity(t, endpointsMove(false, "", func(m *endpointv3.ClusterLoadAssignment) {
		m.Policy = &endpointv3.ClusterLoadAssignment_Policy{DropOverloads: []*endpointv3.ClusterLoadAssignment_Policy_DropOverload{{Category: "lb"}}}
	}))
}

// endpointsMove is the case where the endpoints of EDS cluster "c" move
// from backend 0 to backend 1 and are edited; ours and theirError are the
// parityCase's.
func endpointsMove(ours bool, theirError string, edit func(*endpointv3.ClusterLoadAssignment)) func(e *rpctest.Env) parityCase {
	return func(e *rpctest.Env) parityCase {
		second := controlplane.Endpoints("c", e.Addr(1))
		edit(second)
		return parityCase{
			first:  append(routeTo("c"), controlplane.Cluster("c", ""), controlplane.Endpoints("c", e.Addr(0))),
			second: append(routeTo("c"), controlplane.Cluster("c", ""), second),
			ours:   ours, typeURL: endpointsTypeURL, name: "c", theirError: theirError,
		}
	}
}

// TestSideBySideOutlierIntervalZero: cluster "c" moves its endpoints to
// the EDS service "c2" and asks for outlier detection every 0 s. A
// deliberate difference, asserted: xdslens rejects the Cluster (the xDS
// API requires an interval above 0, and a sweep without pause is what
// both gRPCs would run) and stays on its last good Cluster; grpc-go takes
// it and moves.
func TestSideBySideOutlierIntervalZero(t *testing.T) {
	runParity(t, func(e *rpctest.Env) parityCase {
		zero := controlplane.Cluster("c", "c2")
		zero.OutlierDetection = &clusterv3.OutlierDetection{Interval: durationpb.New(0)}
		return parityCase{
			first:  append(routeTo("c"), controlplane.Cluster("c", ""), controlplane.Endpoints("c", e.Addr(0))),
			second: append(routeTo("c"), zero, controlplane.Endpoints("c", e.Addr(0)), controlplane.Endpoints("c2", e.Addr(1))),
			ours:   false, typeURL: clusterTypeURL, name: "c",
		}
	})
}
