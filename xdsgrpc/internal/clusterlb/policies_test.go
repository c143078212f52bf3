package clusterlb_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/xdslens/xdslens/xdsclient/xdsresource/lbpolicy"

	"google.golang.org/grpc"
	"google.golang.org/grpc/balancer"
	"google.golang.org/grpc/balancer/pickfirst"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/serviceconfig"

	"github.com/xdslens/xdslens/internal/testing/xdstest"
	"github.com/xdslens/xdslens/xdsclient/xdsconfig"
	"github.com/xdslens/xdslens/xdsclient/xdsresource"
	"github.com/xdslens/xdslens/xdsgrpc/internal/callctx"
)

// withPolicy returns cc with its Cluster's load-balancing policy set by
// set.
func withPolicy(cc *xdsconfig.ClusterConfig, set func(*xdsresource.Cluster)) *xdsconfig.ClusterConfig {
	c := *cc.Cluster
	set(&c)
	cc.Cluster = &c
	return cc
}

// TestPickFirst sends every RPC to the first endpoint of the priority, in
// the order the endpoints came, and fails over to the next when it stops
// (gRFC A62: pick_first without shuffle_address_list).
func TestPickFirst(t *testing.T) {
	ctx := xdstest.Context(t)
	bs := startBackends(t, "a", "b", "c")
	leaf := withPolicy(edsCluster("c1", locality("z1", 0, 1, bs[0]), locality("z2", 0, 1, bs[1], bs[2])),
		func(c *xdsresource.Cluster) { c.LBPolicy = lbpolicy.PickFirst })
	ch := dial(t, config("c1", leaf))
	if got := ch.counts(t, ctx, 30); got["a"] != 30 {
		t.Fatalf("pick_first spread 30 RPCs as %v, want all on a", got)
	}
	bs[0].stop()
	ch.waitFor(t, ctx, "b")
	if got := ch.counts(t, ctx, 30); got["b"] != 30 {
		t.Errorf("after a stopped, 30 RPCs went %v, want all on b", got)
	}
}

// TestRingHash sends RPCs by their request hash: each hash goes to one
// endpoint every time, the hashes spread over the endpoints, and when an
// endpoint stops, only the hashes it owned move.
func TestRingHash(t *testing.T) {
	ctx := xdstest.Context(t)
	bs := startBackends(t, "a", "b", "c")
	leaf := withPolicy(edsCluster("c1", locality("z1", 0, 1, bs...)), func(c *xdsresource.Cluster) {
		c.LBPolicy = lbpolicy.RingHash
		c.RingHash = &lbpolicy.RingHashConfig{MinRingSize: 1024, MaxRingSize: 4096}
	})
	ch := dial(t, config("c1", leaf))
	byHash := func(h uint64) string {
		t.Helper()
		for {
			// A Call decided elsewhere, as the routing policy leaves it.
			c := &callctx.Call{Decided: true, Hash: h, HasHash: true}
			name, err := ch.call(callctx.With(ctx, c), grpc.WaitForReady(true))
			if err == nil {
				return name
			}
			// An RPC sent on the connection of the endpoint being
			// stopped fails with it; the next one is picked anew.
			if code, _ := code(err); code != codes.Unavailable || ctx.Err() != nil {
				t.Fatalf("RPC of hash %#x: %v", h, err)
			}
		}
	}
	owner := map[uint64]string{}
	spread := map[string]int{}
	for i := range 60 {
		h := uint64(i) * 0x9e3779b97f4a7c15
		owner[h] = byHash(h)
		spread[owner[h]]++
	}
	if len(spread) != 3 {
		t.Errorf("60 hashes went to %v, want all 3 endpoints used", spread)
	}
	for h, want := range owner {
		for range 3 {
			if got := byHash(h); got != want {
				t.Fatalf("hash %#x went to %s, then to %s", h, want, got)
			}
		}
	}
	bs[0].stop()
	moved := 0
	for h, was := range owner {
		now := byHash(h)
		switch {
		case was == "a" && now == "a":
			t.Fatalf("hash %#x still went to the stopped endpoint", h)
		case was != "a" && now != was:
			t.Errorf("hash %#x of %s moved to %s when a stopped", h, was, now)
		case was == "a":
			moved++
		}
	}
	if moved != spread["a"] {
		t.Errorf("%d hashes moved, want a's %d", moved, spread["a"])
	}
}

