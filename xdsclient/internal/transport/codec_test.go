package transport

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"

	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	rpcstatus "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/xdslens/xdslens/internal/xdswatch/demo/controlplane"
	"github.com/xdslens/xdslens/xdsclient/internal/xdstp"
	"github.com/xdslens/xdslens/xdsclient/internal/xerr"
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

// What a message may quote of the server is bounded where it enters: a
// version, kept whole for the requests that echo it, comes with its
// shown form cut at xerr.MaxShown bytes, and a TP3 error's message is
// cut likewise; a short one is shown as it is.
func TestServerStringsBoundedWhereTheyEnter(t *testing.T) {
	huge := strings.Repeat("v", 3*xerr.MaxShown)
	c, _ := anypb.New(controlplane.Cluster("c1", "svc"))
	sotw, _ := proto.Marshal(&discoveryv3.DiscoveryResponse{TypeUrl: cdsURL, VersionInfo: huge, Nonce: "n", Resources: []*anypb.Any{c},
		ResourceErrors: []*discoveryv3.ResourceError{
			{ResourceName: &discoveryv3.ResourceName{Name: "c2"}, ErrorDetail: &rpcstatus.Status{Code: int32(codes.PermissionDenied), Message: huge}},
			{ResourceName: &discoveryv3.ResourceName{Name: "c3"}, ErrorDetail: &rpcstatus.Status{Code: int32(codes.NotFound), Message: "gone"}},
			{ResourceName: &discoveryv3.ResourceName{Name: "c4"}},
		}})
	u, err := ParseSotW(sotw)
	if err != nil {
		t.Fatal(err)
	}
	checkShown(t, "version_info", u.Version, u.ShownVersion, huge)
	want := []ResourceError{{Name: "c2", Code: codes.PermissionDenied, Message: xerr.Bound(huge)}, {Name: "c3", Code: codes.NotFound, Message: "gone"}, {Name: "c4"}}
	if len(u.Errors) != len(want) {
		t.Fatalf("%d TP3 errors, want %d", len(u.Errors), len(want))
	}
	for i, w := range want {
		if got := u.Errors[i]; got != w {
			t.Errorf("resource_errors[%d]: %s %v and %d bytes of message, want %s %v and %d", i, got.Name, got.Code, len(got.Message), w.Name, w.Code, len(w.Message))
		}
	}
	if n := len(u.Errors[0].Message); n > xerr.MaxShown || !strings.HasSuffix(u.Errors[0].Message, " more bytes]") {
		t.Errorf("a TP3 message of %d bytes is %d bytes, or its cut is not marked", len(huge), n)
	}

	delta, _ := proto.Marshal(&discoveryv3.DeltaDiscoveryResponse{TypeUrl: cdsURL, SystemVersionInfo: "7", Nonce: "n",
		Resources: []*discoveryv3.Resource{{Name: "c1", Version: huge, Resource: c}}})
	if u, err = ParseDelta(delta); err != nil {
		t.Fatal(err)
	}
	checkShown(t, "system_version_info", u.Version, u.ShownVersion, "7")
	checkShown(t, "a resource's version", u.Resources[0].Version, u.Resources[0].ShownVersion, huge)
}

// checkShown fails t unless version is sent whole and shown is it cut at
// xerr.MaxShown bytes (itself, if no longer).
func checkShown(t *testing.T, what, version, shown, sent string) {
	t.Helper()
	if version != sent {
		t.Errorf("%s of %d bytes kept as %d bytes, want it whole", what, len(sent), len(version))
	}
	if len(sent) <= xerr.MaxShown && shown != sent {
		t.Errorf("%s %q shown as %q", what, sent, shown)
	}
	if len(sent) <= xerr.MaxShown {
		return
	}
	kept, _, marked := strings.Cut(shown, "...[")
	if len(shown) > xerr.MaxShown || !marked || !strings.HasPrefix(sent, kept) || !strings.HasSuffix(shown, " more bytes]") {
		t.Errorf("%s of %d bytes shown as %d bytes: %.40q...", what, len(sent), len(shown), shown)
	}
}

// BenchmarkParseSotW reads a response of 10,000 clusters.
func BenchmarkParseSotW(b *testing.B) {
	resp := &discoveryv3.DiscoveryResponse{TypeUrl: cdsURL, VersionInfo: "1", Nonce: "n"}
	for i := range 10000 {
		a, err := anypb.New(controlplane.Cluster("c"+strconv.Itoa(i), ""))
		if err != nil {
			b.Fatal(err)
		}
		resp.Resources = append(resp.Resources, a)
	}
	wire, err := proto.Marshal(resp)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(wire)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseSotW(wire); err != nil {
			b.Fatal(err)
		}
	}
}

