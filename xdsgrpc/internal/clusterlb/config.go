package clusterlb

import (
	"errors"
	"fmt"
	"time"

	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/serviceconfig"

	"github.com/xdslens/xdslens/internal/certstore"
	"github.com/xdslens/xdslens/xdsclient/lrs"
	"github.com/xdslens/xdslens/xdsclient/xdsconfig"
)

// Defaults of the Config's timers, those of gRPC C-core's priority policy.
const (
	// DefaultFailoverTimeout is how long a priority that has just been
	// started, or that went from READY to CONNECTING, may take to become
	// READY before the next priority is started.
	DefaultFailoverTimeout = 10 * time.Second
	// DefaultRetention is how long a lower priority stays connected after a
	// higher one became READY again, in case it is needed once more.
	DefaultRetention = 15 * time.Minute
)

// Config is what a Balancer balances: the leaf clusters of one route-level
// cluster, in priority order, and where it reports what it does. Give it
// to Balancer.UpdateClientConnState as the BalancerConfig; a new Config
// replaces the whole previous one. A Config and what it points to must not
// be modified once given.
type Config struct {
	serviceconfig.LoadBalancingConfig

	// Name is the route-level cluster's name: the leaf's own name for an
	// EDS or LOGICAL_DNS cluster, the aggregate cluster's for an aggregate
	// one. It appears in hooks and error messages.
	Name string
	// Leaves are the leaf clusters, highest priority first: the one
	// cluster of an EDS or LOGICAL_DNS cluster, or the slots of an
	// aggregate cluster's Leaves (gRFC A37). A slot whose Err is set takes
	// part as a priority that always fails with that error. At least one.
	Leaves []*xdsconfig.ClusterConfig
	// LoadReporter starts load reports for the leaves whose Cluster has
	// LRSServer set; nil reports no load. *xdsclient.Client is one.
	LoadReporter LoadReporter
	// Counters holds the in-flight request counters of circuit breaking;
	// every Balancer of the channels that use one xdsclient.Client should
	// share one, as gRPC shares them. Nil gives the Balancer counters of
	// its own.
	Counters *Counters
	// Hooks are called on every pick outcome; nil calls none.
	Hooks *Hooks
	// Certificates, when set, holds the bootstrap's certificate provider
	// instances, and says that the channel's transport credentials apply
	// the TLS settings of clusters (package xdscreds): the addresses of a
	// cluster with a transport_socket carry them (package handshake).
	// When nil, the RPCs of such a cluster fail: it is never reached in
	// plaintext.
	Certificates *certstore.Store
	// FailoverTimeout is how long a priority may take to become READY
	// before the next one is started; DefaultFailoverTimeout when zero.
	FailoverTimeout time.Duration
	// Retention is how long a lower priority that is no longer needed stays
	// connected; DefaultRetention when zero.
	Retention time.Duration
	// Rand returns a uniformly distributed number in [0, n); the drops
	// draw from it. Nil uses math/rand/v2. It is called concurrently.
	Rand func(n uint32) uint32
}

// validate checks what the Balancer cannot work without.
func (c *Config) validate() error {
	if len(c.Leaves) == 0 {
		return fmt.Errorf("clusterlb: cluster %q: no leaf clusters", c.Name)
	}
	seen := make(map[string]bool, len(c.Leaves))
	for i, l := range c.Leaves {
		switch {
		case l == nil:
			return fmt.Errorf("clusterlb: cluster %q: Leaves[%d] is nil", c.Name, i)
		case seen[l.Name]:
			return fmt.Errorf("clusterlb: cluster %q: leaf %q appears twice", c.Name, l.Name)
		case l.Err == nil && !l.IsLeaf():
			return fmt.Errorf("clusterlb: cluster %q: Leaves[%d] %q is not an EDS or LOGICAL_DNS cluster", c.Name, i, l.Name)
		}
		seen[l.Name] = true
	}
	if c.FailoverTimeout < 0 || c.Retention < 0 {
		return errors.New("clusterlb: negative FailoverTimeout or Retention")
	}
	return nil
}

