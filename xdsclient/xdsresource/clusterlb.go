package xdsresource

import (
	"errors"
	"fmt"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	cswrrv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/load_balancing_policies/client_side_weighted_round_robin/v3"
	leastrequestv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/load_balancing_policies/least_request/v3"
	pickfirstv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/load_balancing_policies/pick_first/v3"
	ringhashv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/load_balancing_policies/ring_hash/v3"
	wrrlocalityv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/load_balancing_policies/wrr_locality/v3"
	"github.com/xdslens/xdslens/xdsclient/xdsresource/internal/decoding"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// RingHashConfig holds the ring sizes of a ring_hash policy:
// 1 <= MinRingSize <= MaxRingSize <= MaxRingHashSize.
type RingHashConfig struct {
	MinRingSize, MaxRingSize uint64
}

// lbFromEnum sets the policy from lb_policy and its config fields.
func lbFromEnum(m *clusterv3.Cluster, c *Cluster) error {
	switch m.GetLbPolicy() {
	case clusterv3.Cluster_ROUND_ROBIN:
		c.LBPolicy = LBRoundRobin
	case clusterv3.Cluster_RING_HASH:
		rh := m.GetRingHashLbConfig()
		if f := rh.GetHashFunction(); f != clusterv3.Cluster_RingHashLbConfig_XX_HASH {
			return fmt.Errorf("ring_hash_lb_config.hash_function %v is not supported, want XX_HASH", f)
		}
		cfg, err := ringSizes(rh.GetMinimumRingSize(), rh.GetMaximumRingSize())
		if err != nil {
			return fmt.Errorf("ring_hash_lb_config: %v", err)
		}
		c.LBPolicy, c.RingHash = LBRingHash, cfg
	case clusterv3.Cluster_LEAST_REQUEST:
		n, err := choiceCount(m.GetLeastRequestLbConfig().GetChoiceCount())
		if err != nil {
			return fmt.Errorf("least_request_lb_config: %v", err)
		}
		c.LBPolicy, c.LeastRequestChoiceCount = LBLeastRequest, n
	default:
		return fmt.Errorf("unsupported lb_policy %v", m.GetLbPolicy())
	}
	return nil
}

// lbFromPolicy returns the name of the first supported entry of p,
// checking its config. Entries of unknown types are skipped (gRFC A52).
func lbFromPolicy(p *clusterv3.LoadBalancingPolicy, c *Cluster, depth int) (string, error) {
	if depth >= maxLBPolicyDepth {
		return "", errLBTooDeep
	}
	for i, entry := range p.GetPolicies() {
		cfg := entry.GetTypedExtensionConfig().GetTypedConfig()
		var err error
		switch cfg.GetTypeUrl() {
		case roundRobinURL:
			return LBRoundRobin, nil
		case pickFirstURL:
			pf := new(pickfirstv3.PickFirst)
			if err = decoding.Unmarshal(cfg.GetValue(), pf); err == nil {
				c.PickFirstShuffle = pf.GetShuffleAddressList()
				return LBPickFirst, nil
			}
		case cswrrURL:
			w := new(cswrrv3.ClientSideWeightedRoundRobin)
			if err = decoding.Unmarshal(cfg.GetValue(), w); err == nil {
				c.WeightedRoundRobin, err = validateWRR(w)
			}
			if err == nil {
				return LBWeightedRoundRobin, nil
			}
		case decoding.XDSTypedStructURL, decoding.UDPATypedStructURL:
			var typeURL string
			var value *structpb.Struct
			if typeURL, value, err = typedStructPolicy(cfg.GetTypeUrl(), cfg.GetValue()); err == nil {
				var name string
				var ok bool
				if name, c.CustomLBConfig, ok, err = customPolicy(typeURL, value); err == nil {
					if !ok {
						continue
					}
					return name, nil
				}
			}
		case ringHashURL:
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
				return LBRingHash, nil
			}
		case leastRequestURL:
			lr := new(leastrequestv3.LeastRequest)
			if err = decoding.Unmarshal(cfg.GetValue(), lr); err == nil {
				c.LeastRequestChoiceCount, err = choiceCount(lr.GetChoiceCount())
			}
			if err == nil {
				return LBLeastRequest, nil
			}
		case wrrLocalityURL:
			wl := new(wrrlocalityv3.WrrLocality)
			if err = decoding.Unmarshal(cfg.GetValue(), wl); err == nil {
				var child string
				if child, err = lbFromPolicy(wl.GetEndpointPickingPolicy(), c, depth+1); err == nil {
					c.LBChildPolicy = child
					return LBWRRLocality, nil
				}
				if errors.Is(err, errLBTooDeep) {
					return "", err
				}
				err = fmt.Errorf("endpoint_picking_policy: %v", err)
			}
		default:
			continue
		}
		return "", fmt.Errorf("policies[%d] %q: %v", i, entry.GetTypedExtensionConfig().GetName(), err)
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
