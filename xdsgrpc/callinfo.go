package xdsgrpc

import (
	"context"

	"github.com/xdslens/xdslens/xdsgrpc/internal/clusterlb"
)

// CallInfo is what the data plane decided for one RPC: the cluster its
// route chose, and the leaf cluster and locality of the endpoint it was
// sent to. The pickers fill it in during the RPC; read it once the RPC has
// returned. When an RPC is picked more than once (it waited for a
// connection, or was retried), the last pick wins.
//
//	var info xdsgrpc.CallInfo
//	err := conn.Invoke(xdsgrpc.WithCallInfo(ctx, &info), method, req, resp)
//	log.Printf("%s went to cluster %s", method, info.Cluster)
type CallInfo struct {
	// Cluster is the cluster the route chose (for an aggregate cluster,
	// the aggregate's name), "" when the RPC failed before one was chosen.
	Cluster string
	rec     clusterlb.Recorder
}

// Leaf returns the EDS or LOGICAL_DNS cluster the RPC was given to ("" when
// none was).
func (c *CallInfo) Leaf() string { return c.rec.Leaf }

// Locality returns the region, zone and sub-zone of the endpoint the RPC
// was sent to (all "" when it was not sent).
func (c *CallInfo) Locality() (region, zone, subZone string) {
	l := c.rec.Locality
	return l.Region, l.Zone, l.SubZone
}

type callInfoKey struct{}

// WithCallInfo returns a context for one RPC through an xdslens channel
// that has the data plane record its decisions in info.
func WithCallInfo(ctx context.Context, info *CallInfo) context.Context {
	return clusterlb.WithRecorder(context.WithValue(ctx, callInfoKey{}, info), &info.rec)
}

// callInfoFrom returns the CallInfo ctx carries, nil when none.
func callInfoFrom(ctx context.Context) *CallInfo {
	info, _ := ctx.Value(callInfoKey{}).(*CallInfo)
	return info
}
