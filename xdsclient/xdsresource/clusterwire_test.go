package xdsresource

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/testing/protocmp"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/xdslens/xdslens/internal/xdswatch/demo/controlplane"
	"github.com/xdslens/xdslens/xdsclient/xdsresource/internal/decoding"
)

// The Cluster decoder fills the message from the wire by hand for the
// fields of the common shape of an EDS cluster and leaves the rest to the
// protobuf runtime. Its correctness is differential: for every input it
// either gives up (and the runtime decodes the input) or leaves the very
// message proto.Unmarshal leaves, so that validation, the same code on
// both paths, gives the same Cluster or the same error.

func TestClusterWireFieldNumbers(t *testing.T) {
	for _, tc := range []struct {
		m    proto.Message
		name protoreflect.Name
		num  protowire.Number
		kind protoreflect.Kind
	}{
		{&clusterv3.Cluster{}, "name", clusterName, protoreflect.StringKind},
		{&clusterv3.Cluster{}, "type", clusterType, protoreflect.EnumKind},
		{&clusterv3.Cluster{}, "eds_cluster_config", clusterEDSConfig, protoreflect.MessageKind},
		{&clusterv3.Cluster{}, "connect_timeout", clusterConnectTimeout, protoreflect.MessageKind},
		{&clusterv3.Cluster{}, "lb_policy", clusterLBPolicy, protoreflect.EnumKind},
		{&clusterv3.Cluster{}, "lrs_server", clusterLRSServer, protoreflect.MessageKind},
		{&clusterv3.Cluster_EdsClusterConfig{}, "eds_config", edsConfigSource, protoreflect.MessageKind},
		{&clusterv3.Cluster_EdsClusterConfig{}, "service_name", edsServiceName, protoreflect.StringKind},
		{&corev3.ConfigSource{}, "ads", configSourceADS, protoreflect.MessageKind},
		{&corev3.ConfigSource{}, "self", configSourceSelf, protoreflect.MessageKind},
		{&corev3.ConfigSource{}, "resource_api_version", configSourceAPIVersion, protoreflect.EnumKind},
		{&durationpb.Duration{}, "seconds", durationSeconds, protoreflect.Int64Kind},
		{&durationpb.Duration{}, "nanos", durationNanos, protoreflect.Int32Kind},
	} {
		d := tc.m.ProtoReflect().Descriptor()
		fd := d.Fields().ByName(tc.name)
		if fd == nil || fd.Number() != tc.num || fd.Kind() != tc.kind || fd.Cardinality() == protoreflect.Repeated {
			t.Errorf("%s.%s is %v, want singular %v number %d", d.FullName(), tc.name, fd, tc.kind, tc.num)
		}
	}
	if d := (&clusterv3.Cluster{}).ProtoReflect().Descriptor(); d.Syntax() != protoreflect.Proto3 {
		t.Errorf("Cluster is %v: its strings may not need valid UTF-8", d.Syntax())
	}
}

// checkClusterWire fails t unless decoding b by hand, in s, agrees with
// the runtime. It reports whether the hand decoder took b (did not give
// up), and leaves s reset for the next input.
func checkClusterWire(t *testing.T, s *clusterScratch, b []byte) bool {
	t.Helper()
	want := new(clusterv3.Cluster)
	err := decoding.Unmarshal(b, want)
	took := s.fillCluster(b)
	switch {
	case took && err != nil:
		t.Fatalf("hand decoder took input that the runtime rejects (%v): %s", err, shortHex(b))
	case took && !proto.Equal(&s.m, want):
		t.Fatalf("hand decoder gives\n%v\nruntime gives\n%v\ninput %s", &s.m, want, shortHex(b))
	}
	s.runtime = s.runtime || !took
	s.reset()

	// What decodeCluster does with s: same name, value and error as the
	// runtime path.
	wname, wv, werr := "", any(nil), err
	if err == nil {
		wname, wv, werr = checkCluster(testOpts, want)
	}
	name, v, derr := "", any(nil), s.decode(b)
	if derr == nil {
		name, v, derr = checkCluster(testOpts, &s.m)
	}
	s.reset()
	if name != wname || fmt.Sprint(derr) != fmt.Sprint(werr) {
		t.Fatalf("decoded by hand: (%q, %v), by the runtime: (%q, %v)", name, derr, wname, werr)
	}
	if diff := cmp.Diff(wv, v, protocmp.Transform(), cmp.Exporter(func(reflect.Type) bool { return true })); diff != "" {
		t.Fatalf("decoded by hand differs from decoded by the runtime (-runtime +hand):\n%s", diff)
	}
	return took
}

