package compare_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	xdstypev3 "github.com/cncf/xds/go/xds/type/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	pickfirstv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/load_balancing_policies/pick_first/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/balancer"
	"google.golang.org/grpc/balancer/pickfirst"
	"google.golang.org/grpc/resolver"
	"google.golang.org/grpc/serviceconfig"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/xdslens/xdslens/internal/testing/rpctest"
	"github.com/xdslens/xdslens/internal/testing/xdstest"
	"github.com/xdslens/xdslens/internal/xdswatch/demo/controlplane"
)

// channels returns both channels of s by name.
func (s *sideBySide) channels() map[string]*grpc.ClientConn {
	return map[string]*grpc.ClientConn{"xdslens": s.ours, "grpc-go": s.theirs}
}

// TestSideBySideRingHash routes RPCs by a header's hash to a ring_hash
// cluster: on both channels each key stays on one backend, the same one
// (the ring and the hash are built alike), and when a backend stops only
// its keys move, to the same backends on both.
func TestSideBySideRingHash(t *testing.T) {
	s := newSideBySide(t, 3)
	e := s.e
	s.clusterOf = map[string]string{e.Addr(0): "b0", e.Addr(1): "b1", e.Addr(2): "b2"}
	e.Set(controlplane.Listener("svc", "svc-route"),
		rpctest.RouteConfig("svc-route", rpctest.Route(rpctest.PrefixMatch("/"), rpctest.HashHeader(rpctest.ToCluster("c"), "x-user", false))),
		rpctest.WithRingHash(controlplane.Cluster("c", ""), 1024, 8*1024*1024),
		controlplane.Endpoints("c", e.Addr(0), e.Addr(1), e.Addr(2)))
	s.eventually(t, s.both(t, "/pkg.Svc/M", "x-user", "warm-up"), "/pkg.Svc/M", "x-user", "warm-up")

	keys := make([]string, 12)
	for i := range keys {
		keys[i] = fmt.Sprintf("user-%d", i)
	}
	owner := map[string]string{}
	for _, k := range keys {
		owner[k] = s.both(t, "/pkg.Svc/M", "x-user", k)
		for range 10 {
			if got := s.both(t, "/pkg.Svc/M", "x-user", k); got != owner[k] {
				t.Fatalf("key %s went to %s, then to %s", k, owner[k], got)
			}
		}
	}
	used := map[string]bool{}
	for _, b := range owner {
		used[b] = true
	}
	if len(used) < 2 {
		t.Fatalf("12 keys all went to %v", used)
	}
	// Stop the backend of the first key; once both channels see it
	// failing, its keys move, the others stay.
	stopped := owner[keys[0]]
	for i, c := range []string{"b0", "b1", "b2"} {
		if c == stopped {
			e.Backends[i].Stop()
		}
	}
	ctx := xdstest.Context(t)
	if !rpctest.Poll(ctx, func(ctx context.Context) bool {
		o, th := s.where(rpctest.Call(ctx, s.ours, "/pkg.Svc/M", "x-user", keys[0])), s.where(rpctest.Call(ctx, s.theirs, "/pkg.Svc/M", "x-user", keys[0]))
		return o != stopped && th != stopped && o[0] == 'b' && th[0] == 'b'
	}) {
		t.Fatalf("key %s never left the stopped backend %s on both channels", keys[0], stopped)
	}
	for _, k := range keys {
		got := s.both(t, "/pkg.Svc/M", "x-user", k)
		if owner[k] != stopped && got != owner[k] {
			t.Errorf("key %s of %s moved to %s when %s stopped", k, owner[k], got, stopped)
		}
		if owner[k] == stopped && got == stopped {
			t.Errorf("key %s still went to the stopped %s", k, stopped)
		}
	}
}

// TestSideBySideRingHashChannelID hashes on the channel's ID: every RPC
// of a channel goes to one backend, on both channels (each channel's ID is
// its own, so the two may pick different backends).
func TestSideBySideRingHashChannelID(t *testing.T) {
	s := newSideBySide(t, 3)
	e := s.e
	s.clusterOf = map[string]string{e.Addr(0): "b0", e.Addr(1): "b1", e.Addr(2): "b2"}
	e.Set(controlplane.Listener("svc", "svc-route"),
		rpctest.RouteConfig("svc-route", rpctest.Route(rpctest.PrefixMatch("/"), rpctest.HashChannelID(rpctest.ToCluster("c")))),
		rpctest.WithRingHash(controlplane.Cluster("c", ""), 1024, 4096),
		controlplane.Endpoints("c", e.Addr(0), e.Addr(1), e.Addr(2)))
	ctx := xdstest.Context(t)
	for name, conn := range s.channels() {
		var first string
		if !rpctest.Poll(ctx, func(ctx context.Context) bool {
			first = s.where(rpctest.Call(ctx, conn, "/pkg.Svc/M"))
			return first[0] == 'b'
		}) {
			t.Fatalf("%s: no RPC reached a backend: %s", name, first)
		}
		for i := range 30 {
			if got := s.where(rpctest.Call(ctx, conn, "/pkg.Svc/M", "x-other", fmt.Sprint(i))); got != first {
				t.Errorf("%s: RPC %d went to %s, want %s (the channel's backend)", name, i, got, first)
			}
		}
	}
}

