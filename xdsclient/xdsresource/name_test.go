package xdsresource

import (
	"testing"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"
)

// Each built-in type reads, without decoding, the name its Decode returns,
// also when the name is not the first field or appears twice (the last
// occurrence counts, as in decoding).
func TestReadNameMatchesDecode(t *testing.T) {
	msgs := map[Type]proto.Message{
		ListenerType:    &listenerv3.Listener{Name: "l1", Address: &corev3.Address{}},
		RouteConfigType: &routev3.RouteConfiguration{Name: "r1", VirtualHosts: []*routev3.VirtualHost{{Name: "vh", Domains: []string{"*"}}}},
		ClusterType: &clusterv3.Cluster{Name: "c1", ConnectTimeout: durationpb.New(1),
			ClusterDiscoveryType: &clusterv3.Cluster_Type{Type: clusterv3.Cluster_EDS},
			EdsClusterConfig:     &clusterv3.Cluster_EdsClusterConfig{EdsConfig: &corev3.ConfigSource{ConfigSourceSpecifier: &corev3.ConfigSource_Ads{Ads: &corev3.AggregatedConfigSource{}}}}},
		EndpointsType: &endpointv3.ClusterLoadAssignment{ClusterName: "e1"},
	}
	for typ, m := range msgs {
		b, err := proto.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		// The name field again at the end, and unknown fields of every wire
		// type before it.
		tail := protowire.AppendTag(nil, 9999, protowire.VarintType)
		tail = protowire.AppendVarint(tail, 300)
		tail = protowire.AppendTag(tail, 9998, protowire.Fixed64Type)
		tail = protowire.AppendFixed64(tail, 1)
		tail = protowire.AppendTag(tail, 9997, protowire.Fixed32Type)
		tail = protowire.AppendFixed32(tail, 1)
		tail = protowire.AppendTag(tail, 1, protowire.BytesType)
		tail = protowire.AppendString(tail, "renamed")
		for _, value := range [][]byte{b, append(append([]byte(nil), b...), tail...)} {
			decoded, _, _ := typ.Decode(DecodeOptions{}, &anypb.Any{TypeUrl: typ.TypeURL(), Value: value})
			read, ok := typ.(NameReader).ReadName(value)
			if !ok || string(read) != decoded {
				t.Errorf("%s: ReadName = %q, %v; Decode names %q", typ.ShortName(), read, ok, decoded)
			}
		}
	}
}

func TestReadStringField(t *testing.T) {
	name := protowire.AppendTag(nil, 1, protowire.BytesType)
	name = protowire.AppendString(name, "n")
	varint1 := protowire.AppendTag(nil, 1, protowire.VarintType)
	varint1 = protowire.AppendVarint(varint1, 7)
	for _, tc := range []struct {
		desc string
		b    []byte
		want string
		ok   bool
	}{
		{"empty message", nil, "", false},
		{"present", name, "n", true},
		{"field 1 with another wire type is not the name", varint1, "", false},
		{"truncated length", name[:len(name)-1], "", false},
		{"bad tag", []byte{0xff}, "", false},
		{"truncated after the name", append(append([]byte(nil), name...), 0x10), "", false},
	} {
		got, ok := ReadStringField(tc.b, 1)
		if string(got) != tc.want || ok != tc.ok {
			t.Errorf("%s: ReadStringField = %q, %v; want %q, %v", tc.desc, got, ok, tc.want, tc.ok)
		}
	}
}