// shortHex shows b in hex, cut at 64 bytes.
func shortHex(b []byte) string {
	if len(b) > 64 {
		return fmt.Sprintf("% x ... (%d bytes)", b[:64], len(b))
	}
	return fmt.Sprintf("% x", b)
}

// wireOf appends fields built with protowire, to a copy: cases share
// prefixes.
type wireOf []byte

func (w wireOf) varint(num protowire.Number, v uint64) wireOf {
	return protowire.AppendVarint(protowire.AppendTag(w[:len(w):len(w)], num, protowire.VarintType), v)
}

func (w wireOf) bytes(num protowire.Number, v []byte) wireOf {
	return protowire.AppendBytes(protowire.AppendTag(w[:len(w):len(w)], num, protowire.BytesType), v)
}

func (w wireOf) str(num protowire.Number, v string) wireOf { return w.bytes(num, []byte(v)) }

func (w wireOf) raw(b ...byte) wireOf { return append(w[:len(w):len(w)], b...) }

// withLRS returns m with lrs_server src.
func withLRS(m *clusterv3.Cluster, src *corev3.ConfigSource) *clusterv3.Cluster {
	m.LrsServer = src
	return m
}

func mustMarshal(t testing.TB, m proto.Message) []byte {
	t.Helper()
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// clusterWireCases are inputs for the differential test and seeds of its
// fuzz target. took is whether the hand decoder must take the input: the
// common shapes must not fall back to the runtime.
func clusterWireCases(t testing.TB) []struct {
	name string
	b    []byte
	took bool
} {
	ads := wireOf{}.bytes(configSourceADS, nil).varint(configSourceAPIVersion, 2)
	self := wireOf{}.bytes(configSourceSelf, nil)
	unknown := wireOf{}.varint(9, 1) // an unknown field
	eds := func(src wireOf, svc string) wireOf {
		return wireOf{}.bytes(edsConfigSource, src).str(edsServiceName, svc)
	}
	secs := wireOf{}.varint(durationSeconds, 5)
	base := wireOf{}.str(clusterName, "c1").varint(clusterType, 3).bytes(clusterEDSConfig, eds(ads, "c1-eds"))

	full := edsCluster()
	full.ConnectTimeout = durationpb.New(2500 * time.Millisecond)
	full.LrsServer = selfSource
	full.CircuitBreakers = &clusterv3.CircuitBreakers{Thresholds: []*clusterv3.CircuitBreakers_Thresholds{
		{Priority: corev3.RoutingPriority_DEFAULT, MaxRequests: wrapperspb.UInt32(7)}}}
	full.OutlierDetection = &clusterv3.OutlierDetection{Interval: durationpb.New(time.Second)}
	full.Metadata = &corev3.Metadata{FilterMetadata: map[string]*structpb.Struct{"m": {Fields: map[string]*structpb.Value{"k": structpb.NewStringValue("v")}}}}
	full.DnsLookupFamily = clusterv3.Cluster_V4_ONLY
	full.AltStatName = "alt"
	bad := []byte{0xff, 0xfe}
	keyed := edsCluster() // a private key in a deprecated field: rejected either way
	keyed.TransportSocket = tlsSocket(t, upstream(func(c *tlsv3.CommonTlsContext) {
		c.TlsCertificateCertificateProvider = &tlsv3.CommonTlsContext_CertificateProvider{Name: "p", Config: &tlsv3.CommonTlsContext_CertificateProvider_TypedConfig{
			TypedConfig: &corev3.TypedExtensionConfig{Name: "p", TypedConfig: toAny(t, &tlsv3.Secret{Type: &tlsv3.Secret_TlsCertificate{TlsCertificate: inlineKey}})},
		}}
	}))

	sni := edsCluster() // gRFC A101 and A82 fields, read from the runtime's transport_socket
	sni.TransportSocket = tlsSocket(t, &tlsv3.UpstreamTlsContext{
		CommonTlsContext: &tlsv3.CommonTlsContext{ValidationContextType: &tlsv3.CommonTlsContext_ValidationContext{
			ValidationContext: systemRoots(&matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_Suffix{Suffix: ".example.com"}}),
		}},
		Sni: "api.example.com", AutoHostSni: true, AutoSniSanValidation: true,
	})

	return []struct {
		name string
		b    []byte
		took bool
	}{
		{"TLS cluster with sni, auto_host_sni, auto_sni_san_validation and system roots", mustMarshal(t, sni), true},
		{"controlplane EDS cluster", mustMarshal(t, controlplane.Cluster("c0", "c0")), true},
		{"EDS cluster, no service name", mustMarshal(t, controlplane.Cluster("c0", "")), true},
		{"EDS cluster with the fields of real clusters", mustMarshal(t, full), true},
		{"LOGICAL_DNS cluster", mustMarshal(t, dnsCluster(dnsEndpoint(&corev3.SocketAddress{Address: "h", PortSpecifier: &corev3.SocketAddress_PortValue{PortValue: 443}}))), true},
		{"LOGICAL_DNS cluster, port out of range", mustMarshal(t, dnsCluster(dnsEndpoint(&corev3.SocketAddress{Address: "h", PortSpecifier: &corev3.SocketAddress_PortValue{PortValue: 70000}}))), true},
		{"TLS cluster with a private key in a deprecated field", mustMarshal(t, keyed), true},
		{"aggregate cluster", mustMarshal(t, aggregateCluster(t, "a", "b")), true},
		{"load_balancing_policy", mustMarshal(t, withPolicyMsg(edsCluster(), lbPolicy(t, &structpb.Struct{}))), true},
		{"empty", nil, true},
		{"fields of real clusters, then a malformed one", append(mustMarshal(t, full), 0x0e), false},
		{"fields in reverse order", wireOf{}.bytes(clusterConnectTimeout, secs).bytes(clusterEDSConfig, eds(ads, "s")).varint(clusterType, 3).str(clusterName, "c1"), true},
		{"name twice: the last wins", base.str(clusterName, "c2"), true},
		{"name, then empty name", base.str(clusterName, ""), true},
		{"service_name equal to the name", wireOf{}.str(clusterName, "x").varint(clusterType, 3).bytes(clusterEDSConfig, eds(ads, "x")), true},
		{"eds_cluster_config twice: merged", base.bytes(clusterEDSConfig, wireOf{}.str(edsServiceName, "other")), true},
		{"eds_config twice: merged", base.bytes(clusterEDSConfig, wireOf{}.bytes(edsConfigSource, wireOf{}.varint(configSourceAPIVersion, 1))), true},
		{"ads then self: self wins", base.bytes(clusterEDSConfig, wireOf{}.bytes(edsConfigSource, self)), true},
		{"ads, self, ads", base.bytes(clusterEDSConfig, wireOf{}.bytes(edsConfigSource, self.bytes(configSourceADS, nil))), true},
		{"self then ads", wireOf{}.str(clusterName, "c").varint(clusterType, 3).bytes(clusterEDSConfig, eds(self.bytes(configSourceADS, nil), "")), true},
		{"ads with unknown fields", wireOf{}.str(clusterName, "c").varint(clusterType, 3).bytes(clusterEDSConfig, eds(wireOf{}.bytes(configSourceADS, wireOf{}.varint(9, 1)), "")), true},
		{"ads twice with unknown fields", wireOf{}.str(clusterName, "c").varint(clusterType, 3).bytes(clusterEDSConfig, eds(wireOf{}.bytes(configSourceADS, wireOf{}.varint(9, 1)).bytes(configSourceADS, wireOf{}.varint(10, 2)), "")), true},
		{"ads with malformed content", wireOf{}.str(clusterName, "c").varint(clusterType, 3).bytes(clusterEDSConfig, eds(wireOf{}.bytes(configSourceADS, []byte{0x08}), "")), false},
		{"lrs_server self", base.bytes(clusterLRSServer, self), true},
		{"lrs_server self with transport_api_version", base.bytes(clusterLRSServer, wireOf{}.bytes(configSourceSelf, wireOf{}.varint(1, 2))), true},
		{"lrs_server ads then self", base.bytes(clusterLRSServer, ads).bytes(clusterLRSServer, self), true},
		{"lrs_server self then ads", base.bytes(clusterLRSServer, self.bytes(configSourceADS, unknown)), true},
		{"lrs_server self twice with unknown fields", base.bytes(clusterLRSServer, wireOf{}.bytes(configSourceSelf, unknown)).bytes(clusterLRSServer, wireOf{}.bytes(configSourceSelf, wireOf{}.varint(10, 1))), true},
		{"lrs_server and eds_config both ads with unknown fields", wireOf{}.str(clusterName, "c").varint(clusterType, 3).bytes(clusterEDSConfig, eds(wireOf{}.bytes(configSourceADS, unknown), "")).bytes(clusterLRSServer, wireOf{}.bytes(configSourceADS, wireOf{}.varint(10, 1))), true},
		{"lrs_server then eds_config, both self", wireOf{}.str(clusterName, "c").varint(clusterType, 3).bytes(clusterLRSServer, wireOf{}.bytes(configSourceSelf, unknown)).bytes(clusterEDSConfig, eds(self, "")), true},
		{"lrs_server self with malformed content", base.bytes(clusterLRSServer, wireOf{}.bytes(configSourceSelf, []byte{0x08})), false},
		{"lrs_server with an api_config_source", mustMarshal(t, withLRS(edsCluster(), pathSource)), true},
		{"connect_timeout twice: merged", base.bytes(clusterConnectTimeout, secs).bytes(clusterConnectTimeout, wireOf{}.varint(durationNanos, 7)), true},
		{"connect_timeout with a bad nanos", base.bytes(clusterConnectTimeout, wireOf{}.varint(durationNanos, 1<<40)), true},
		{"negative connect_timeout", base.bytes(clusterConnectTimeout, wireOf{}.varint(durationSeconds, ^uint64(0))), true},
		{"type then cluster_type", mustMarshal(t, aggregateCluster(t, "a")), true},
		{"cluster_type then type", append(mustMarshal(t, aggregateCluster(t, "a")), wireOf{}.varint(clusterType, 3).bytes(clusterEDSConfig, eds(ads, ""))...), true},
		{"type wider than int32", base.varint(clusterType, 1<<32|3), true},
		{"type negative", base.varint(clusterType, ^uint64(0)), true},
		{"type unknown", base.varint(clusterType, 99), true},
		{"lb_policy ring hash", base.varint(clusterLBPolicy, 2), true},
		{"lb_policy unknown", base.varint(clusterLBPolicy, 1<<31), true},
		{"type as bytes: an unknown field", base.bytes(clusterType, []byte{3}), true},
		{"eds_cluster_config as varint: an unknown field", base.varint(clusterEDSConfig, 1), true},
		{"eds_cluster_config as a group: an unknown field", base.raw(0x1b, 0x08, 0x01, 0x1c), true},
		{"unknown fields of every wire type", base.varint(1000, 1).raw(0xc5, 0x3e, 1, 2, 3, 4).raw(0xc1, 0x3e, 1, 2, 3, 4, 5, 6, 7, 8).bytes(1001, []byte("x")).raw(0xdb, 0x3e, 0x08, 0x01, 0xdc, 0x3e), true},
		{"tag not minimally encoded", wireOf{}.raw(0x8a, 0x80, 0x00, 1, 'c').varint(clusterType, 3), true},
		{"name not UTF-8", base.bytes(clusterName, bad), false},
		{"service_name not UTF-8", base.bytes(clusterEDSConfig, wireOf{}.bytes(edsServiceName, bad)), false},
		{"alt_stat_name not UTF-8", base.bytes(28, bad), false},
		{"unknown bytes field not UTF-8", base.bytes(1000, bad), true},
		{"truncated", base[:len(base)-1], false},
		{"length past the end", wireOf{}.raw(0x0a, 0x10, 'c'), false},
		{"varint of 11 bytes", wireOf{}.raw(0x10, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01), false},
		{"field number 0", base.raw(0x00, 0x01), false},
		{"field number above the maximum", protowire.AppendVarint(protowire.AppendTag(base.raw(), protowire.MaxValidNumber+1, protowire.VarintType), 1), false},
		{"end group at the top", base.raw(0x0c), false},
		{"group not closed", base.raw(0xdb, 0x3e, 0x08, 0x01), false},
		{"wire type 6", base.raw(0x0e), false},
	}
}