// TestSideBySideLeastRequest holds the RPCs of one backend: new RPCs,
// sent one after another while the held ones stay in flight, avoid it on
// both channels (gRFC A48, choice_count 3), where round robin would give
// it a third of them.
//
// What least_request promises, and the bound: it draws choice_count
// endpoints at random, with repeats, and takes the one with the fewest
// RPCs in flight, the first drawn among equals (A48 lets an endpoint be
// drawn twice: a loaded one is never excluded). The RPCs are sent one at
// a time, so the two free backends have none in flight at each pick.
// Until backend 0 holds an RPC, all three are equal and it takes an RPC
// with probability 1/3; once it holds one, it takes an RPC only when all
// three draws fall on it, (1/3)^3 = 1/27. So of n = 120 RPCs it holds
// 1 + Binomial(about 117, 1/27), 5.3 on average; the chance that it holds
// more than maxHeld = 24, worked out exactly over that chain, is 9.3e-12
// per channel. Round robin holds a third, 40; a uniform random choice
// holds 24 or fewer with a chance of 0.09%. 30 RPCs with a bound of 6, as
// once, fail with a chance of 4.3e-4 per channel: more than least_request
// promises. Backend 0 stays READY throughout, so gRPC-Go's least_request,
// which forgets the count of an endpoint that leaves READY, keeps it.
func TestSideBySideLeastRequest(t *testing.T) {
	const n, maxHeld = 120, 24
	s := newSideBySide(t, 3)
	e := s.e
	e.Set(controlplane.Listener("svc", "svc-route"),
		rpctest.RouteConfig("svc-route", rpctest.Route(rpctest.PrefixMatch("/"), rpctest.ToCluster("c"))),
		rpctest.WithLeastRequest(controlplane.Cluster("c", ""), 3),
		controlplane.Endpoints("c", e.Addr(0), e.Addr(1), e.Addr(2)))
	ctx := xdstest.Context(t)
	for name, conn := range s.channels() {
		// Every backend connected first, so that no RPC waits for one.
		if !rpctest.Poll(ctx, func(ctx context.Context) bool {
			seen := map[string]bool{}
			for range 30 {
				seen[rpctest.Call(ctx, conn, "/grpc.testing.TestService/EmptyCall").Backend] = true
			}
			return len(seen) == 3
		}) {
			t.Fatalf("%s: the three backends never all answered", name)
		}
		release := e.Backends[0].Hold()
		before := e.Backends[0].Calls()
		done := make(chan struct{}, n)
		ended := 0
		for i := range n {
			go func() {
				rpctest.Call(ctx, conn, "/grpc.testing.TestService/EmptyCall")
				done <- struct{}{}
			}()
			// Wait until this RPC has ended or is held on backend 0:
			// every RPC sent so far is one or the other.
			for {
				changed := e.Backends[0].Changed()
				if ended+int(e.Backends[0].Calls()-before) >= i+1 {
					break
				}
				select {
				case <-done:
					ended++
				case <-changed:
				case <-ctx.Done():
					t.Fatal(ctx.Err())
				}
			}
		}
		held := e.Backends[0].Calls() - before
		release()
		for ; ended < n; ended++ {
			<-done
		}
		if held > maxHeld {
			t.Errorf("%s: %d of %d RPCs were held on the loaded backend; want %d at most (about 5, round robin gives a third)", name, held, n, maxHeld)
		}
	}
}

// TestSideBySidePickFirst sends every RPC to the first endpoint
// (load_balancing_policy pick_first, gRFC A62), then to the second when
// the first stops, on both channels.
func TestSideBySidePickFirst(t *testing.T) {
	s := newSideBySide(t, 3)
	e := s.e
	s.clusterOf = map[string]string{e.Addr(0): "b0", e.Addr(1): "b1", e.Addr(2): "b2"}
	e.Set(controlplane.Listener("svc", "svc-route"),
		rpctest.RouteConfig("svc-route", rpctest.Route(rpctest.PrefixMatch("/"), rpctest.ToCluster("c"))),
		rpctest.WithLBPolicy(controlplane.Cluster("c", ""), &pickfirstv3.PickFirst{}),
		controlplane.Endpoints("c", e.Addr(0), e.Addr(1), e.Addr(2)))
	s.eventually(t, "b0", "/pkg.Svc/M")
	for range 30 {
		if got := s.both(t, "/pkg.Svc/M"); got != "b0" {
			t.Fatalf("pick_first sent an RPC to %s, want b0", got)
		}
	}
	e.Backends[0].Stop()
	s.eventually(t, "b1", "/pkg.Svc/M")
	for range 30 {
		if got := s.both(t, "/pkg.Svc/M"); got != "b1" {
			t.Fatalf("pick_first sent an RPC to %s after b0 stopped, want b1", got)
		}
	}
}

