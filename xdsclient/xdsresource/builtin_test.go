package xdsresource

import (
	"fmt"
	"testing"

	"github.com/xdslens/xdslens/xdsclient/xdsresource/routeconfig"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
)

func TestBuiltin(t *testing.T) {
	want := []struct {
		short, name string
		fullState   bool
	}{
		{"lds", "envoy.config.listener.v3.Listener", true},
		{"rds", "envoy.config.route.v3.RouteConfiguration", false},
		{"cds", "envoy.config.cluster.v3.Cluster", true},
		{"eds", "envoy.config.endpoint.v3.ClusterLoadAssignment", false},
	}
	got := Builtin()
	if len(got) != len(want) {
		t.Fatalf("Builtin() has %d types, want %d", len(got), len(want))
	}
	for i, w := range want {
		typ := got[i]
		if typ.ShortName() != w.short || TypeName(typ) != w.name || typ.FullState() != w.fullState {
			t.Errorf("Builtin()[%d] = (%q, %q, %v), want (%q, %q, %v)", i,
				typ.ShortName(), TypeName(typ), typ.FullState(), w.short, w.name, w.fullState)
		}
		if typ.TypeURL() != TypeURLPrefix+w.name {
			t.Errorf("Builtin()[%d].TypeURL() = %q", i, typ.TypeURL())
		}
		if ByShortName(w.short) != typ {
			t.Errorf("ByShortName(%q) is not Builtin()[%d]", w.short, i)
		}
	}
	if ByShortName("sds") != nil || ByShortName("") != nil {
		t.Error("ByShortName of an unknown name is not nil")
	}
}

func TestDecodeWrongTypeURL(t *testing.T) {
	a := toAny(t, &listenerv3.Listener{Name: "l1"})
	name, v, err := ClusterType.Decode(DecodeOptions{}, a)
	want := `cds: resource has type URL "type.googleapis.com/envoy.config.listener.v3.Listener", want "type.googleapis.com/envoy.config.cluster.v3.Cluster"`
	if err == nil || err.Error() != want {
		t.Fatalf("Decode error = %v, want %s", err, want)
	}
	if name != "" || v != nil {
		t.Errorf("Decode = (%q, %v), want empty name and nil value", name, v)
	}
}

func TestDecodeBadBytes(t *testing.T) {
	a := &anypb.Any{TypeUrl: EndpointsType.TypeURL(), Value: []byte{0xff}}
	_, _, err := EndpointsType.Decode(DecodeOptions{}, a)
	const prefix = "eds: cannot unmarshal envoy.config.endpoint.v3.ClusterLoadAssignment: "
	if err == nil || len(err.Error()) <= len(prefix) || err.Error()[:len(prefix)] != prefix {
		t.Fatalf("Decode error = %v, want prefix %q", err, prefix)
	}
}

func TestDecodeNoName(t *testing.T) {
	for _, tc := range []struct {
		typ  Type
		m    proto.Message
		want string
	}{
		{ListenerType, &listenerv3.Listener{}, "lds: resource has no name"},
		{RouteConfigType, &routev3.RouteConfiguration{}, "rds: resource has no name"},
		{ClusterType, &clusterv3.Cluster{}, "cds: resource has no name"},
		{EndpointsType, &endpointv3.ClusterLoadAssignment{}, "eds: resource has no name"},
	} {
		if _, _, err := decode(t, tc.typ, tc.m); err == nil || err.Error() != tc.want {
			t.Errorf("%s: Decode error = %v, want %s", tc.typ.ShortName(), err, tc.want)
		}
	}
}

func TestKindStrings(t *testing.T) {
	for _, tc := range []struct {
		got  fmt.Stringer
		want string
	}{
		{ClusterEDS, "EDS"}, {ClusterLogicalDNS, "LOGICAL_DNS"}, {ClusterAggregate, "AGGREGATE"}, {ClusterKind(9), "ClusterKind(9)"},
		{routeconfig.PathPrefix, "prefix"}, {routeconfig.PathExact, "path"}, {routeconfig.PathRegex, "safe_regex"}, {routeconfig.PathMatchKind(0), "PathMatchKind(0)"},
		{routeconfig.ActionCluster, "cluster"}, {routeconfig.ActionWeightedClusters, "weighted_clusters"}, {routeconfig.ActionClusterHeader, "cluster_header"},
		{routeconfig.ActionNonForwarding, "non_forwarding"}, {routeconfig.ActionUnsupported, "unsupported"}, {routeconfig.ActionKind(0), "ActionKind(0)"},
	} {
		if s := tc.got.String(); s != tc.want {
			t.Errorf("String() = %q, want %q", s, tc.want)
		}
	}
}

func TestByTypeURLAndSummarizer(t *testing.T) {
	for _, typ := range Builtin() {
		if ByTypeURL(typ.TypeURL()) != typ {
			t.Errorf("ByTypeURL(%q) did not return the type", typ.TypeURL())
		}
	}
	if ByTypeURL("type.googleapis.com/unknown") != nil {
		t.Error("ByTypeURL of an unknown URL is not nil")
	}
	var _ Summarizer = (*Cluster)(nil)
	var _ Summarizer = (*Listener)(nil)
	var _ Summarizer = (*routeconfig.Config)(nil)
	var _ Summarizer = (*ClusterLoadAssignment)(nil)
}