// TestClusterWire runs the cases in order, then in reverse, through one
// scratch space, as the decoder reuses it.
func TestClusterWire(t *testing.T) {
	cases := clusterWireCases(t)
	var s clusterScratch
	for _, order := range []string{"forward", "reverse"} {
		for i := range cases {
			tc := cases[i]
			if order == "reverse" {
				tc = cases[len(cases)-1-i]
			}
			t.Run(order+"/"+tc.name, func(t *testing.T) {
				if took := checkClusterWire(t, &s, tc.b); took != tc.took {
					t.Errorf("hand decoder took the input: %v, want %v", took, tc.took)
				}
			})
		}
	}
}

// TestClusterWireDepth checks the recursion limit at its edge: a config
// source (eds_config, lrs_server) holding a message nested as deeply as
// the runtime allows, which the hand decoder must take, and one level
// more, which it must not.
func TestClusterWireDepth(t *testing.T) {
	for _, where := range []string{"eds_config", "lrs_server"} {
		build := func(levels int) []byte {
			// Each list adds two levels (ListValue, Value); an empty
			// struct in place of null, one.
			v := structpb.NewNullValue()
			if levels%2 == 1 {
				v = structpb.NewStructValue(&structpb.Struct{})
			}
			for range levels / 2 {
				v = structpb.NewListValue(&structpb.ListValue{Values: []*structpb.Value{v}})
			}
			src := &corev3.ConfigSource{ConfigSourceSpecifier: &corev3.ConfigSource_ApiConfigSource{ApiConfigSource: &corev3.ApiConfigSource{
				GrpcServices: []*corev3.GrpcService{{TargetSpecifier: &corev3.GrpcService_GoogleGrpc_{GoogleGrpc: &corev3.GrpcService_GoogleGrpc{
					Config: &structpb.Struct{Fields: map[string]*structpb.Value{"k": v}},
				}}}},
			}}}
			m := edsCluster()
			if where == "eds_config" {
				m.EdsClusterConfig.EdsConfig = src
			} else {
				m.LrsServer = src
			}
			return mustMarshal(t, m)
		}
		// Find the deepest nesting that the runtime decodes: within 64
		// levels under its recursion limit, as the messages around the
		// value take fewer than 64. Searching from 0 took twice as many
		// decodes of about 10,000 levels.
		lo, hi := protowire.DefaultRecursionLimit-64, protowire.DefaultRecursionLimit
		if proto.Unmarshal(build(lo), new(clusterv3.Cluster)) != nil || proto.Unmarshal(build(hi), new(clusterv3.Cluster)) == nil {
			t.Fatalf("%s: the runtime's deepest nesting is not within [%d, %d)", where, lo, hi)
		}
		for lo < hi {
			mid := (lo + hi + 1) / 2
			if proto.Unmarshal(build(mid), new(clusterv3.Cluster)) == nil {
				lo = mid
			} else {
				hi = mid - 1
			}
		}
		var s clusterScratch
		if !checkClusterWire(t, &s, build(lo)) {
			t.Errorf("%s: hand decoder gave up at %d levels, which the runtime decodes", where, lo)
		}
		checkClusterWire(t, &s, build(lo+1))
	}
}

