package xdsresource

import (
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"testing"
	"time"

	"github.com/xdslens/xdslens/xdsclient/xdsresource/lbpolicy"

	udpatypev1 "github.com/cncf/xds/go/udpa/type/v1"
	xdstypev3 "github.com/cncf/xds/go/xds/type/v3"
	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	cswrrv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/load_balancing_policies/client_side_weighted_round_robin/v3"
	ringhashv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/load_balancing_policies/ring_hash/v3"
	roundrobinv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/load_balancing_policies/round_robin/v3"
	wrrlocalityv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/load_balancing_policies/wrr_locality/v3"
	"google.golang.org/grpc/balancer"
	"google.golang.org/grpc/serviceconfig"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// testLBName is a custom policy registered with gRPC by this test binary.
// Its config parser rejects configs with "bad": true.
const testLBName = "xdslens_test_lb"

type testLBBuilder struct{}

func (testLBBuilder) Build(balancer.ClientConn, balancer.BuildOptions) balancer.Balancer { return nil }
func (testLBBuilder) Name() string                                                       { return testLBName }
func (testLBBuilder) ParseConfig(js json.RawMessage) (serviceconfig.LoadBalancingConfig, error) {
	var cfg struct{ Bad bool }
	if err := json.Unmarshal(js, &cfg); err != nil {
		return nil, err
	}
	if cfg.Bad {
		return nil, errors.New("bad config")
	}
	return nil, nil
}

func init() { balancer.Register(testLBBuilder{}) }

func mustStruct(t testing.TB, m map[string]any) *structpb.Struct {
	s, err := structpb.NewStruct(m)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestClusterCustomLBPolicy(t *testing.T) {
	cfg := map[string]any{"size": 3.0}
	tests := []struct {
		name      string
		policy    func(t *testing.T) proto.Message
		want      string
		wantChild string
	}{
		{"xds TypedStruct", func(t *testing.T) proto.Message {
			return &xdstypev3.TypedStruct{TypeUrl: "type.googleapis.com/" + testLBName, Value: mustStruct(t, cfg)}
		}, testLBName, ""},
		{"udpa TypedStruct", func(t *testing.T) proto.Message {
			return &udpatypev1.TypedStruct{TypeUrl: "example.com/a/b/" + testLBName, Value: mustStruct(t, cfg)}
		}, testLBName, ""},
		{"wrr_locality child", func(t *testing.T) proto.Message {
			return &wrrlocalityv3.WrrLocality{EndpointPickingPolicy: lbPolicy(t,
				&xdstypev3.TypedStruct{TypeUrl: "type.googleapis.com/" + testLBName, Value: mustStruct(t, cfg)})}
		}, lbpolicy.WRRLocality, testLBName},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := withPolicyMsg(edsCluster(), lbPolicy(t, tt.policy(t), &roundrobinv3.RoundRobin{}))
			_, v, err := decode(t, ClusterType, m)
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			c := v.(*Cluster)
			if c.LBPolicy != tt.want || c.LBChildPolicy != tt.wantChild || string(c.CustomLBConfig) != `{"size":3}` {
				t.Errorf("LBPolicy = %q (%q), CustomLBConfig = %s; want %q (%q), {\"size\":3}", c.LBPolicy, c.LBChildPolicy, c.CustomLBConfig, tt.want, tt.wantChild)
			}
		})
	}
}

// A TypedStruct naming a policy that is not registered is skipped.
func TestClusterUnregisteredCustomLBPolicy(t *testing.T) {
	m := withPolicyMsg(edsCluster(), lbPolicy(t, &xdstypev3.TypedStruct{TypeUrl: "type.googleapis.com/no_such_lb"}, &roundrobinv3.RoundRobin{}))
	_, v, err := decode(t, ClusterType, m)
	if err != nil {
		t.Fatalf("Decode: %v", err)
	}
	if c := v.(*Cluster); c.LBPolicy != lbpolicy.RoundRobin || c.CustomLBConfig != nil {
		t.Errorf("LBPolicy = %q, CustomLBConfig = %s; want round_robin and none", c.LBPolicy, c.CustomLBConfig)
	}
}

