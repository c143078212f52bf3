package xdsgrpc_test

import (
	"context"
	"testing"

	"github.com/xdslens/xdslens/xdsclient/xdsresource/routeconfig"

	"github.com/xdslens/xdslens/internal/testing/rpctest"
	"github.com/xdslens/xdslens/internal/xdswatch/demo/controlplane"
	"github.com/xdslens/xdslens/xdsclient/xdsconfig"
)

// TestNoConfigTear switches the route from cluster A to cluster B while
// B's endpoints are slow to come (gRFC A74): RPCs keep going to A until B's
// endpoints arrive, then go to B, and no config the channel took ever
// routed to a cluster it did not have.
func TestNoConfigTear(t *testing.T) {
	e := newA88(t, nil)
	e.baseline()
	e.Push(rdsURL, rpctest.RouteConfig("R", rpctest.Route(rpctest.PrefixMatch("/"), rpctest.ToCluster("B"))))
	e.Want(cdsURL, "A", "B")
	e.Push(cdsURL, controlplane.Cluster("B", ""))
	e.Want(edsURL, "A", "B")
	// B's endpoints do not come yet: RPCs still go to A.
	for range 20 {
		e.wantOK()
	}
	e.Push(edsURL, controlplane.Endpoints("B", e.backends[1].Addr()))
	if !rpctest.Poll(e.Ctx, func(ctx context.Context) bool {
		return rpctest.Call(ctx, e.conn, "/pkg.Svc/M").Backend == e.backends[1].Addr()
	}) {
		t.Fatalf("RPCs never reached B's backend: %+v", e.rpc())
	}
	e.Want(cdsURL, "B") // A is unsubscribed once no config needs it
	e.mu.Lock()
	defer e.mu.Unlock()
	for i, c := range e.configs {
		for _, name := range routeClusters(c.VirtualHost) {
			if s := c.Clusters[name]; s == nil || !s.IsLeaf() || s.Endpoints == nil {
				t.Errorf("config %d routes to %q without its endpoints: %+v", i, name, s)
			}
		}
	}
	if last := e.configs[len(e.configs)-1]; last.Clusters["A"] != nil {
		t.Errorf("the last config still has cluster A: %v", xdsconfig.Diff(nil, last))
	}
}

// routeClusters returns the clusters the routes of vh name.
func routeClusters(vh *routeconfig.VirtualHost) []string {
	var out []string
	for _, r := range vh.Routes {
		switch r.Action.Kind {
		case routeconfig.ActionCluster:
			out = append(out, r.Action.Cluster)
		case routeconfig.ActionWeightedClusters:
			for _, wc := range r.Action.WeightedClusters {
				out = append(out, wc.Name)
			}
		}
	}
	return out
}
