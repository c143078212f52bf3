package csds_test

import (
	"testing"

	"google.golang.org/grpc/codes"

	adminv3 "github.com/envoyproxy/go-control-plane/envoy/admin/v3"

	"github.com/xdslens/xdslens/internal/testing/xdstest"
	"github.com/xdslens/xdslens/internal/xdswatch/demo/controlplane"
	"github.com/xdslens/xdslens/xdsclient"
	"github.com/xdslens/xdslens/xdsclient/bootstrap"
	"github.com/xdslens/xdslens/xdsclient/xdsresource"
)

// Over delta, CSDS shows what it shows over State of the World, with each
// resource's own version as version_info; a removal shows as
// DOES_NOT_EXIST with the resource kept and the error in error_state.
func TestDeltaVersionsAndRemoval(t *testing.T) {
	f := newFixture(t, []string{bootstrap.FeatureDeltaXDS})
	rec := xdstest.NewWatcher()
	t.Cleanup(f.c.Watch(xdsresource.ClusterType, "c1", rec))
	st := f.NextDeltaStream()
	f.RecvDelta(st, cdsURL)
	f.SendDelta(st, xdstest.DeltaResponse(cdsURL, "system-7", xdstest.DeltaResource("c1", "c1-v3", controlplane.Cluster("c1", "c1"))))
	rec.Expect(t, xdsclient.NotifyResource, 0)
	f.RecvDelta(st, cdsURL)
	_, g := only(t, f.fetch())
	if g.GetClientStatus() != adminv3.ClientResourceStatus_ACKED || g.GetVersionInfo() != "c1-v3" || g.GetXdsConfig() == nil {
		t.Fatalf("c1 over delta: %v at %q (config %v), want ACKED at the resource's version c1-v3 with the resource",
			g.GetClientStatus(), g.GetVersionInfo(), g.GetXdsConfig() != nil)
	}

	f.SendDelta(st, xdstest.DeltaRemoval(cdsURL, "system-8", "c1"))
	rec.Expect(t, xdsclient.NotifyAmbientError, codes.NotFound)
	_, g = only(t, f.fetch())
	if g.GetClientStatus() != adminv3.ClientResourceStatus_DOES_NOT_EXIST || g.GetXdsConfig() == nil || g.GetErrorState() == nil {
		t.Fatalf("c1 removed: %v (config %v, error %v), want DOES_NOT_EXIST with the resource kept and an error_state",
			g.GetClientStatus(), g.GetXdsConfig() != nil, g.GetErrorState())
	}
}
