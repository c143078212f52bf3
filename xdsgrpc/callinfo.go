package xdsgrpc

import (
	"context"

	"github.com/xdslens/xdslens/xdsgrpc/internal/callctx"
)

// CallInfo is what the data plane decided for one RPC: the cluster its
// route chose, and the leaf cluster and locality of the endpoint it was
// sent to. The data plane fills it in during the RPC; read it once the RPC
// has returned. An RPC is routed once, so Cluster does not change however
// many times the RPC is picked; Leaf and Locality are those of its last
// pick.
//
//	var info xdsgrpc.CallInfo
//	err := conn.Invoke(xdsgrpc.WithCallInfo(ctx, &info), method, req, resp)
//	log.Printf("%s went to cluster %s", method, info.Cluster)
type CallInfo struct {
	// Cluster is the cluster the route chose (for an aggregate cluster,
	// the aggregate's name), "" when the RPC failed before one was chosen.
	Cluster string
	call    callctx.Call
}

// Leaf returns the EDS or LOGICAL_DNS cluster the RPC was given to ("" when
// none was).
func (c *CallInfo) Leaf() string { return c.call.Leaf }

// Locality returns the region, zone and sub-zone of the endpoint the RPC
// was sent to (all "" when it was not sent).
func (c *CallInfo) Locality() (region, zone, subZone string) {
	l := c.call.Locality
	return l.Region, l.Zone, l.SubZone
}

// Attempts returns the number of attempts the RPC made: 1, or more when
// its route's retry_policy retried it (0 when it was not sent).
func (c *CallInfo) Attempts() int { return c.call.Attempts }

// Fault returns the fault the fault injection filter put on the RPC:
// "delay", "abort", "delay+abort", or "" for none.
func (c *CallInfo) Fault() string { return c.call.Fault }

// WithCallInfo returns a context for one RPC through an xdslens channel
// that has the data plane record its decisions in info. Give each RPC a
// CallInfo of its own.
func WithCallInfo(ctx context.Context, info *CallInfo) context.Context {
	info.call = callctx.Call{ClusterOut: &info.Cluster}
	return callctx.With(ctx, &info.call)
}
