package xdsgrpc

import (
	"github.com/xdslens/xdslens/xdsclient/xdsresource"
	"github.com/xdslens/xdslens/xdsgrpc/internal/clusterlb"
)

// LBPolicyName returns the name, as gRPC registers it, of the policy that
// picks the endpoints of the leaf cluster c on an xdslens channel:
// "round_robin", "pick_first", "ring_hash_experimental",
// "least_request_experimental", "weighted_round_robin" or a custom
// policy's name (for wrr_locality, the policy of each locality, which
// picks the endpoints), or an error saying why the policy cannot be used,
// which the cluster's RPCs fail with.
func LBPolicyName(c *xdsresource.Cluster) (string, error) {
	return clusterlb.PolicyName(c)
}