// TestParseSotWAnyForms: an Any in a form other than the usual one (type
// URL then value) is read as protobuf reads it: fields in another order,
// given twice, unknown fields, a tag in a longer varint, no value.
func TestParseSotWAnyForms(t *testing.T) {
	url := protowire.AppendString(protowire.AppendTag(nil, 1, protowire.BytesType), cdsURL)
	value := func(v string) []byte {
		return protowire.AppendString(protowire.AppendTag(nil, 2, protowire.BytesType), v)
	}
	cat := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	longTag := cat([]byte{0x92, 0x00}, protowire.AppendString(nil, "long")) // field 2, bytes, in two bytes
	other := protowire.AppendString(protowire.AppendTag(nil, 1, protowire.BytesType), "type.googleapis.com/other")
	for _, a := range [][]byte{
		cat(url, value("v")),
		cat(value("v"), url),
		cat(url, value("a"), value("b")),
		cat(url, value("v"), protowire.AppendVarint(protowire.AppendTag(nil, 3, protowire.VarintType), 1)),
		cat(url, longTag),
		cat(url),
		cat(other, value("v"), url),
		cat(url, value("v"), other),
	} {
		wire := protowire.AppendBytes(protowire.AppendTag(nil, 2, protowire.BytesType), a)
		wire = protowire.AppendString(protowire.AppendTag(wire, 4, protowire.BytesType), cdsURL)
		u, err := ParseSotW(wire)
		resp := &discoveryv3.DiscoveryResponse{}
		if perr := proto.Unmarshal(wire, resp); perr != nil || err != nil {
			t.Fatalf("Any %x: ParseSotW: %v; protobuf: %v", a, err, perr)
		}
		want := resp.GetResources()[0]
		got := u.Resources[0]
		if ok := want.GetTypeUrl() == cdsURL; (got.Err == nil) != ok || ok && !bytes.Equal(got.Value, want.GetValue()) {
			t.Errorf("Any %x: read %+v, want value %q of type %q", a, got, want.GetValue(), want.GetTypeUrl())
		}
	}
}

// The resources of a response are read into those of an earlier one when
// they have room, as the stream does (release gives them back, emptied):
// what is read is the same as into new ones.
func TestParseReusesResources(t *testing.T) {
	var wires [][]byte
	for _, n := range []int{3, 1, 5} {
		resp := &discoveryv3.DiscoveryResponse{VersionInfo: "1", TypeUrl: cdsURL, Nonce: "n"}
		for i := range n {
			b, _ := proto.Marshal(&discoveryv3.DiscoveryRequest{VersionInfo: fmt.Sprint("r", i)})
			resp.Resources = append(resp.Resources, &anypb.Any{TypeUrl: cdsURL, Value: b})
		}
		wire, err := proto.Marshal(resp)
		if err != nil {
			t.Fatal(err)
		}
		wires = append(wires, wire)
	}
	var pool sync.Pool
	for i, wire := range wires {
		reuse, _ := pool.Get().(*[]Resource)
		if reuse == nil {
			reuse = new([]Resource)
		}
		room := cap(*reuse)
		u, err := parseSotW(wire, *reuse)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := ParseSotW(wire)
		if len(u.Resources) != len(want.Resources) {
			t.Fatalf("response %d: %d resources, want %d", i, len(u.Resources), len(want.Resources))
		}
		for j := range want.Resources {
			if !bytes.Equal(u.Resources[j].Value, want.Resources[j].Value) || u.Resources[j].Err != nil {
				t.Fatalf("response %d, resource %d: %+v, want %+v", i, j, u.Resources[j], want.Resources[j])
			}
		}
		reused := room > 0 && &u.Resources[:1][0] == &(*reuse)[:1][0]
		if reused != (room >= len(u.Resources)) {
			t.Errorf("response %d: reused %v with room for %d of %d", i, reused, room, len(u.Resources))
		}
		u.reuse, u.pool = reuse, &pool
		backing := u.Resources
		u.release()
		if u.Resources != nil || backing[0].Value != nil {
			t.Fatalf("response %d: release kept the resources or what they refer to", i)
		}
	}
}