// TestClusterScratchNotKept checks that a decoded Cluster keeps nothing of
// the scratch space, which the next resource reuses.
func TestClusterScratchNotKept(t *testing.T) {
	first := edsCluster()
	first.ConnectTimeout = durationpb.New(time.Second)
	first.OutlierDetection = &clusterv3.OutlierDetection{Interval: durationpb.New(time.Second)}
	_, v, err := decodeCluster(testOpts, mustMarshal(t, first))
	if err != nil {
		t.Fatal(err)
	}
	want := *v.(*Cluster)
	want.OutlierDetection = proto.Clone(want.OutlierDetection).(*clusterv3.OutlierDetection)
	for range 10 {
		second := controlplane.Cluster("other", "other-svc")
		second.OutlierDetection = &clusterv3.OutlierDetection{Interval: durationpb.New(time.Minute)}
		if _, _, err := decodeCluster(testOpts, mustMarshal(t, second)); err != nil {
			t.Fatal(err)
		}
	}
	if diff := cmp.Diff(&want, v, protocmp.Transform(), cmp.Exporter(func(reflect.Type) bool { return true })); diff != "" {
		t.Errorf("first Cluster changed by later decodes (-want +got):\n%s", diff)
	}
}

// TestClusterDecodeAllocs bounds what decoding the common shape of an EDS
// cluster allocates: the Cluster and its two strings (one when the
// service name is the cluster's name), with or without lrs_server self.
func TestClusterDecodeAllocs(t *testing.T) {
	for _, tc := range []struct {
		svc  string
		lrs  bool
		want float64
	}{{"c1", false, 2}, {"c1-eds", false, 3}, {"c1-eds", true, 3}} {
		m := controlplane.Cluster("c1", tc.svc)
		if tc.lrs {
			m.LrsServer = selfSource
		}
		b := mustMarshal(t, m)
		got := testing.AllocsPerRun(100, func() {
			if _, _, err := decodeCluster(testOpts, b); err != nil {
				t.Fatal(err)
			}
		})
		if got > tc.want {
			t.Errorf("service name %q, lrs_server %v: decoding allocates %v times, want at most %v", tc.svc, tc.lrs, got, tc.want)
		}
	}
}