// LoadReporter starts load reports to an LRS server, as
// xdsclient.Client.ReportLoad does: it returns where to record the load
// of cluster and its EDS service name, and a func that stops the reports.
type LoadReporter interface {
	ReportLoad(server, cluster, edsService string) (*lrs.ClusterLoad, func(), error)
}

// Hooks report the outcome of every pick, in the style of
// net/http/httptrace: each field is optional, and a nil field costs one
// comparison. Hooks are called on the goroutine of the RPC, synchronously:
// they must be cheap and must not block. Their Info structs are passed by
// value and allocate nothing.
type Hooks struct {
	// Dropped is called when an RPC is dropped by a drop_overloads
	// category of its leaf cluster's endpoints.
	Dropped func(DropInfo)
	// CircuitBroken is called when an RPC is refused because its leaf
	// cluster has max_requests RPCs in flight (gRFC A32).
	CircuitBroken func(CircuitBreakerInfo)
	// NoEndpoint is called when an RPC's pick fails because no endpoint of
	// the cluster can take it (every priority is failing). RPCs that wait
	// for a connection are not reported.
	NoEndpoint func(NoEndpointInfo)
	// CallStarted is called when a pick gives an RPC an endpoint. gRPC-Go
	// may find the connection no longer READY when it takes it, and pick
	// again: that pick never started a call, and CallFinished is not
	// called for it.
	CallStarted func(CallInfo)
	// CallFinished is called when an RPC that CallStarted reported ends,
	// with its error (nil for success); for an attempt held until the
	// interceptors know its status (attemptdone.go), when they settle it.
	CallFinished func(CallInfo, error)
	// LoadReportFailed is called, during a config update, when the load
	// reports of a leaf cluster could not be started; the leaf is used
	// without them.
	LoadReportFailed func(LoadReportErrorInfo)
	// Metric is called when an endpoint policy records a metric of gRPC's
	// registry (gRFC A78), such as weighted_round_robin's weights; on the
	// policy's goroutine, not an RPC's.
	Metric func(MetricInfo)
	// Ejection is called when outlier detection ejects an endpoint of a
	// leaf cluster, and when it returns it (gRFC A50); on the Balancer's
	// goroutine.
	Ejection func(EjectionInfo)
	// ConnectionChanged is called when a connection of a leaf's endpoint
	// policy changes state (what gRFC A78's pick_first metrics count:
	// CONNECTING to READY, CONNECTING to TRANSIENT_FAILURE, READY to
	// IDLE); on the Balancer's goroutine.
	ConnectionChanged func(ConnectionInfo)
}

// ConnectionInfo describes a connection's change of state.
type ConnectionInfo struct {
	Cluster, Leaf string
	Locality      lrs.Locality
	// Policy is the endpoint policy's name.
	Policy string
	// Address is the endpoint's address.
	Address  string
	From, To connectivity.State
}

// CallInfo names where an RPC went.
type CallInfo struct {
	// Cluster is the route-level cluster (Config.Name).
	Cluster string
	// Leaf is the leaf cluster whose endpoint took the RPC.
	Leaf string
	// Locality is the endpoint's locality.
	Locality lrs.Locality
	// Policy is the name of the leaf's endpoint policy, as gRPC registers
	// it.
	Policy string
}

// DropInfo describes an RPC dropped by a drop_overloads category.
type DropInfo struct {
	Cluster, Leaf string
	// Category is the drop_overloads category.
	Category string
}

// CircuitBreakerInfo describes an RPC refused by circuit breaking.
type CircuitBreakerInfo struct {
	Cluster, Leaf string
	// EDSService is the leaf's EDS service name, which with Leaf keys the
	// counter.
	EDSService string
	// MaxRequests is the leaf's max_requests.
	MaxRequests uint32
}

// NoEndpointInfo describes an RPC that found no endpoint.
type NoEndpointInfo struct {
	Cluster, Leaf string
	// Policy is the name of the leaf's endpoint policy ("" when the leaf
	// has none).
	Policy string
	// Err is the error the RPC fails with.
	Err error
}

// LoadReportErrorInfo describes load reports that could not be started.
type LoadReportErrorInfo struct {
	Cluster, Leaf string
	// Server is the LRS server.
	Server string
	Err    error
}
