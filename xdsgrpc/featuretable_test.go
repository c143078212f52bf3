package xdsgrpc_test

import (
	"os"
	"strings"
	"testing"

	"github.com/xdslens/xdslens/xdsclient/xdsresource/lbpolicy"

	"github.com/xdslens/xdslens/xdsclient/xdsresource"
	"github.com/xdslens/xdslens/xdsgrpc"
)

// TestFeatureTableLBPolicies keeps the README's feature table in step with
// the code: every load-balancing policy the table says xdslens applies is
// one a Cluster can name and a channel builds, under the gRPC name the
// table gives.
func TestFeatureTableLBPolicies(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	var row string
	for _, line := range strings.Split(string(readme), "\n") {
		if strings.HasPrefix(line, "| load-balancing policies:") {
			row = line
		}
	}
	cells := strings.Split(row, "|")
	if len(cells) < 4 || !strings.HasPrefix(strings.TrimSpace(cells[3]), "yes") {
		t.Fatalf("the README's table has no load-balancing policies row saying yes for xdslens: %q", row)
	}
	for name, c := range map[string]xdsresource.Cluster{
		"round_robin":          {Config: lbpolicy.Config{LBPolicy: lbpolicy.RoundRobin}},
		"pick_first":           {Config: lbpolicy.Config{LBPolicy: lbpolicy.PickFirst}},
		"ring_hash":            {Config: lbpolicy.Config{LBPolicy: lbpolicy.RingHash}},
		"least_request":        {Config: lbpolicy.Config{LBPolicy: lbpolicy.LeastRequest, LeastRequestChoiceCount: 2}},
		"weighted_round_robin": {Config: lbpolicy.Config{LBPolicy: lbpolicy.WeightedRoundRobin, WeightedRoundRobin: &lbpolicy.WeightedRoundRobinConfig{}}},
		"wrr_locality":         {Config: lbpolicy.Config{LBPolicy: lbpolicy.WRRLocality, LBChildPolicy: lbpolicy.RoundRobin}},
	} {
		if !strings.Contains(cells[1], "`"+name+"`") {
			t.Errorf("the README's load-balancing row does not name %s", name)
		}
		if _, err := xdsgrpc.LBPolicyName(&c); err != nil {
			t.Errorf("%s: the table says it is applied, but LBPolicyName fails: %v", name, err)
		}
	}
}
