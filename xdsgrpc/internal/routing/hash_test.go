package routing_test

import (
	"context"
	"math/bits"
	"testing"

	"github.com/xdslens/xdslens/xdsclient/xdsresource/routeconfig"

	"github.com/cespare/xxhash/v2"
	"google.golang.org/grpc/metadata"

	"github.com/xdslens/xdslens/xdsgrpc/internal/routing"
)

// TestHash checks the request hash of gRFC A42 policy by policy: header
// values joined and rewritten, the channel ID, "-bin" headers skipped,
// absent headers skipped, terminal policies, and the combination of
// several (rotate left by one, then XOR).
func TestHash(t *testing.T) {
	const channelID = 0xfeedface
	combine := func(hs ...uint64) uint64 {
		var h uint64
		for _, x := range hs {
			h = bits.RotateLeft64(h, 1) ^ x
		}
		return h
	}
	header := func(name string) routeconfig.HashPolicy {
		return routeconfig.HashPolicy{Kind: routeconfig.HashHeader, HeaderName: name}
	}
	channel := routeconfig.HashPolicy{Kind: routeconfig.HashChannelID}
	md := metadata.Pairs("user", "alice", "multi", "a", "multi", "b", "key-bin", "x", "path", "/v1/items/42")
	for _, tc := range []struct {
		name     string
		policies []routeconfig.HashPolicy
		want     uint64
		ok       bool
	}{
		{"header", []routeconfig.HashPolicy{header("user")}, xxhash.Sum64String("alice"), true},
		{"values joined", []routeconfig.HashPolicy{header("multi")}, xxhash.Sum64String("a,b"), true},
		{"absent header", []routeconfig.HashPolicy{header("nobody")}, 0, false},
		{"-bin header", []routeconfig.HashPolicy{header("key-bin")}, 0, false},
		{"content-type", []routeconfig.HashPolicy{header("content-type")}, xxhash.Sum64String("application/grpc"), true},
		{"regex rewrite", []routeconfig.HashPolicy{{Kind: routeconfig.HashHeader, HeaderName: "path", Regex: `/\d+$`, Substitution: "/ID"}}, xxhash.Sum64String("/v1/items/ID"), true},
		{"channel id", []routeconfig.HashPolicy{channel}, channelID, true},
		{"two combined", []routeconfig.HashPolicy{header("user"), channel}, combine(xxhash.Sum64String("alice"), channelID), true},
		{"absent skipped", []routeconfig.HashPolicy{header("nobody"), header("user")}, combine(xxhash.Sum64String("alice")), true},
		{"terminal", []routeconfig.HashPolicy{{Kind: routeconfig.HashHeader, HeaderName: "user", Terminal: true}, channel}, combine(xxhash.Sum64String("alice")), true},
		{"terminal without hash", []routeconfig.HashPolicy{{Kind: routeconfig.HashHeader, HeaderName: "nobody", Terminal: true}, channel}, combine(channelID), true},
		{"same twice", []routeconfig.HashPolicy{header("user"), header("user")}, combine(xxhash.Sum64String("alice"), xxhash.Sum64String("alice")), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			vh := &routeconfig.VirtualHost{Routes: []routeconfig.Route{{
				PathMatch: routeconfig.PathPrefix, HashPolicies: tc.policies,
				Action: routeconfig.Action{Kind: routeconfig.ActionCluster, Cluster: "c"},
			}}}
			tbl, err := routing.Compile(vh)
			if err != nil {
				t.Fatal(err)
			}
			if !tbl.HasHashPolicies(0) {
				t.Fatal("HasHashPolicies(0) = false")
			}
			ctx := metadata.NewOutgoingContext(context.Background(), md)
			h, ok := tbl.Hash(ctx, 0, channelID)
			if h != tc.want || ok != tc.ok {
				t.Errorf("Hash = %#x, %v; want %#x, %v", h, ok, tc.want, tc.ok)
			}
		})
	}
}