// lastFirst is a load-balancing policy the test registers with gRPC and
// names in a TypedStruct (gRFC A52's custom policies): pick_first over the
// endpoints in reverse order, so that what it does is its own. Its config
// must say {"reverse": true}.
type lastFirst struct{}

type lastFirstConfig struct {
	serviceconfig.LoadBalancingConfig
	Reverse bool `json:"reverse"`
}

const lastFirstName = "xdslens_compare_last_first"

func init() { balancer.Register(lastFirst{}) }

func (lastFirst) Name() string { return lastFirstName }

func (lastFirst) Build(cc balancer.ClientConn, opts balancer.BuildOptions) balancer.Balancer {
	return &lastFirstBalancer{Balancer: balancer.Get(pickfirst.Name).Build(cc, opts)}
}

func (lastFirst) ParseConfig(js json.RawMessage) (serviceconfig.LoadBalancingConfig, error) {
	c := &lastFirstConfig{}
	if err := json.Unmarshal(js, c); err != nil {
		return nil, err
	}
	if !c.Reverse {
		return nil, fmt.Errorf("config %s: reverse must be true", js)
	}
	return c, nil
}

type lastFirstBalancer struct{ balancer.Balancer }

func (b *lastFirstBalancer) UpdateClientConnState(s balancer.ClientConnState) error {
	eps := s.ResolverState.Endpoints
	rev := make([]resolver.Endpoint, 0, len(eps))
	for i := len(eps) - 1; i >= 0; i-- {
		rev = append(rev, eps[i])
	}
	s.ResolverState.Endpoints = rev
	s.BalancerConfig = nil
	return b.Balancer.UpdateClientConnState(s)
}

// TestSideBySideCustomPolicy names a policy registered by the program in a
// TypedStruct: both channels build it with its config and send every RPC
// to the last endpoint.
func TestSideBySideCustomPolicy(t *testing.T) {
	s := newSideBySide(t, 3)
	e := s.e
	s.clusterOf = map[string]string{e.Addr(0): "b0", e.Addr(1): "b1", e.Addr(2): "b2"}
	cfg, err := structpb.NewStruct(map[string]any{"reverse": true})
	if err != nil {
		t.Fatal(err)
	}
	e.Set(controlplane.Listener("svc", "svc-route"),
		rpctest.RouteConfig("svc-route", rpctest.Route(rpctest.PrefixMatch("/"), rpctest.ToCluster("c"))),
		rpctest.WithLBPolicy(controlplane.Cluster("c", ""), &xdstypev3.TypedStruct{TypeUrl: "type.googleapis.com/" + lastFirstName, Value: cfg}),
		controlplane.Endpoints("c", e.Addr(0), e.Addr(1), e.Addr(2)))
	s.eventually(t, "b2", "/pkg.Svc/M")
	for range 20 {
		if got := s.both(t, "/pkg.Svc/M"); got != "b2" {
			t.Fatalf("the custom policy sent an RPC to %s, want b2", got)
		}
	}
}

