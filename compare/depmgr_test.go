package compare_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/xdslens/xdslens/internal/testing/rpctest"
	"github.com/xdslens/xdslens/internal/testing/xdstest"
	"github.com/xdslens/xdslens/internal/xdswatch/demo/controlplane"
)

// A deliberate difference: the endpoints of a cluster whose localities
// have no endpoints. gRPC C-core's dependency manager gives the cluster
// the resolution note `EDS resource "c": contains empty localities: [..]`,
// naming each empty locality once, in the order of their names, and an
// RPC that finds no endpoint fails with it; xdslens does as C-core.
// grpc-go's dependency manager makes no such note, and its RPCs do not
// say why the cluster has nothing to connect to.
func TestSideBySideEmptyLocalitiesNote(t *testing.T) {
	s := newSideBySide(t, 0)
	s.e.Set(controlplane.Listener("svc", "svc-route"),
		rpctest.RouteConfig("svc-route", rpctest.Route(rpctest.PrefixMatch("/"), rpctest.ToCluster("c"))),
		controlplane.Cluster("c", ""),
		rpctest.LocalityEndpoints("c",
			rpctest.Locality{Zone: "z", Weight: 1, Priority: 0},
			rpctest.Locality{Zone: "a", Weight: 1, Priority: 0},
			rpctest.Locality{Zone: "z", Weight: 1, Priority: 1}))
	const want = `contains empty localities: [{region="r", zone="a", sub_zone=""}; {region="r", zone="z", sub_zone=""}]`
	var last string
	if !rpctest.Poll(xdstest.Context(t), func(ctx context.Context) bool {
		o := rpctest.Call(ctx, s.ours, "/pkg.Svc/M")
		if o.Err == nil {
			last = "reached " + o.Backend
			return false
		}
		last = o.Err.Error()
		return strings.Contains(last, want)
	}) {
		t.Fatalf("xdslens: RPC failed with %q; want its message to say %q", last, want)
	}
	// grpc-go's RPC fails too (at once, or at its deadline while the
	// channel waits for endpoints), without the note.
	ctx, cancel := context.WithTimeout(xdstest.Context(t), 500*time.Millisecond)
	defer cancel()
	o := rpctest.Call(ctx, s.theirs, "/pkg.Svc/M")
	if o.Err == nil {
		t.Fatalf("grpc-go: RPC reached %s with no endpoints", o.Backend)
	}
	t.Logf("grpc-go: %v", o.Err)
	if strings.Contains(o.Err.Error(), "empty localities") {
		t.Errorf("grpc-go: RPC failed with %q: if grpc-go now names empty localities, this difference is gone", o.Err)
	}
}
