package xdsclient_test

import (
	"testing"

	"github.com/xdslens/xdslens/internal/testing/xdstest"
	"github.com/xdslens/xdslens/internal/xdswatch/demo/controlplane"
	"github.com/xdslens/xdslens/xdsclient"
	"github.com/xdslens/xdslens/xdsclient/xdsresource"
)

// TestControlPlaneFlow watches the four types of a demo config on a
// go-control-plane server and follows an update.
func TestControlPlaneFlow(t *testing.T) {
	ctx := xdstest.Context(t)
	cp, err := controlplane.Start(ctx, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cp.Stop)
	if err := cp.SetResources(ctx, testNodeID, "1",
		controlplane.Listener("l1", "r1"),
		controlplane.RouteConfig("r1", []string{"*"}, "c1"),
		controlplane.Cluster("c1", "e1"),
		controlplane.Endpoints("e1", "127.0.0.1:1", "127.0.0.1:2"),
	); err != nil {
		t.Fatal(err)
	}
	c := newClient(t, bootstrapFor(t, cp.Addr()))
	lds, rds, cds, eds := xdstest.NewWatcher(), xdstest.NewWatcher(), xdstest.NewWatcher(), xdstest.NewWatcher()
	defer c.Watch(xdsresource.ListenerType, "l1", lds)()
	defer c.Watch(xdsresource.RouteConfigType, "r1", rds)()
	defer c.Watch(xdsresource.ClusterType, "c1", cds)()
	defer c.Watch(xdsresource.EndpointsType, "e1", eds)()

	l := lds.Expect(t, xdsclient.NotifyResource, 0)
	if got := l.Resource.Value.(*xdsresource.Listener).RouteConfigName; got != "r1" {
		t.Errorf("listener route config name = %q, want r1", got)
	}
	rds.Expect(t, xdsclient.NotifyResource, 0)
	cl := cds.Expect(t, xdsclient.NotifyResource, 0)
	if got := cl.Resource.Value.(*xdsresource.Cluster).EDSServiceName; got != "e1" {
		t.Errorf("cluster EDS service name = %q, want e1", got)
	}
	ep := eds.Expect(t, xdsclient.NotifyResource, 0)
	if ep.Resource.Version != "1" {
		t.Errorf("endpoints version = %q, want 1", ep.Resource.Version)
	}

	if err := cp.SetResources(ctx, testNodeID, "2",
		controlplane.Listener("l1", "r1"),
		controlplane.RouteConfig("r1", []string{"*"}, "c1"),
		controlplane.Cluster("c1", "e1"),
		controlplane.Endpoints("e1", "127.0.0.1:3"),
	); err != nil {
		t.Fatal(err)
	}
	ep = eds.Expect(t, xdsclient.NotifyResource, 0)
	if got := ep.Resource.Version; got != "2" {
		t.Errorf("endpoints version = %q, want 2", got)
	}
	for _, d := range c.Dump() {
		if d.State != xdsclient.StateACKed {
			t.Errorf("%s %s: state %v, want ACKED", d.TypeURL, d.Name, d.State)
		}
	}
}
