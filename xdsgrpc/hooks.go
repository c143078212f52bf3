package xdsgrpc

import (
	"context"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"

	"github.com/xdslens/xdslens/internal/hookset"
	"github.com/xdslens/xdslens/xdsclient/xdsconfig"
)

// Hooks reports what the data plane does, in the style of the client's
// xdsclient.Hooks: each field is an optional func called when its event
// happens, and a nil field costs nothing.
//
// The hooks of a channel's life, configs, connections, load-balancing
// metrics and ejections (ChannelStarted, ConfigChanged, ConfigFailed,
// ConnectionChanged, LBMetric, Ejection, ChannelClosed) run one at a
// time, in the order of their events, on a goroutine of the channel's
// own, a little after the event (ConfigChanged once the channel has the
// new config): never inside gRPC's resolver or balancer, so that a hook
// that blocks holds back only the channel's later hooks, and a hook may
// close the channel. The hooks queued when the channel closes, and
// ChannelClosed after them, run before grpc.ClientConn.Close returns,
// unless a hook of the channel was running then (it may be the one that
// closes the channel): they run just after. The connections and
// ejections that closing ends are reported after ChannelClosed, on the
// goroutine that closes the channel's balancer.
// Picked and CallFinished run on the goroutine of the RPC, inside gRPC's
// pick or its attempt's end (or, for CallFinished, when the interceptors
// learn an attempt's status, see CallFinished): they must be cheap and
// must not block, and they are called for every RPC (Picked possibly more
// than once for one RPC: a pick that waits for a connection is retried).
type Hooks struct {
	// ChannelStarted is called when a channel's resolver starts, before
	// any of its configs; ChannelClosed when it closes, after them.
	ChannelStarted, ChannelClosed func(ChannelInfo)
	// ConfigChanged is called when a channel starts using a new config.
	ConfigChanged func(ConfigInfo)
	// ConfigFailed is called when the whole config of a channel failed:
	// its RPCs fail with the error until a new config comes.
	ConfigFailed func(ConfigErrorInfo)
	// Picked is called with the outcome of every pick that did not wait:
	// the RPC was sent to an endpoint, or it failed, and why. gRPC-Go may
	// find the connection of a PickSent no longer READY when it takes it,
	// and pick again: such a pick is not a call (CallFinished, load
	// reports and outlier detection leave it out, as gRPC C-core does),
	// but Picked has reported it.
	Picked func(PickInfo)
	// CallFinished is called when an RPC sent to an endpoint ends (an
	// attempt of it, when it is retried), with its status. gRPC-Go
	// (v1.85.0) ends some failed attempts without a status, as for
	// success (a Trailers-Only answer that closes the stream before the
	// request is written): on a channel with DialOptions' interceptors,
	// such an attempt is reported when they learn its status, on the
	// RPC's return or its retry; without them, it is reported as a
	// success.
	CallFinished func(CallEndInfo)
	// LBMetric is called when the endpoint policy of a cluster records
	// one of gRPC's load-balancing metrics (gRFC A78), such as
	// weighted_round_robin's grpc.lb.wrr.endpoint_weights.
	LBMetric func(LBMetricInfo)
	// ConnectionChanged is called when a connection of a cluster's
	// endpoint policy changes state.
	ConnectionChanged func(ConnectionInfo)
	// Ejection is called when outlier detection (gRFC A50) ejects an
	// endpoint of a cluster, and when it returns it.
	Ejection func(EjectionInfo)
	// Retried is called, on the RPC's goroutine, when an RPC is attempted
	// again under its route's retry_policy (gRFC A44).
	Retried func(RetryInfo)
	// FaultInjected is called, on the RPC's goroutine, when the fault
	// injection filter (gRFC A33) delays or aborts an RPC.
	FaultInjected func(FaultInfo)
}

// RetryInfo describes one retry of an RPC.
type RetryInfo struct {
	// Context is the RPC's context, with what its caller and the
	// interceptors outside xdslens's put in it (a span, for instance).
	Context                 context.Context
	Target, Cluster, Method string
	// Attempt is the number of the attempt about to be made (2 for the
	// first retry).
	Attempt int
	// Code is the status code of the attempt that failed.
	Code codes.Code
}