func TestClusterWeightedRoundRobin(t *testing.T) {
	tests := []struct {
		name string
		m    *cswrrv3.ClientSideWeightedRoundRobin
		want lbpolicy.WeightedRoundRobinConfig
	}{
		{"defaults", &cswrrv3.ClientSideWeightedRoundRobin{}, lbpolicy.WeightedRoundRobinConfig{
			BlackoutPeriod: 10 * time.Second, WeightExpirationPeriod: 3 * time.Minute, WeightUpdatePeriod: time.Second, ErrorUtilizationPenalty: 1,
		}},
		{"all set", &cswrrv3.ClientSideWeightedRoundRobin{
			EnableOobLoadReport:     wrapperspb.Bool(true),
			OobReportingPeriod:      durationpb.New(5 * time.Second),
			BlackoutPeriod:          durationpb.New(0),
			WeightExpirationPeriod:  durationpb.New(time.Minute),
			WeightUpdatePeriod:      durationpb.New(10 * time.Millisecond),
			ErrorUtilizationPenalty: wrapperspb.Float(0.5),
		}, lbpolicy.WeightedRoundRobinConfig{
			EnableOOBLoadReport: true, OOBReportingPeriod: 5 * time.Second, WeightExpirationPeriod: time.Minute,
			WeightUpdatePeriod: 100 * time.Millisecond, ErrorUtilizationPenalty: 0.5,
		}},
		{"OOB period without OOB reports", &cswrrv3.ClientSideWeightedRoundRobin{OobReportingPeriod: durationpb.New(5 * time.Second)}, lbpolicy.WeightedRoundRobinConfig{
			BlackoutPeriod: 10 * time.Second, WeightExpirationPeriod: 3 * time.Minute, WeightUpdatePeriod: time.Second, ErrorUtilizationPenalty: 1,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, v, err := decode(t, ClusterType, withPolicyMsg(edsCluster(), lbPolicy(t, tt.m)))
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			c := v.(*Cluster)
			if c.LBPolicy != lbpolicy.WeightedRoundRobin || c.WeightedRoundRobin == nil || !reflect.DeepEqual(*c.WeightedRoundRobin, tt.want) {
				t.Errorf("LBPolicy = %q, WeightedRoundRobin = %+v, want %+v", c.LBPolicy, c.WeightedRoundRobin, tt.want)
			}
		})
	}
}

func TestClusterLBPolicyErrors(t *testing.T) {
	with := func(cfgs ...proto.Message) func() proto.Message {
		return func() proto.Message { return withPolicyMsg(edsCluster(), lbPolicy(t, cfgs...)) }
	}
	runErrorCases(t, ClusterType, "c1", []errorCase{
		{name: "negative error_utilization_penalty",
			build: with(&cswrrv3.ClientSideWeightedRoundRobin{ErrorUtilizationPenalty: wrapperspb.Float(-1)}, &roundrobinv3.RoundRobin{}),
			want:  `cds "c1": load_balancing_policy: policies[0] "p": error_utilization_penalty is -1, must not be negative`},
		{name: "custom config rejected by its parser",
			build: with(&xdstypev3.TypedStruct{TypeUrl: "type.googleapis.com/" + testLBName, Value: mustStruct(t, map[string]any{"bad": true})}),
			want:  `cds "c1": load_balancing_policy: policies[0] "p": custom policy "xdslens_test_lb": bad config`},
		{name: "only unregistered custom policies",
			build: with(&udpatypev1.TypedStruct{TypeUrl: "type.googleapis.com/no_such_lb"}),
			want:  `cds "c1": load_balancing_policy: no supported policy`},
		{name: "entry without typed_extension_config",
			build: func() proto.Message {
				m := withPolicyMsg(edsCluster(), lbPolicy(t, &roundrobinv3.RoundRobin{}))
				m.LoadBalancingPolicy.Policies = append([]*clusterv3.LoadBalancingPolicy_Policy{{}}, m.LoadBalancingPolicy.Policies...)
				return m
			},
			want: `cds "c1": load_balancing_policy: policies[0].typed_extension_config: not set`},
		{name: "entry without typed_config",
			build: withURL(t, "", func(p *corev3.TypedExtensionConfig) { p.TypedConfig = nil }),
			want:  `cds "c1": load_balancing_policy: policies[0] "p": typed_config: not set`},
		{name: "entry with an empty type_url, before a supported one",
			build: withURL(t, "", nil),
			want:  `cds "c1": load_balancing_policy: policies[0] "p": typed_config.type_url: not set`},
		{name: "entry whose type_url has no slash",
			build: withURL(t, "envoy.extensions.load_balancing_policies.round_robin.v3.RoundRobin", nil),
			want:  `cds "c1": load_balancing_policy: policies[0] "p": typed_config.type_url: "envoy.extensions.load_balancing_policies.round_robin.v3.RoundRobin" names no type (want PREFIX/TYPE)`},
		{name: "TypedStruct with an empty type_url",
			build: with(&xdstypev3.TypedStruct{}, &roundrobinv3.RoundRobin{}),
			want:  `cds "c1": load_balancing_policy: policies[0] "p": TypedStruct type_url: not set`},
		{name: "TypedStruct whose type_url ends in a slash",
			build: with(&udpatypev1.TypedStruct{TypeUrl: "example.com/"}, &roundrobinv3.RoundRobin{}),
			want:  `cds "c1": load_balancing_policy: policies[0] "p": TypedStruct type_url: "example.com/" names no type (want PREFIX/TYPE)`},
		{name: "unregistered custom policy whose struct has no JSON form",
			build: with(&xdstypev3.TypedStruct{TypeUrl: "x/no_such_lb", Value: &structpb.Struct{Fields: map[string]*structpb.Value{
				"n": structpb.NewNumberValue(math.Inf(1)),
			}}}, &roundrobinv3.RoundRobin{}),
			want: `cds "c1": load_balancing_policy: policies[0] "p": TypedStruct value["n"]: number +Inf has no JSON form`},
		{name: "unregistered custom child",
			build: with(&wrrlocalityv3.WrrLocality{EndpointPickingPolicy: lbPolicy(t, &xdstypev3.TypedStruct{TypeUrl: "x/no_such_lb"})}),
			want:  `cds "c1": load_balancing_policy: policies[0] "p": endpoint_picking_policy: no supported policy`},
	})
}

