package xdsresource_test

import (
	"reflect"
	"testing"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/xdslens/xdslens/internal/xdswatch/demo/controlplane"
	"github.com/xdslens/xdslens/xdsclient/xdsresource"
)

// The decoders take bytes from a server: whatever the bytes, Decode must
// not panic, must be deterministic (the client decodes held bytes again for
// a later watcher), and the name read without decoding must be the name
// Decode gives.

func FuzzDecodeListener(f *testing.F) {
	fuzzDecode(f, xdsresource.ListenerType,
		controlplane.Listener("l1", "r1"),
		controlplane.ListenerInlineRoute("l2", controlplane.RouteConfig("r2", []string{"*"}, "c2")),
		controlplane.ServerListener("grpc/server?xds.resource.listening_address=127.0.0.1:8443", "127.0.0.1", 8443, "r3"))
}

func FuzzDecodeRouteConfig(f *testing.F) {
	fuzzDecode(f, xdsresource.RouteConfigType,
		controlplane.RouteConfig("r1", []string{"*"}, "c1"),
		controlplane.RouteConfig("xdstp://a/envoy.config.route.v3.RouteConfiguration/r?b=1", []string{"a.example.com", "*.example.com"}, "c2"))
}

func FuzzDecodeCluster(f *testing.F) {
	logical := controlplane.Cluster("dns", "")
	logical.ClusterDiscoveryType = &clusterv3.Cluster_Type{Type: clusterv3.Cluster_LOGICAL_DNS}
	logical.EdsClusterConfig = nil
	logical.LoadAssignment = controlplane.Endpoints("dns", "example.com:443")
	lrs := controlplane.Cluster("lrs", "svc")
	lrs.LrsServer = &corev3.ConfigSource{ConfigSourceSpecifier: &corev3.ConfigSource_Self{Self: &corev3.SelfConfigSource{}}}
	fuzzDecode(f, xdsresource.ClusterType, controlplane.Cluster("c1", ""), controlplane.Cluster("c2", "svc"), logical, lrs)
}

func FuzzDecodeEndpoints(f *testing.F) {
	fuzzDecode(f, xdsresource.EndpointsType,
		controlplane.Endpoints("c1", "127.0.0.1:1", "127.0.0.1:2"),
		controlplane.Endpoints("c2", "[::1]:443"))
}

func fuzzDecode(f *testing.F, typ xdsresource.Type, seeds ...proto.Message) {
	for _, m := range append(seeds, controlplane.DemoResources("demo")...) {
		b, err := proto.Marshal(m)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	opts := xdsresource.DecodeOptions{ServerURI: "fuzz:443", HasCertificateProvider: func(name string) bool { return name == "known" }}
	f.Fuzz(func(t *testing.T, b []byte) {
		a := &anypb.Any{TypeUrl: typ.TypeURL(), Value: b}
		name1, v1, err1 := typ.Decode(opts, a)
		name2, v2, err2 := typ.Decode(opts, a)
		if name1 != name2 || (err1 == nil) != (err2 == nil) || err1 != nil && err1.Error() != err2.Error() {
			t.Fatalf("two decodes differ: (%q, %v) then (%q, %v)", name1, err1, name2, err2)
		}
		if err1 == nil {
			if name1 == "" {
				t.Fatalf("valid resource with no name: %+v", v1)
			}
			if diff := cmp.Diff(v1, v2, protocmp.Transform(), cmp.Exporter(func(reflect.Type) bool { return true })); diff != "" {
				t.Fatalf("two decodes differ (-first +second):\n%s", diff)
			}
		}
		if reader, ok := typ.(xdsresource.NameReader); ok && name1 != "" {
			if read, ok := reader.ReadName(b); ok && string(read) != name1 {
				t.Fatalf("ReadName = %q, Decode names %q", read, name1)
			}
		}
	})
}
