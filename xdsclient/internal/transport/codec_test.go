package transport

import (
	"bytes"
	"testing"

	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	rpcstatus "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/xdslens/xdslens/internal/controlplane"
	"github.com/xdslens/xdslens/xdsclient/internal/xdstp"
)

const cdsURL = "type.googleapis.com/envoy.config.cluster.v3.Cluster"

func seeds(f *testing.F) {
	c, _ := anypb.New(controlplane.Cluster("c1", "svc"))
	wrapped, _ := proto.Marshal(&discoveryv3.Resource{Name: "xdstp://a/envoy.config.cluster.v3.Cluster/c?b=2&a=1", Resource: c})
	for _, m := range []proto.Message{
		&discoveryv3.DiscoveryResponse{TypeUrl: cdsURL, VersionInfo: "1", Nonce: "n", Resources: []*anypb.Any{c, {TypeUrl: ResourceWrapperURL, Value: wrapped}, {TypeUrl: "other", Value: []byte{1}}},
			ResourceErrors: []*discoveryv3.ResourceError{{ResourceName: &discoveryv3.ResourceName{Name: "c2"}, ErrorDetail: &rpcstatus.Status{Code: 5, Message: "gone"}}}},
		&discoveryv3.DeltaDiscoveryResponse{TypeUrl: cdsURL, SystemVersionInfo: "1", Nonce: "n", RemovedResources: []string{"c3"},
			Resources: []*discoveryv3.Resource{{Name: "c1", Version: "7", Resource: c}, {Name: "c9", Version: "1"}}},
	} {
		b, err := proto.Marshal(m)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
}

// ParseSotW reads every DiscoveryResponse protobuf reads, as protobuf
// reads it, and never panics on any bytes.
func FuzzParseSotW(f *testing.F) {
	seeds(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		u, err := ParseSotW(b)
		resp := &discoveryv3.DiscoveryResponse{}
		if proto.Unmarshal(b, resp) != nil {
			return
		}
		if err != nil {
			t.Fatalf("protobuf reads the response, ParseSotW fails: %v", err)
		}
		if u.TypeURL != resp.GetTypeUrl() || u.Version != resp.GetVersionInfo() || u.Nonce != resp.GetNonce() {
			t.Fatalf("type %q version %q nonce %q, want %q %q %q", u.TypeURL, u.Version, u.Nonce, resp.GetTypeUrl(), resp.GetVersionInfo(), resp.GetNonce())
		}
		if len(u.Resources) != len(resp.GetResources()) || len(u.Errors) != len(resp.GetResourceErrors()) {
			t.Fatalf("%d resources, %d errors; want %d, %d", len(u.Resources), len(u.Errors), len(resp.GetResources()), len(resp.GetResourceErrors()))
		}
		for i, a := range resp.GetResources() {
			name, value, ok := a.GetTypeUrl() == u.TypeURL, a.GetValue(), true
			want := Resource{Value: value}
			if a.GetTypeUrl() == ResourceWrapperURL {
				w := &discoveryv3.Resource{}
				ok = proto.Unmarshal(a.GetValue(), w) == nil && w.GetResource() != nil && w.GetResource().GetTypeUrl() == u.TypeURL
				want = Resource{Name: xdstp.Received(w.GetName()), Value: w.GetResource().GetValue()}
			} else if !name {
				ok = false
			}
			got := u.Resources[i]
			if (got.Err == nil) != ok || (ok && (got.Name != want.Name || !bytes.Equal(got.Value, want.Value))) {
				t.Fatalf("resources[%d]: %+v, want %+v (valid %v)", i, got, want, ok)
			}
		}
	})
}

// ParseDelta reads every DeltaDiscoveryResponse protobuf reads, as
// protobuf reads it, and never panics on any bytes.
func FuzzParseDelta(f *testing.F) {
	seeds(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		u, err := ParseDelta(b)
		resp := &discoveryv3.DeltaDiscoveryResponse{}
		if proto.Unmarshal(b, resp) != nil {
			return
		}
		if err != nil {
			t.Fatalf("protobuf reads the response, ParseDelta fails: %v", err)
		}
		if u.TypeURL != resp.GetTypeUrl() || u.Version != resp.GetSystemVersionInfo() || u.Nonce != resp.GetNonce() || len(u.Removed) != len(resp.GetRemovedResources()) {
			t.Fatalf("got %+v, want %v", u, resp)
		}
		var want []Resource
		for _, r := range resp.GetResources() {
			if r.GetResource() == nil {
				continue
			}
			w := Resource{Name: xdstp.Received(r.GetName()), Version: r.GetVersion(), Value: r.GetResource().GetValue()}
			if r.GetResource().GetTypeUrl() != u.TypeURL {
				w = Resource{Name: w.Name, Err: errMalformed}
			}
			want = append(want, w)
		}
		if len(u.Resources) != len(want) {
			t.Fatalf("%d resources, want %d", len(u.Resources), len(want))
		}
		for i, w := range want {
			got := u.Resources[i]
			if (got.Err == nil) != (w.Err == nil) || got.Name != w.Name || (w.Err == nil && (got.Version != w.Version || !bytes.Equal(got.Value, w.Value))) {
				t.Fatalf("resources[%d]: %+v, want %+v", i, got, w)
			}
		}
	})
}
