package lbpolicy

import (
	"encoding/json"
	"fmt"
	"time"

	cswrrv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/load_balancing_policies/client_side_weighted_round_robin/v3"
	"google.golang.org/grpc/balancer"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/xdslens/xdslens/internal/xdsduration"
	"github.com/xdslens/xdslens/xdsclient/xdsresource/internal/decoding"
)

// WeightedRoundRobinConfig is a validated ClientSideWeightedRoundRobin
// policy (gRFC A58) with gRPC's defaults filled in.
type WeightedRoundRobinConfig struct {
	// EnableOOBLoadReport is enable_oob_load_report.
	EnableOOBLoadReport bool
	// OOBReportingPeriod is oob_reporting_period (default 10s); zero when
	// out-of-band reports are disabled.
	OOBReportingPeriod time.Duration
	// BlackoutPeriod is blackout_period (default 10s).
	BlackoutPeriod time.Duration
	// WeightExpirationPeriod is weight_expiration_period (default 3m).
	WeightExpirationPeriod time.Duration
	// WeightUpdatePeriod is weight_update_period (default 1s), at least
	// 100ms.
	WeightUpdatePeriod time.Duration
	// ErrorUtilizationPenalty is error_utilization_penalty (default 1),
	// never negative.
	ErrorUtilizationPenalty float64
}

// validateWRR applies gRPC's weighted_round_robin rules to m: a negative
// error_utilization_penalty is invalid, and so is a duration out of
// range or negative (package xdsduration, as gRPC C-core reads them).
func validateWRR(m *cswrrv3.ClientSideWeightedRoundRobin) (*WeightedRoundRobinConfig, error) {
	c := &WeightedRoundRobinConfig{
		EnableOOBLoadReport:     m.GetEnableOobLoadReport().GetValue(),
		OOBReportingPeriod:      10 * time.Second,
		BlackoutPeriod:          10 * time.Second,
		WeightExpirationPeriod:  3 * time.Minute,
		WeightUpdatePeriod:      time.Second,
		ErrorUtilizationPenalty: 1,
	}
	for _, d := range []struct {
		name string
		src  *durationpb.Duration
		dst  *time.Duration
	}{
		{"oob_reporting_period", m.GetOobReportingPeriod(), &c.OOBReportingPeriod},
		{"blackout_period", m.GetBlackoutPeriod(), &c.BlackoutPeriod},
		{"weight_expiration_period", m.GetWeightExpirationPeriod(), &c.WeightExpirationPeriod},
		{"weight_update_period", m.GetWeightUpdatePeriod(), &c.WeightUpdatePeriod},
	} {
		if d.src == nil {
			continue
		}
		v, err := xdsduration.Parse(d.src)
		if err != nil {
			return nil, fmt.Errorf("%s: %v", d.name, err)
		}
		*d.dst = v
	}
	if p := m.GetErrorUtilizationPenalty(); p != nil {
		if p.GetValue() < 0 {
			return nil, fmt.Errorf("error_utilization_penalty is %v, must not be negative", p.GetValue())
		}
		c.ErrorUtilizationPenalty = float64(p.GetValue())
	}
	if !c.EnableOOBLoadReport {
		c.OOBReportingPeriod = 0
	}
	c.WeightUpdatePeriod = max(c.WeightUpdatePeriod, 100*time.Millisecond)
	return c, nil
}

// customPolicy handles a load_balancing_policy entry wrapped in a
// TypedStruct (gRFC A52): the policy is named by the last path segment of
// the TypedStruct's type_url, and is used when a balancer of that name is
// registered with gRPC in this program, whose config parser then checks
// the TypedStruct's value as JSON. ok is false when no such balancer is
// registered, so that the entry is skipped.
func customPolicy(typeURL string, value *structpb.Struct) (name string, config json.RawMessage, ok bool, err error) {
	// As in gRPC C-core, the TypedStruct's type_url must name a type too.
	if name, err = decoding.ExtensionType(typeURL); err != nil {
		return "", nil, false, fmt.Errorf("TypedStruct %v", err)
	}
	// And its value must have a JSON form, even when it is then skipped.
	if err := decoding.CheckJSON(value); err != nil {
		return "", nil, false, fmt.Errorf("TypedStruct value%v", err)
	}
	b := balancer.Get(name)
	if b == nil {
		return "", nil, false, nil
	}
	if value == nil {
		value = &structpb.Struct{}
	}
	config, err = value.MarshalJSON()
	if err != nil {
		return "", nil, false, err
	}
	if p, isParser := b.(balancer.ConfigParser); isParser {
		if _, err := p.ParseConfig(config); err != nil {
			return "", nil, false, fmt.Errorf("custom policy %q: %v", name, err)
		}
	}
	return name, config, true, nil
}
