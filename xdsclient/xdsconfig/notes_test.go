package xdsconfig_test

import (
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/xdslens/xdslens/internal/xdswatch/demo/controlplane"
	"github.com/xdslens/xdslens/xdsclient/xdsconfig"
)

// The note of an EDS resource with empty localities lists each of them
// once, in the order of their names, as gRPC C-core's does: a locality
// empty at two priorities is named once.
func TestEmptyLocalitiesNoteSortedOnce(t *testing.T) {
	f := newScripted(t, nil)
	_, r, _ := f.baseline()
	cla := controlplane.Endpoints("A", "127.0.0.1:1")
	empty := func(zone string, priority uint32) *endpointv3.LocalityLbEndpoints {
		return &endpointv3.LocalityLbEndpoints{
			Locality:            &corev3.Locality{Region: "r", Zone: zone},
			LoadBalancingWeight: wrapperspb.UInt32(1),
			Priority:            priority,
		}
	}
	cla.Endpoints = append(cla.Endpoints, empty("z", 0), empty("a", 0), empty("z", 1))
	f.Push(edsURL, cla)
	c := r.until("A's note names its empty localities", func(c *xdsconfig.Config) bool {
		return c.Clusters["A"] != nil && c.Clusters["A"].ResolutionNote != "xDS node ID:"+nodeID
	})
	checkNote(t, c, "A", `EDS resource "A": contains empty localities: [{region="r", zone="a", sub_zone=""}; {region="r", zone="z", sub_zone=""}]`, nodeMark)
}
