// Package lbpolicy decodes the load-balancing policy of a Cluster, as
// gRPC's xDS clients read it: load_balancing_policy when it is set (its
// first entry of a type gRPC supports, gRFC A52; custom policies in a
// TypedStruct), lb_policy and its config fields otherwise. The policies
// are round_robin, ring_hash (gRFC A42), least_request (A48),
// wrr_locality with an endpoint-picking child (A52), weighted_round_robin
// (A58), pick_first (A62) and the custom policies registered with gRPC in
// this program. Its rules are rows of the table in package xdsresource.
package lbpolicy

import (
	"encoding/json"
	"errors"
	"fmt"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	cswrrv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/load_balancing_policies/client_side_weighted_round_robin/v3"
	leastrequestv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/load_balancing_policies/least_request/v3"
	pickfirstv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/load_balancing_policies/pick_first/v3"
	ringhashv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/load_balancing_policies/ring_hash/v3"
	roundrobinv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/load_balancing_policies/round_robin/v3"
	wrrlocalityv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/load_balancing_policies/wrr_locality/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/xdslens/xdslens/xdsclient/xdsresource/internal/decoding"
)

// Names of the load balancing policies that Config.LBPolicy may hold,
// besides the names of custom policies.
const (
	RoundRobin         = "round_robin"
	RingHash           = "ring_hash"
	LeastRequest       = "least_request"
	WRRLocality        = "wrr_locality"
	WeightedRoundRobin = "weighted_round_robin"
	PickFirst          = "pick_first"
)

// Defaults and limits that gRPC applies to the policies' configs.
const (
	DefaultRingHashMinSize         = 1024
	DefaultRingHashMaxSize         = 8 * 1024 * 1024
	MaxRingHashSize                = 8 * 1024 * 1024
	DefaultLeastRequestChoiceCount = 2
)

// Config is a Cluster's validated load-balancing policy.
type Config struct {
	// LBPolicy is the load balancing policy, one of the names above or
	// the name of a custom policy.
	LBPolicy string
	// LBChildPolicy is the endpoint-picking policy when LBPolicy is
	// wrr_locality.
	LBChildPolicy string
	// RingHash is set when ring_hash is the policy or wrr_locality's child.
	RingHash *RingHashConfig
	// LeastRequestChoiceCount is set (at least 2) when least_request is the
	// policy or wrr_locality's child.
	LeastRequestChoiceCount uint32
	// PickFirstShuffle is pick_first's shuffle_address_list (gRFC A62),
	// when pick_first is the policy or wrr_locality's child.
	PickFirstShuffle bool
	// WeightedRoundRobin is set when weighted_round_robin is the policy or
	// wrr_locality's child.
	WeightedRoundRobin *WeightedRoundRobinConfig
	// CustomLBConfig is the JSON config of a custom policy (gRFC A52), set
	// when LBPolicy or LBChildPolicy names a balancer registered with gRPC
	// in this program rather than one of the policies above.
	CustomLBConfig json.RawMessage
}

// FromCluster returns the policy of m: from load_balancing_policy (its
// first supported entry) when that is set, else from lb_policy. Errors
// start with the field path inside the Cluster.
func FromCluster(m *clusterv3.Cluster) (Config, error) {
	var c Config
	if p := m.GetLoadBalancingPolicy(); p != nil {
		name, err := fromPolicy(p, &c, 0)
		if err != nil {
			return Config{}, fmt.Errorf("load_balancing_policy: %v", err)
		}
		c.LBPolicy = name
		return c, nil
	}
	if err := fromEnum(m, &c); err != nil {
		return Config{}, err
	}
	return c, nil
}

// Types of the load_balancing_policy entries that are understood: an
// entry's type is the part of its type URL after the last "/", whatever
// comes before, as in gRPC C-core.
var (
	roundRobinType   = typeOf(new(roundrobinv3.RoundRobin))
	ringHashType     = typeOf(new(ringhashv3.RingHash))
	leastRequestType = typeOf(new(leastrequestv3.LeastRequest))
	wrrLocalityType  = typeOf(new(wrrlocalityv3.WrrLocality))
	cswrrType        = typeOf(new(cswrrv3.ClientSideWeightedRoundRobin))
	pickFirstType    = typeOf(new(pickfirstv3.PickFirst))
)

func typeOf(m proto.Message) string { return string(m.ProtoReflect().Descriptor().FullName()) }

// maxLBPolicyDepth is how deeply load_balancing_policy may nest (gRFC A51).
const maxLBPolicyDepth = 16

var errLBTooDeep = fmt.Errorf("nested more than %d levels deep", maxLBPolicyDepth)

// RingHashConfig holds the ring sizes of a ring_hash policy:
// 1 <= MinRingSize <= MaxRingSize <= MaxRingHashSize.
type RingHashConfig struct {
	MinRingSize, MaxRingSize uint64
}

// fromEnum sets the policy from lb_policy and its config fields.
func fromEnum(m *clusterv3.Cluster, c *Config) error {
	switch m.GetLbPolicy() {
	case clusterv3.Cluster_ROUND_ROBIN:
		c.LBPolicy = RoundRobin
	case clusterv3.Cluster_RING_HASH:
		rh := m.GetRingHashLbConfig()
		if f := rh.GetHashFunction(); f != clusterv3.Cluster_RingHashLbConfig_XX_HASH {
			return fmt.Errorf("ring_hash_lb_config.hash_function %v is not supported, want XX_HASH", f)
		}
		cfg, err := ringSizes(rh.GetMinimumRingSize(), rh.GetMaximumRingSize())
		if err != nil {
			return fmt.Errorf("ring_hash_lb_config: %v", err)
		}
		c.LBPolicy, c.RingHash = RingHash, cfg
	case clusterv3.Cluster_LEAST_REQUEST:
		n, err := choiceCount(m.GetLeastRequestLbConfig().GetChoiceCount())
		if err != nil {
			return fmt.Errorf("least_request_lb_config: %v", err)
		}
		c.LBPolicy, c.LeastRequestChoiceCount = LeastRequest, n
	default:
		return fmt.Errorf("unsupported lb_policy %v", m.GetLbPolicy())
	}
	return nil
}