// FaultInfo describes a fault injected into an RPC.
type FaultInfo struct {
	// Context is the RPC's context, as in RetryInfo.
	Context                 context.Context
	Target, Cluster, Method string
	// Filter is the HTTP filter's instance name.
	Filter string
	// Action is "delay" or "abort"; Detail the delay, or the status code.
	Action, Detail string
}

// EjectionInfo describes an endpoint ejected by outlier detection, or
// returned.
type EjectionInfo struct {
	Target string
	// Cluster is the route-level cluster, Leaf the leaf cluster whose
	// endpoint it is.
	Cluster, Leaf string
	// Address is the endpoint's address.
	Address string
	// Ejected is true for an ejection, false for a return.
	Ejected bool
	// Algorithm is "success_rate" or "failure_percentage" for an
	// ejection, "" for a return.
	Algorithm string
	// Successes and Failures are the endpoint's RPCs in the interval that
	// decided an ejection; Threshold the success rate (0 to 1) under
	// which, or the failure percentage above which, an endpoint is
	// ejected.
	Successes, Failures int64
	Threshold           float64
	// Multiplier is the endpoint's ejection multiplier after the change.
	Multiplier int
	// EjectedEndpoints and Endpoints are, after the change, the leaf's
	// endpoints ejected and those under outlier detection.
	EjectedEndpoints, Endpoints int
}

// LBMetricInfo is one recording of a load-balancing metric of gRPC's
// registry by a cluster's endpoint policy.
type LBMetricInfo struct {
	Target string
	// Cluster is the route-level cluster, Leaf the leaf cluster whose
	// policy recorded.
	Cluster, Leaf string
	// Locality is the locality of the policy's endpoints, as gRPC's
	// grpc.lb.locality label has it ({region="r", zone="z",
	// sub_zone="s"}); "" for a policy over several localities.
	Locality string
	// Name is the metric's name, such as "grpc.lb.wrr.rr_fallback";
	// Unit its unit; Histogram says whether it is a histogram (else a
	// counter, and Value an increment).
	Name, Unit string
	Histogram  bool
	Value      float64
}

// ConnectionInfo describes a change of state of a connection of a
// cluster's endpoint policy: gRFC A78's pick_first metrics count
// CONNECTING to READY (a connection attempt that succeeded), CONNECTING to
// TRANSIENT_FAILURE (one that failed) and READY to anything else (a
// disconnection).
type ConnectionInfo struct {
	Target, Cluster, Leaf string
	// Locality is as in LBMetricInfo.
	Locality string
	// Policy is the endpoint policy's name, as gRPC registers it.
	Policy string
	// Address is the endpoint's address.
	Address  string
	From, To connectivity.State
}

// ChannelInfo names a channel: its target, and the Listener resource it
// watches.
type ChannelInfo struct {
	Target   string
	Listener string
}

// ConfigInfo describes a new config of a channel.
type ConfigInfo struct {
	// Target is the channel's target, such as "xdslens:///payments".
	Target string
	// Listener is the name of the Listener resource the channel watches.
	Listener string
	// Config is the new config; it must not be modified.
	Config *xdsconfig.Config
	// Changes says what differs from the config the channel had before
	// (everything, for the first one, or after an error).
	Changes xdsconfig.Changes
}

// ConfigErrorInfo describes the failure of a channel's whole config.
type ConfigErrorInfo struct {
	Target   string
	Listener string
	// Err is what the channel's RPCs fail with: an UNAVAILABLE status
	// naming the resource, the cause and the node ID.
	Err error
}

// PickOutcome says what became of one pick.
type PickOutcome uint8

