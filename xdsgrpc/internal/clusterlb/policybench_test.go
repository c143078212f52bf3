package clusterlb_test

import (
	"context"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/xdslens/xdslens/xdsclient/xdsresource/lbpolicy"

	"github.com/cespare/xxhash/v2"
	"google.golang.org/grpc/balancer"

	"github.com/xdslens/xdslens/internal/testing/xdstest"
	"github.com/xdslens/xdslens/xdsclient/xdsresource"
	"github.com/xdslens/xdslens/xdsgrpc/internal/callctx"
)

// policyPicker returns the picker of a channel to a cluster of the
// backends bs, in one locality, balanced by set's policy, once pick
// succeeds with it.
func policyPicker(tb testing.TB, set func(*xdsresource.Cluster), addrs []string, pick func(balancer.Picker) bool) balancer.Picker {
	tb.Helper()
	ctx := xdstest.Context(tb)
	leaf := withPolicy(edsCluster("c1", localityAt("z", 0, 1, addrs...)), set)
	sink := &pickerSink{}
	ch := dialWith(tb, config("c1", leaf), sink)
	ch.cc.Connect()
	var p balancer.Picker
	xdstest.WaitFor(tb, ctx, "a picker that picks", func() bool {
		s := sink.last()
		if s.Picker == nil {
			return false
		}
		p = s.Picker
		return pick(p)
	})
	return p
}

// BenchmarkPickPolicy measures one pick and its Done for each endpoint
// policy over 100 READY endpoints (ring_hash: the endpoint of a fixed
// hash), and ring_hash among 1,000 endpoints, one of them READY and
// owning the hash (its cost grows with the log of the ring's size).
func BenchmarkPickPolicy(b *testing.B) {
	names := make([]string, 100)
	for i := range names {
		names[i] = fmt.Sprint("b", i)
	}
	bs := startBackends(b, names...)
	addrs := make([]string, len(bs))
	for i, bk := range bs {
		addrs[i] = bk.addr
	}
	hashCtx := func(h uint64) context.Context {
		return callctx.With(context.Background(), &callctx.Call{Decided: true, Hash: h, HasHash: true})
	}
	ringHashOwning := xxhash.Sum64String(addrs[0] + "_0") // an entry of addrs[0]
	policies := []struct {
		name string
		set  func(*xdsresource.Cluster)
		ctx  context.Context
	}{
		{"round_robin", func(c *xdsresource.Cluster) { c.LBPolicy = lbpolicy.RoundRobin }, context.Background()},
		{"pick_first", func(c *xdsresource.Cluster) { c.LBPolicy = lbpolicy.PickFirst }, context.Background()},
		{"ring_hash", func(c *xdsresource.Cluster) { c.LBPolicy = lbpolicy.RingHash }, hashCtx(ringHashOwning)},
		{"least_request", func(c *xdsresource.Cluster) { c.LBPolicy, c.LeastRequestChoiceCount = lbpolicy.LeastRequest, 2 }, context.Background()},
		{"weighted_round_robin", func(c *xdsresource.Cluster) {
			c.LBPolicy, c.WeightedRoundRobin = lbpolicy.WeightedRoundRobin, &lbpolicy.WeightedRoundRobinConfig{
				BlackoutPeriod: 10 * time.Second, WeightExpirationPeriod: 3 * time.Minute, WeightUpdatePeriod: time.Second, ErrorUtilizationPenalty: 1}
		}, context.Background()},
	}
	for _, pol := range policies {
		b.Run("endpoints=100/"+pol.name, func(b *testing.B) {
			info := balancer.PickInfo{FullMethodName: "/s/m", Ctx: pol.ctx}
			p := policyPicker(b, pol.set, addrs, func(p balancer.Picker) bool {
				res, err := p.Pick(info)
				if err == nil && res.Done != nil {
					res.Done(balancer.DoneInfo{})
				}
				return err == nil
			})
			b.ReportAllocs()
			for b.Loop() {
				res, err := p.Pick(info)
				if err != nil {
					b.Fatal(err)
				}
				res.Done(balancer.DoneInfo{})
			}
		})
	}
	b.Run("endpoints=1000/ring_hash", func(b *testing.B) {
		// One real endpoint among 999 ports where nothing listens: the
		// hash's owner is READY, the others are never connected to.
		many := []string{addrs[0]}
		for len(many) < 1000 {
			lis, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				b.Fatal(err)
			}
			many = append(many, lis.Addr().String())
			lis.Close()
		}
		info := balancer.PickInfo{FullMethodName: "/s/m", Ctx: hashCtx(ringHashOwning)}
		p := policyPicker(b, func(c *xdsresource.Cluster) { c.LBPolicy = lbpolicy.RingHash }, many, func(p balancer.Picker) bool {
			_, err := p.Pick(info)
			return err == nil
		})
		b.ReportAllocs()
		for b.Loop() {
			res, err := p.Pick(info)
			if err != nil {
				b.Fatal(err)
			}
			res.Done(balancer.DoneInfo{})
		}
	})
}
