package clusterlb

import (
	"cmp"
	"iter"
	"slices"
	"sync"
	"sync/atomic"
)

// Counters holds the in-flight request counters of circuit breaking
// (gRFC A32), one per cluster and EDS service name, shared by every
// Balancer given the same Counters: an RPC counts against max_requests
// whichever channel sends it, as in gRPC, where the counters are shared by
// all the channels of a process. A counter exists while a Balancer uses
// its cluster. Counters is safe for concurrent use; the zero value is not:
// use NewCounters.
type Counters struct {
	mu sync.Mutex
	m  map[counterKey]*counter // guarded by mu
}

type counterKey struct{ cluster, service string }

// NewCounters returns an empty Counters.
func NewCounters() *Counters {
	return &Counters{m: map[counterKey]*counter{}}
}

// counter counts the RPCs in flight to one cluster and EDS service name.
type counter struct {
	key      counterKey
	inFlight atomic.Int64
	max      atomic.Uint32
	refs     int // guarded by Counters.mu
}

// CounterInfo is what a counter holds at one moment.
type CounterInfo struct {
	// Cluster and EDSService key the counter.
	Cluster, EDSService string
	// InFlight is the number of RPCs in flight.
	InFlight int64
	// MaxRequests is the max_requests of the cluster, as the Balancer that
	// last updated it read it.
	MaxRequests uint32
}

// acquire returns the counter of cluster and service, made on first use,
// with max as its limit; release must be called when it is no longer used.
func (c *Counters) acquire(cluster, service string, max uint32) *counter {
	c.mu.Lock()
	defer c.mu.Unlock()
	k := counterKey{cluster, service}
	n := c.m[k]
	if n == nil {
		n = &counter{key: k}
		c.m[k] = n
	}
	n.refs++
	n.max.Store(max)
	return n
}

// release gives back a counter that acquire returned.
func (c *Counters) release(n *counter) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n.refs--
	if n.refs == 0 && c.m[n.key] == n {
		delete(c.m, n.key)
	}
}

// All yields every counter in use, by cluster and EDS service name, for a
// gauge of in-flight requests against max_requests.
func (c *Counters) All() iter.Seq[CounterInfo] {
	c.mu.Lock()
	infos := make([]CounterInfo, 0, len(c.m))
	for _, n := range c.m {
		infos = append(infos, n.info())
	}
	c.mu.Unlock()
	slices.SortFunc(infos, func(a, b CounterInfo) int {
		return cmp.Or(cmp.Compare(a.Cluster, b.Cluster), cmp.Compare(a.EDSService, b.EDSService))
	})
	return slices.Values(infos)
}

func (n *counter) info() CounterInfo {
	return CounterInfo{Cluster: n.key.cluster, EDSService: n.key.service, InFlight: n.inFlight.Load(), MaxRequests: n.max.Load()}
}

// start counts one more RPC in flight unless max are already; it reports
// whether it did.
func (n *counter) start(max uint32) bool {
	if n.inFlight.Add(1) > int64(max) {
		n.inFlight.Add(-1)
		return false
	}
	return true
}

// end counts one RPC fewer in flight.
func (n *counter) end() { n.inFlight.Add(-1) }