// fromPolicy returns the name of the first supported entry of p,
// checking its config. Entries of unknown types are skipped (gRFC A52).
func fromPolicy(p *clusterv3.LoadBalancingPolicy, c *Config, depth int) (string, error) {
	if depth >= maxLBPolicyDepth {
		return "", errLBTooDeep
	}
	for i, entry := range p.GetPolicies() {
		// As in gRPC C-core, an entry must name a type, even one that is
		// then skipped.
		ext := entry.GetTypedExtensionConfig()
		if ext == nil {
			return "", fmt.Errorf("policies[%d].typed_extension_config: not set", i)
		}
		cfg := ext.GetTypedConfig()
		if cfg == nil {
			return "", fmt.Errorf("policies[%d] %q: typed_config: not set", i, ext.GetName())
		}
		typ, err := decoding.ExtensionType(cfg.GetTypeUrl())
		if err != nil {
			return "", fmt.Errorf("policies[%d] %q: typed_config.%v", i, ext.GetName(), err)
		}
		switch typ {
		case roundRobinType:
			return RoundRobin, nil
		case pickFirstType:
			pf := new(pickfirstv3.PickFirst)
			if err = decoding.Unmarshal(cfg.GetValue(), pf); err == nil {
				c.PickFirstShuffle = pf.GetShuffleAddressList()
				return PickFirst, nil
			}
		case cswrrType:
			w := new(cswrrv3.ClientSideWeightedRoundRobin)
			if err = decoding.Unmarshal(cfg.GetValue(), w); err == nil {
				c.WeightedRoundRobin, err = validateWRR(w)
			}
			if err == nil {
				return WeightedRoundRobin, nil
			}
		case decoding.XDSTypedStruct, decoding.UDPATypedStruct:
			var typeURL string
			var value *structpb.Struct
			if typeURL, value, err = decoding.ReadTypedStruct(typ, cfg.GetValue()); err == nil {
				var name string
				var ok bool
				if name, c.CustomLBConfig, ok, err = customPolicy(typeURL, value); err == nil {
					if !ok {
						continue
					}
					return name, nil
				}
			}
		case ringHashType:
			rh := new(ringhashv3.RingHash)
			if err = decoding.Unmarshal(cfg.GetValue(), rh); err == nil {
				switch f := rh.GetHashFunction(); f {
				case ringhashv3.RingHash_DEFAULT_HASH, ringhashv3.RingHash_XX_HASH:
					c.RingHash, err = ringSizes(rh.GetMinimumRingSize(), rh.GetMaximumRingSize())
				default:
					err = fmt.Errorf("hash_function %v is not supported", f)
				}
			}
			if err == nil {
				return RingHash, nil
			}
		case leastRequestType:
			lr := new(leastrequestv3.LeastRequest)
			if err = decoding.Unmarshal(cfg.GetValue(), lr); err == nil {
				c.LeastRequestChoiceCount, err = choiceCount(lr.GetChoiceCount())
			}
			if err == nil {
				return LeastRequest, nil
			}
		case wrrLocalityType:
			wl := new(wrrlocalityv3.WrrLocality)
			if err = decoding.Unmarshal(cfg.GetValue(), wl); err == nil {
				var child string
				if child, err = fromPolicy(wl.GetEndpointPickingPolicy(), c, depth+1); err == nil {
					c.LBChildPolicy = child
					return WRRLocality, nil
				}
				if errors.Is(err, errLBTooDeep) {
					return "", err
				}
				err = fmt.Errorf("endpoint_picking_policy: %v", err)
			}
		default:
			continue
		}
		return "", fmt.Errorf("policies[%d] %q: %v", i, ext.GetName(), err)
	}
	return "", errors.New("no supported policy")
}

func ringSizes(minSize, maxSize *wrapperspb.UInt64Value) (*RingHashConfig, error) {
	cfg := &RingHashConfig{MinRingSize: DefaultRingHashMinSize, MaxRingSize: DefaultRingHashMaxSize}
	if minSize != nil {
		cfg.MinRingSize = minSize.GetValue()
	}
	if maxSize != nil {
		cfg.MaxRingSize = maxSize.GetValue()
	}
	switch {
	case cfg.MinRingSize < 1 || cfg.MinRingSize > MaxRingHashSize:
		return nil, fmt.Errorf("minimum_ring_size %d is not in [1, %d]", cfg.MinRingSize, MaxRingHashSize)
	case cfg.MaxRingSize < 1 || cfg.MaxRingSize > MaxRingHashSize:
		return nil, fmt.Errorf("maximum_ring_size %d is not in [1, %d]", cfg.MaxRingSize, MaxRingHashSize)
	case cfg.MinRingSize > cfg.MaxRingSize:
		return nil, fmt.Errorf("minimum_ring_size %d is greater than maximum_ring_size %d", cfg.MinRingSize, cfg.MaxRingSize)
	}
	return cfg, nil
}

func choiceCount(v *wrapperspb.UInt32Value) (uint32, error) {
	if v == nil {
		return DefaultLeastRequestChoiceCount, nil
	}
	if v.GetValue() < 2 {
		return 0, fmt.Errorf("choice_count is %d, must be at least 2", v.GetValue())
	}
	return v.GetValue(), nil
}
