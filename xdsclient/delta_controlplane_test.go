package xdsclient_test

import (
	"sync"
	"testing"

	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"

	"github.com/xdslens/xdslens/internal/testing/xdstest"
	"github.com/xdslens/xdslens/internal/xdswatch/demo/controlplane"
	"github.com/xdslens/xdslens/xdsclient"
	"github.com/xdslens/xdslens/xdsclient/bootstrap"
	"github.com/xdslens/xdslens/xdsclient/xdsresource"
)

// deltaLog records what a go-control-plane server sends over delta and
// whether any State of the World request came.
type deltaLog struct {
	mu       sync.Mutex
	versions map[string]string // resource name → last version sent
	sent     []int             // resources per delta response
	sotw     int               // State of the World requests
}

func (l *deltaLog) callbacks() controlplane.Callbacks {
	return controlplane.CallbackFuncs{
		StreamRequest: func(int64, *discoveryv3.DiscoveryRequest) error {
			l.mu.Lock()
			defer l.mu.Unlock()
			l.sotw++
			return nil
		},
		DeltaResponse: func(_ int64, _ *discoveryv3.DeltaDiscoveryRequest, resp *discoveryv3.DeltaDiscoveryResponse) {
			l.mu.Lock()
			defer l.mu.Unlock()
			for _, r := range resp.GetResources() {
				l.versions[r.GetName()] = r.GetVersion()
			}
			l.sent = append(l.sent, len(resp.GetResources()))
			xdstest.Notify()
		},
	}
}

func (l *deltaLog) version(name string) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.versions[name]
}

// TestDeltaControlPlane follows the four gRPC types over delta from
// go-control-plane's snapshot cache: an update of one cluster reaches its
// watcher alone, with the version the server gave that resource; a removed
// resource is a deletion, for EDS too.
func TestDeltaControlPlane(t *testing.T) {
	ctx := xdstest.Context(t)
	log := &deltaLog{versions: map[string]string{}}
	cp, err := controlplane.Start(ctx, "127.0.0.1:0", controlplane.WithCallbacks(log.callbacks()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cp.Stop)
	config := func(c2 string, withEDS bool) []proto.Message {
		m := []proto.Message{
			controlplane.Listener("l1", "r1"),
			controlplane.RouteConfig("r1", []string{"*"}, "c1"),
			controlplane.Cluster("c1", "e1"),
			controlplane.Cluster("c2", c2),
		}
		if withEDS {
			m = append(m, controlplane.Endpoints("e1", "127.0.0.1:1"))
		}
		return m
	}
	if err := cp.SetResources(ctx, testNodeID, "1", config("e2", true)...); err != nil {
		t.Fatal(err)
	}
	c := newClient(t, bootstrapFor(t, cp.Addr(), bootstrap.FeatureDeltaXDS))
	lds, rds, cds1, cds2, eds := xdstest.NewWatcher(), xdstest.NewWatcher(), xdstest.NewWatcher(), xdstest.NewWatcher(), xdstest.NewWatcher()
	defer c.Watch(xdsresource.ListenerType, "l1", lds)()
	defer c.Watch(xdsresource.RouteConfigType, "r1", rds)()
	defer c.Watch(xdsresource.ClusterType, "c1", cds1)()
	defer c.Watch(xdsresource.ClusterType, "c2", cds2)()
	defer c.Watch(xdsresource.EndpointsType, "e1", eds)()
	for _, w := range []*xdstest.Watcher{lds, rds, cds1, cds2, eds} {
		w.Expect(t, xdsclient.NotifyResource, 0)
	}
	for _, d := range c.Dump() {
		if d.State != xdsclient.StateACKed || d.Version == "" || d.Version != log.version(d.Name) {
			t.Errorf("%s %q: state %v version %q, want ACKED at the version the server sent (%q)", d.TypeURL, d.Name, d.State, d.Version, log.version(d.Name))
		}
	}

	// One cluster changes: one resource on the wire, one watcher told.
	if err := cp.SetResources(ctx, testNodeID, "2", config("e2-changed", true)...); err != nil {
		t.Fatal(err)
	}
	r := cds2.Expect(t, xdsclient.NotifyResource, 0)
	if got := r.Resource.Value.(*xdsresource.Cluster).EDSServiceName; got != "e2-changed" {
		t.Errorf("c2 EDS service name %q, want e2-changed", got)
	}
	if r.Resource.Version != log.version("c2") {
		t.Errorf("c2 delivered at version %q, want the server's %q", r.Resource.Version, log.version("c2"))
	}
	log.mu.Lock()
	last := log.sent[len(log.sent)-1]
	log.mu.Unlock()
	if last != 1 {
		t.Errorf("the update carried %d resources, want 1", last)
	}

	// EDS removed: a deletion, ambient while cached (gRFC A88).
	if err := cp.SetResources(ctx, testNodeID, "3", config("e2-changed", false)...); err != nil {
		t.Fatal(err)
	}
	eds.Expect(t, xdsclient.NotifyAmbientError, codes.NotFound)
	drain(t, c)
	for _, w := range []*xdstest.Watcher{lds, rds, cds1, cds2} {
		w.ExpectNone(t)
	}
	log.mu.Lock()
	defer log.mu.Unlock()
	if log.sotw != 0 {
		t.Errorf("the server got %d State of the World requests, want none", log.sotw)
	}
}