// TestLeastRequest sends new RPCs away from an endpoint that holds an RPC
// (gRFC A48): with choice_count 3 of 3 endpoints, drawn with repeats as
// gRPC-Go draws them, the loaded one is taken only when all three draws
// fall on it (1 in 27), where round robin would give it a third.
func TestLeastRequest(t *testing.T) {
	ctx := xdstest.Context(t)
	bs := startBackends(t, "a", "b", "c")
	leaf := withPolicy(edsCluster("c1", locality("z1", 0, 1, bs...)), func(c *xdsresource.Cluster) {
		c.LBPolicy, c.LeastRequestChoiceCount = lbpolicy.LeastRequest, 3
	})
	ch := dial(t, config("c1", leaf))
	// Every endpoint ready first: until one is, least_request picks among
	// the others only, whatever they hold (under load, the first RPCs
	// counted went all to a, the first connected).
	for _, name := range []string{"a", "b", "c"} {
		ch.waitFor(t, ctx, name)
	}
	// Only a holds RPCs: send held RPCs until one stays on a.
	bs[1].unblock()
	bs[2].unblock()
	errs := make(chan error, 100)
	for held := false; !held; {
		go func() {
			_, err := ch.call(withBlock(ctx), grpc.WaitForReady(true))
			errs <- err
		}()
		select {
		case <-bs[0].entered:
			held = true
		case err := <-errs:
			if err != nil {
				t.Fatal(err)
			}
		case <-ctx.Done():
			t.Fatal("no RPC was held on a")
		}
	}
	const n = 60
	if got := ch.counts(t, ctx, n); got["a"] > n/6 {
		t.Errorf("with an RPC in flight on a, %d RPCs went %v; want a to get few (about 1 in 27)", n, got)
	}
	bs[0].unblock()
	if err := <-errs; err != nil {
		t.Fatal(err)
	}
}

// customName is a policy the test registers with gRPC, as a user would,
// named in a Cluster's load_balancing_policy by a TypedStruct: it is
// pick_first, and counts the configs it was given.
const customName = "xdslens_test_custom_lb"

var customConfigs atomic.Int64

type customBuilder struct{}

type customConfig struct {
	serviceconfig.LoadBalancingConfig
	Label string `json:"label"`
}

func (customBuilder) Name() string { return customName }
func (customBuilder) Build(cc balancer.ClientConn, opts balancer.BuildOptions) balancer.Balancer {
	return &customBalancer{Balancer: balancer.Get(pickfirst.Name).Build(cc, opts)}
}
func (customBuilder) ParseConfig(js json.RawMessage) (serviceconfig.LoadBalancingConfig, error) {
	c := &customConfig{}
	if err := json.Unmarshal(js, c); err != nil {
		return nil, err
	}
	if c.Label == "" {
		return nil, fmt.Errorf("label missing in %s", js)
	}
	return c, nil
}

type customBalancer struct{ balancer.Balancer }

func (b *customBalancer) UpdateClientConnState(s balancer.ClientConnState) error {
	if c, ok := s.BalancerConfig.(*customConfig); ok && c.Label == "custom" {
		customConfigs.Add(1)
	}
	s.BalancerConfig = nil
	return b.Balancer.UpdateClientConnState(s)
}

func init() { balancer.Register(customBuilder{}) }

// TestCustomPolicy runs a policy registered with gRPC under the name a
// Cluster gives (gRFC A52), with its config, under the cluster's drops,
// circuit breaking and load reports; a config its parser refuses fails the
// cluster's RPCs with UNAVAILABLE naming the policy.
func TestCustomPolicy(t *testing.T) {
	ctx := xdstest.Context(t)
	bs := startBackends(t, "a", "b")
	before := customConfigs.Load()
	leaf := withPolicy(edsCluster("c1", locality("z1", 0, 1, bs...)), func(c *xdsresource.Cluster) {
		c.LBPolicy, c.CustomLBConfig = customName, json.RawMessage(`{"label": "custom"}`)
	})
	ch := dial(t, config("c1", leaf))
	if got := ch.counts(t, ctx, 20); got["a"] != 20 {
		t.Errorf("the custom policy (pick_first) spread RPCs as %v, want all on a", got)
	}
	if customConfigs.Load() == before {
		t.Error("the custom policy never got its config")
	}

	bad := withPolicy(edsCluster("c2", locality("z1", 0, 1, bs...)), func(c *xdsresource.Cluster) {
		c.LBPolicy, c.CustomLBConfig = customName, json.RawMessage(`{}`)
	})
	ch2 := dial(t, config("c2", bad))
	_, err := ch2.call(ctx, grpc.WaitForReady(true))
	if c, msg := code(err); c != codes.Unavailable || !strings.Contains(msg, customName) || !strings.Contains(msg, `cluster "c2"`) {
		t.Errorf("RPC with a refused custom config: %v; want UNAVAILABLE naming the cluster and the policy", err)
	}
}