// withURL returns a cluster whose load_balancing_policy is a round_robin
// entry whose type URL is set to url and then edited, followed by a
// round_robin entry as it should be.
func withURL(t *testing.T, url string, edit func(*corev3.TypedExtensionConfig)) func() proto.Message {
	return func() proto.Message {
		m := withPolicyMsg(edsCluster(), lbPolicy(t, &roundrobinv3.RoundRobin{}, &roundrobinv3.RoundRobin{}))
		p := m.LoadBalancingPolicy.Policies[0].TypedExtensionConfig
		p.TypedConfig.TypeUrl = url
		if edit != nil {
			edit(p)
		}
		return m
	}
}

// As in gRPC C-core, a load_balancing_policy entry's type is the part of
// its type URL after the last "/", whatever comes before, for the
// policies gRPC knows, for TypedStruct and for the custom policy a
// TypedStruct names.
func TestClusterLBPolicyTypeURLPrefix(t *testing.T) {
	cfg := map[string]any{"shard": "a"}
	m := withPolicyMsg(edsCluster(), lbPolicy(t,
		&wrrlocalityv3.WrrLocality{EndpointPickingPolicy: lbPolicy(t, &ringhashv3.RingHash{MinimumRingSize: wrapperspb.UInt64(8)})}))
	m.LoadBalancingPolicy.Policies[0].TypedExtensionConfig.TypedConfig.TypeUrl = "example.com/envoy.extensions.load_balancing_policies.wrr_locality.v3.WrrLocality"
	_, v, err := decode(t, ClusterType, m)
	if err != nil {
		t.Fatalf("Decode: %v", err)
	}
	if c := v.(*Cluster); c.LBPolicy != lbpolicy.WRRLocality || c.LBChildPolicy != lbpolicy.RingHash || c.RingHash == nil || c.RingHash.MinRingSize != 8 {
		t.Errorf("policy %q(%q), ring %+v; want wrr_locality(ring_hash) with a minimum ring of 8", c.LBPolicy, c.LBChildPolicy, c.RingHash)
	}

	m = withPolicyMsg(edsCluster(), lbPolicy(t, &xdstypev3.TypedStruct{TypeUrl: "example.com/a/" + testLBName, Value: mustStruct(t, cfg)}))
	m.LoadBalancingPolicy.Policies[0].TypedExtensionConfig.TypedConfig.TypeUrl = "example.com/xds.type.v3.TypedStruct"
	if _, v, err = decode(t, ClusterType, m); err != nil {
		t.Fatalf("Decode: %v", err)
	}
	c := v.(*Cluster)
	var got map[string]any
	if err := json.Unmarshal(c.CustomLBConfig, &got); err != nil || c.LBPolicy != testLBName || !reflect.DeepEqual(got, cfg) {
		t.Errorf("policy %q with %s; want %s with %v", c.LBPolicy, c.CustomLBConfig, testLBName, cfg)
	}
}
