package cache

import (
	"testing"

	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/xdslens/xdslens/internal/xdswatch/demo/controlplane"
	"github.com/xdslens/xdslens/xdsclient/internal/transport"
	"github.com/xdslens/xdslens/xdsclient/internal/xdstp"
	"github.com/xdslens/xdslens/xdsclient/xdsresource"
)

// FuzzUnwrap feeds the path every resource of a response takes before the
// cache: parsing and unwrapping (package transport), the name read without decoding, and decoding. For any
// bytes it must not panic, a resource it passes on has the response's type,
// and the name read without decoding is the name decoding gives (in canonical
// form both), so that an unchanged resource is recognised by that name.
func FuzzUnwrap(f *testing.F) {
	types := []xdsresource.Type{xdsresource.ListenerType, xdsresource.RouteConfigType, xdsresource.ClusterType, xdsresource.EndpointsType}
	for _, m := range append(controlplane.DemoResources("demo"),
		controlplane.Cluster("xdstp://a/envoy.config.cluster.v3.Cluster/c?b=2&a=1&", "svc"),
		controlplane.Cluster("xdstp://a/envoy.config.cluster.v3.Cluster/%63", "svc")) {
		b, err := proto.Marshal(m)
		if err != nil {
			f.Fatal(err)
		}
		for i, typ := range types {
			a, _ := anypb.New(m)
			if a.GetTypeUrl() == typ.TypeURL() {
				f.Add(uint8(i), false, "", b)
				f.Add(uint8(i), true, "wrapper-name", b)
			}
		}
	}
	f.Fuzz(func(t *testing.T, which uint8, wrap bool, wrapperName string, value []byte) {
		typ := types[int(which)%len(types)]
		a := &anypb.Any{TypeUrl: typ.TypeURL(), Value: value}
		if wrap {
			w, err := proto.Marshal(&discoveryv3.Resource{Name: wrapperName, Resource: &anypb.Any{TypeUrl: typ.TypeURL(), Value: value}})
			if err != nil {
				return
			}
			a = &anypb.Any{TypeUrl: transport.ResourceWrapperURL, Value: w}
		}
		b, err := proto.Marshal(&discoveryv3.DiscoveryResponse{TypeUrl: typ.TypeURL(), Resources: []*anypb.Any{a}})
		if err != nil {
			return
		}
		u, err := transport.ParseSotW(b)
		if err != nil {
			t.Fatalf("a response that protobuf marshals does not parse: %v", err)
		}
		var it item
		reader, _ := typ.(xdsresource.NameReader)
		rawName := it.take(&u.Resources[0], reader)
		if it.err != nil {
			return
		}
		it.raw = &anypb.Any{TypeUrl: u.TypeURL, Value: it.data}
		decoded, _, _ := typ.Decode(xdsresource.DecodeOptions{}, it.raw)
		it.decode(typ, xdsresource.DecodeOptions{})
		if rawName != nil && decoded != "" && string(rawName) != it.name {
			t.Fatalf("name read without decoding %q, decoded name %q", rawName, it.name)
		}
		if decoded != "" && it.name != xdstp.Received(it.name) {
			t.Fatalf("decoded name %q is not canonical", it.name)
		}
	})
}