// The outcomes of a pick.
const (
	// PickSent: the RPC was sent to an endpoint of the cluster.
	PickSent PickOutcome = iota + 1
	// PickNoRoute: no route of the virtual host matched the RPC.
	PickNoRoute
	// PickUnsupportedAction: the matching route's action cannot forward
	// RPCs (non_forwarding_action, redirect, direct_response, or a cluster
	// specifier plugin this data plane does not run), or the route asks
	// for a deadline, retries or HTTP filters on a channel dialled without
	// DialOptions' interceptors, which apply them.
	PickUnsupportedAction
	// PickClusterError: the route chose a cluster that cannot be used (its
	// Cluster resource failed); Err says why.
	PickClusterError
	// PickDropped: the cluster's drop_overloads dropped the RPC; Category
	// is the drop category.
	PickDropped
	// PickOverloaded: the cluster had max_requests RPCs in flight
	// (circuit breaking, gRFC A32).
	PickOverloaded
	// PickNoEndpoint: no endpoint of the cluster could take the RPC (all
	// failing, or none); Err carries the cluster's resolution note.
	PickNoEndpoint
	// PickConfigError: the channel's whole config failed (see
	// ConfigFailed).
	PickConfigError
)

var pickOutcomeNames = [...]string{
	PickSent:              "sent",
	PickNoRoute:           "no_route",
	PickUnsupportedAction: "unsupported_action",
	PickClusterError:      "cluster_error",
	PickDropped:           "dropped",
	PickOverloaded:        "overloaded",
	PickNoEndpoint:        "no_endpoint",
	PickConfigError:       "config_error",
}

// String returns the outcome as metrics label it: "sent", "no_route",
// "unsupported_action", "cluster_error", "dropped", "overloaded",
// "no_endpoint" or "config_error".
func (o PickOutcome) String() string {
	if int(o) < len(pickOutcomeNames) && pickOutcomeNames[o] != "" {
		return pickOutcomeNames[o]
	}
	return "unknown"
}

// PickInfo describes the outcome of one pick.
type PickInfo struct {
	Target string
	// Cluster is the cluster the route chose ("" when none was), for an
	// aggregate cluster the aggregate's name; Leaf the EDS or LOGICAL_DNS
	// cluster whose endpoint was picked, or that dropped the RPC ("" when
	// none).
	Cluster, Leaf string
	// Policy is the name of the leaf's endpoint policy, as gRPC registers
	// it ("round_robin", "ring_hash_experimental", ...), with PickSent and
	// PickNoEndpoint.
	Policy  string
	Outcome PickOutcome
	// Category is the drop category, with PickDropped.
	Category string
	// Err is the error the RPC fails with; nil with PickSent, and with
	// PickDropped and PickOverloaded, whose errors say no more than the
	// other fields.
	Err error
}

// CallEndInfo describes the end of an RPC that was sent to an endpoint.
type CallEndInfo struct {
	Target, Cluster, Leaf string
	// Err is how the RPC ended, nil when it succeeded.
	Err error
}

// compose returns hooks that call every non-nil one of hs, nil when there
// are none, so that each event costs one nil check (package hookset).
func compose(hs []*Hooks) *Hooks {
	var live []*Hooks
	for _, h := range hs {
		if h != nil {
			live = append(live, h)
		}
	}
	switch len(live) {
	case 0:
		return nil
	case 1:
		return live[0]
	}
	return &Hooks{
		ChannelStarted:    hookset.Join(live, func(h *Hooks) func(ChannelInfo) { return h.ChannelStarted }),
		ChannelClosed:     hookset.Join(live, func(h *Hooks) func(ChannelInfo) { return h.ChannelClosed }),
		ConfigChanged:     hookset.Join(live, func(h *Hooks) func(ConfigInfo) { return h.ConfigChanged }),
		ConfigFailed:      hookset.Join(live, func(h *Hooks) func(ConfigErrorInfo) { return h.ConfigFailed }),
		Picked:            hookset.Join(live, func(h *Hooks) func(PickInfo) { return h.Picked }),
		CallFinished:      hookset.Join(live, func(h *Hooks) func(CallEndInfo) { return h.CallFinished }),
		LBMetric:          hookset.Join(live, func(h *Hooks) func(LBMetricInfo) { return h.LBMetric }),
		ConnectionChanged: hookset.Join(live, func(h *Hooks) func(ConnectionInfo) { return h.ConnectionChanged }),
		Ejection:          hookset.Join(live, func(h *Hooks) func(EjectionInfo) { return h.Ejection }),
		Retried:           hookset.Join(live, func(h *Hooks) func(RetryInfo) { return h.Retried }),
		FaultInjected:     hookset.Join(live, func(h *Hooks) func(FaultInfo) { return h.FaultInjected }),
	}
}