// FuzzClusterWire checks the hand decoder against the runtime on any
// input (seeded with the cases above and resources of other types),
// decoded in a scratch space that held a cluster of every common
// field before.
func FuzzClusterWire(f *testing.F) {
	cases := clusterWireCases(f)
	for _, tc := range cases {
		f.Add(tc.b)
	}
	// The seeds of FuzzDecodeCluster's demo resources, of every type.
	for _, m := range controlplane.DemoResources("demo") {
		f.Add(mustMarshal(f, m))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var s clusterScratch
		checkClusterWire(t, &s, cases[2].b) // the EDS cluster with the fields of real clusters
		checkClusterWire(t, &s, b)
	})
}

// BenchmarkDecodeCluster decodes the EDS cluster of the performance
// benchmarks (internal/testing/perfbench) and one with the fields of real
// clusters, most of them left to the runtime.
func BenchmarkDecodeCluster(b *testing.B) {
	eds := controlplane.Cluster("c1", "c1")
	real := edsCluster()
	real.ConnectTimeout = durationpb.New(time.Second)
	real.LrsServer = selfSource
	real.CircuitBreakers = &clusterv3.CircuitBreakers{Thresholds: []*clusterv3.CircuitBreakers_Thresholds{
		{Priority: corev3.RoutingPriority_DEFAULT, MaxRequests: wrapperspb.UInt32(7)}}}
	real.OutlierDetection = &clusterv3.OutlierDetection{Interval: durationpb.New(time.Second)}
	real.Metadata = &corev3.Metadata{FilterMetadata: map[string]*structpb.Struct{"m": {Fields: map[string]*structpb.Value{"k": structpb.NewStringValue("v")}}}}
	for _, bc := range []struct {
		name string
		m    proto.Message
	}{{"perfbench", eds}, {"real", real}} {
		a := toAny(b, bc.m)
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, _, err := ClusterType.Decode(testOpts, a); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