// TestSideBySideAggregateMixedPolicies routes to an aggregate cluster
// whose first leaf is pick_first and second ring_hash. A difference on
// purpose: xdslens balances each leaf with its own policy, as gRPC C-core
// does since gRFC A75 (an aggregate cluster picks a leaf, then that leaf's
// policy picks), while grpc-go still balances every leaf with the
// aggregate cluster's policy (round_robin here), gRFC A37's first design.
// So while the first leaf serves, xdslens sends every RPC to its first
// endpoint and grpc-go spreads them over both; once the first leaf's
// endpoints stop, xdslens pins each key to one endpoint of the second
// leaf, and grpc-go spreads them.
func TestSideBySideAggregateMixedPolicies(t *testing.T) {
	s := newSideBySide(t, 4)
	e := s.e
	s.clusterOf = map[string]string{e.Addr(0): "pf0", e.Addr(1): "pf1", e.Addr(2): "rh2", e.Addr(3): "rh3"}
	e.Set(controlplane.Listener("svc", "svc-route"),
		rpctest.RouteConfig("svc-route", rpctest.Route(rpctest.PrefixMatch("/"), rpctest.HashHeader(rpctest.ToCluster("agg"), "x-user", false))),
		controlplane.AggregateCluster("agg", "pf", "rh"),
		rpctest.WithLBPolicy(controlplane.Cluster("pf", ""), &pickfirstv3.PickFirst{}),
		controlplane.Endpoints("pf", e.Addr(0), e.Addr(1)),
		rpctest.WithRingHash(controlplane.Cluster("rh", ""), 1024, 4096),
		controlplane.Endpoints("rh", e.Addr(2), e.Addr(3)))
	ctx := xdstest.Context(t)
	spread := func(conn *grpc.ClientConn, key func(i int) string) map[string]int {
		got := map[string]int{}
		for i := range 40 {
			got[s.where(rpctest.Call(ctx, conn, "/pkg.Svc/M", "x-user", key(i)))]++
		}
		return got
	}
	same := func(int) string { return "u1" }
	for name, conn := range s.channels() {
		if !rpctest.Poll(ctx, func(ctx context.Context) bool {
			return s.where(rpctest.Call(ctx, conn, "/pkg.Svc/M", "x-user", "u1"))[:2] == "pf"
		}) {
			t.Fatalf("%s: no RPC reached the pick_first leaf", name)
		}
	}
	if got := spread(s.ours, same); got["pf0"] != 40 {
		t.Errorf("xdslens: the pick_first leaf sent RPCs as %v, want all on pf0 (the leaf's own policy)", got)
	}
	if got := spread(s.theirs, same); got["pf0"] == 40 || got["pf0"]+got["pf1"] != 40 {
		t.Errorf("grpc-go: the pick_first leaf sent RPCs as %v, want them spread over pf0 and pf1 (the aggregate's round_robin; if grpc-go now uses the leaf's policy, this difference is gone)", got)
	}
	e.Backends[0].Stop()
	e.Backends[1].Stop()
	for name, conn := range s.channels() {
		if !rpctest.Poll(ctx, func(ctx context.Context) bool {
			return s.where(rpctest.Call(ctx, conn, "/pkg.Svc/M", "x-user", "u1"))[:2] == "rh"
		}) {
			t.Fatalf("%s: no RPC reached the ring_hash leaf after the pick_first leaf stopped", name)
		}
	}
	if got := spread(s.ours, same); len(got) != 1 {
		t.Errorf("xdslens: one key went to %v, want one endpoint of the ring_hash leaf", got)
	}
	if got := spread(s.theirs, same); got["rh2"] == 0 || got["rh3"] == 0 {
		t.Errorf("grpc-go: one key went to %v, want both endpoints (round_robin)", got)
	}
}

// TestSideBySideRingHashEndpointKeys gives each endpoint a hash key in its
// EDS metadata (gRFC A76: filter_metadata "envoy.lb" hash_key), which the
// ring uses instead of the address: both channels send each key to the
// same backend.
func TestSideBySideRingHashEndpointKeys(t *testing.T) {
	s := newSideBySide(t, 3)
	e := s.e
	s.clusterOf = map[string]string{e.Addr(0): "b0", e.Addr(1): "b1", e.Addr(2): "b2"}
	eds := controlplane.Endpoints("c", e.Addr(0), e.Addr(1), e.Addr(2))
	for i, lbe := range eds.Endpoints[0].LbEndpoints {
		md, err := structpb.NewStruct(map[string]any{"hash_key": fmt.Sprintf("shard-%d", 2-i)})
		if err != nil {
			t.Fatal(err)
		}
		lbe.Metadata = &corev3.Metadata{FilterMetadata: map[string]*structpb.Struct{"envoy.lb": md}}
	}
	e.Set(controlplane.Listener("svc", "svc-route"),
		rpctest.RouteConfig("svc-route", rpctest.Route(rpctest.PrefixMatch("/"), rpctest.HashHeader(rpctest.ToCluster("c"), "x-user", false))),
		rpctest.WithRingHash(controlplane.Cluster("c", ""), 1024, 4096), eds)
	ctx := xdstest.Context(t)
	for name, conn := range s.channels() {
		if !rpctest.Poll(ctx, func(ctx context.Context) bool {
			return s.where(rpctest.Call(ctx, conn, "/pkg.Svc/M", "x-user", "warm-up"))[0] == 'b'
		}) {
			t.Fatalf("%s: no RPC reached a backend", name)
		}
	}
	used := map[string]bool{}
	for i := range 20 {
		used[s.both(t, "/pkg.Svc/M", "x-user", fmt.Sprint("key-", i))] = true
	}
	if len(used) < 2 {
		t.Errorf("20 keys all went to %v", used)
	}
}
