package clusterlb

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/xdslens/xdslens/xdsclient/xdsresource/lbpolicy"

	"google.golang.org/grpc/balancer"
	// The endpoint policies a Cluster may name, registered with gRPC
	// (round_robin and pick_first are registered by gRPC itself).
	_ "google.golang.org/grpc/balancer/leastrequest"
	_ "google.golang.org/grpc/balancer/weightedroundrobin"
	"google.golang.org/grpc/serviceconfig"

	"github.com/xdslens/xdslens/xdsclient/xdsresource"
	"github.com/xdslens/xdslens/xdsgrpc/internal/ringhash"
)

// gRPC's names of the endpoint policies, as registered with gRPC (ring_hash
// and wrr_locality are xdslens's own, under gRPC's names).
const (
	nameRoundRobin         = "round_robin"
	namePickFirst          = "pick_first"
	nameLeastRequest       = "least_request_experimental"
	nameWeightedRoundRobin = "weighted_round_robin"
	nameWRRLocality        = "xds_wrr_locality_experimental"
)

// endpointPolicy is the policy that picks the endpoints of a leaf
// cluster's priority: a builder and its parsed config.
type endpointPolicy struct {
	// name is the policy's gRPC name, as hooks and xdswatch show it; for
	// wrr_locality, the name of its child (what picks endpoints).
	name    string
	builder balancer.Builder
	config  serviceconfig.LoadBalancingConfig
	// key identifies the builder and config, to tell whether an update
	// changes the policy.
	key string
}

// configParser is implemented by builders that parse JSON configs.
type configParser interface {
	ParseConfig(json.RawMessage) (serviceconfig.LoadBalancingConfig, error)
}

// policyOf converts the load-balancing policy of c into the endpoint
// policy of its priorities, as gRPC's xDS channels do (gRFC A52): a
// round_robin (or the legacy ROUND_ROBIN) is round_robin under
// wrr_locality, which picks a locality by weight first; wrr_locality's
// child is whichever policy it names; ring_hash, least_request,
// pick_first and weighted_round_robin on their own pick among every
// endpoint of the priority; a custom policy (a TypedStruct naming a
// balancer registered with gRPC) gets the struct as its JSON config.
func policyOf(c *xdsresource.Cluster) (*endpointPolicy, error) {
	if c.LBPolicy == "" || c.LBPolicy == lbpolicy.RoundRobin {
		// ROUND_ROBIN is the default of lb_policy.
		child, err := leafPolicy(c, lbpolicy.RoundRobin)
		if err != nil {
			return nil, err
		}
		return overLocalities(child), nil
	}
	if c.LBPolicy == lbpolicy.WRRLocality {
		child, err := leafPolicy(c, c.LBChildPolicy)
		if err != nil {
			return nil, fmt.Errorf("wrr_locality's child: %w", err)
		}
		return overLocalities(child), nil
	}
	return leafPolicy(c, c.LBPolicy)
}

// overLocalities is wrr_locality over child.
func overLocalities(child *endpointPolicy) *endpointPolicy {
	return &endpointPolicy{
		name:    child.name,
		builder: wrrLocalityBuilder{},
		config:  &wrrLocalityConfig{child: child},
		key:     nameWRRLocality + "(" + child.key + ")",
	}
}

// leafPolicy is the endpoint policy named name (one of package lbpolicy's or
// a custom policy's), with its config from c.
func leafPolicy(c *xdsresource.Cluster, name string) (*endpointPolicy, error) {
	var grpcName string
	var js any
	switch name {
	case lbpolicy.RoundRobin:
		grpcName, js = nameRoundRobin, struct{}{}
	case lbpolicy.PickFirst:
		grpcName, js = namePickFirst, map[string]bool{"shuffleAddressList": c.PickFirstShuffle}
	case lbpolicy.LeastRequest:
		grpcName, js = nameLeastRequest, map[string]uint32{"choiceCount": c.LeastRequestChoiceCount}
	case lbpolicy.RingHash:
		rh := c.RingHash
		if rh == nil {
			rh = &lbpolicy.RingHashConfig{MinRingSize: lbpolicy.DefaultRingHashMinSize, MaxRingSize: lbpolicy.DefaultRingHashMaxSize}
		}
		cfg := ringhash.NewConfig(rh.MinRingSize, rh.MaxRingSize)
		js, _ := json.Marshal(cfg)
		return &endpointPolicy{name: ringhash.Name, builder: ringhash.Builder{}, config: cfg, key: ringhash.Name + string(js)}, nil
	case lbpolicy.WeightedRoundRobin:
		grpcName, js = nameWeightedRoundRobin, wrrJSON(c.WeightedRoundRobin)
	default:
		grpcName = name
		js = c.CustomLBConfig
		if js == nil || len(c.CustomLBConfig) == 0 {
			js = struct{}{}
		}
	}
	b := balancer.Get(grpcName)
	if b == nil {
		return nil, fmt.Errorf("load-balancing policy %q is not registered with gRPC in this program", grpcName)
	}
	raw, err := json.Marshal(js)
	if err != nil {
		return nil, fmt.Errorf("load-balancing policy %q: config: %w", grpcName, err)
	}
	p := &endpointPolicy{name: grpcName, builder: b, key: grpcName + string(raw)}
	if parser, ok := b.(configParser); ok {
		if p.config, err = parser.ParseConfig(raw); err != nil {
			return nil, fmt.Errorf("load-balancing policy %q: config %s: %w", grpcName, raw, err)
		}
	}
	return p, nil
}

// wrrJSON is weighted_round_robin's JSON config of c (gRFC A58).
func wrrJSON(c *lbpolicy.WeightedRoundRobinConfig) map[string]any {
	if c == nil {
		return map[string]any{}
	}
	dur := func(d time.Duration) string { return fmt.Sprintf("%.9fs", d.Seconds()) }
	return map[string]any{
		"enableOobLoadReport":     c.EnableOOBLoadReport,
		"oobReportingPeriod":      dur(c.OOBReportingPeriod),
		"blackoutPeriod":          dur(c.BlackoutPeriod),
		"weightExpirationPeriod":  dur(c.WeightExpirationPeriod),
		"weightUpdatePeriod":      dur(c.WeightUpdatePeriod),
		"errorUtilizationPenalty": c.ErrorUtilizationPenalty,
	}
}

// PolicyName returns the gRPC name of the policy that picks the endpoints
// of c, a leaf cluster, as gRPC registers it (for wrr_locality, the
// policy of each locality), or an error when the policy cannot be built.
func PolicyName(c *xdsresource.Cluster) (string, error) {
	p, err := policyOf(c)
	if err != nil {
		return "", err
	}
	return p.name, nil
}
