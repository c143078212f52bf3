package xdsgrpc

import (
	"sync"

	"github.com/xdslens/xdslens/xdsclient"
	"github.com/xdslens/xdslens/xdsgrpc/internal/clusterlb"
)

// clientCounters holds the circuit-breaking counters of each xDS client in
// use by a channel of any Builder: gRPC counts a cluster's in-flight RPCs
// across every channel of one xDS client (gRFC A32), and two Builders of
// one pool may give their channels the same client (WithPoolTarget). An
// entry lives while a channel uses its client.
var clientCounters = struct {
	sync.Mutex
	m map[*xdsclient.Client]*sharedCounters
}{m: map[*xdsclient.Client]*sharedCounters{}}

// sharedCounters are the circuit-breaking counters of the channels of one
// xDS client.
type sharedCounters struct {
	refs int // guarded by clientCounters
	c    *clusterlb.Counters
}

// acquireCounters returns the counters of client's channels.
func acquireCounters(client *xdsclient.Client) *sharedCounters {
	clientCounters.Lock()
	defer clientCounters.Unlock()
	c := clientCounters.m[client]
	if c == nil {
		c = &sharedCounters{c: clusterlb.NewCounters()}
		clientCounters.m[client] = c
	}
	c.refs++
	return c
}

// releaseCounters gives back what acquireCounters returned.
func releaseCounters(client *xdsclient.Client) {
	clientCounters.Lock()
	defer clientCounters.Unlock()
	c := clientCounters.m[client]
	if c.refs--; c.refs == 0 {
		delete(clientCounters.m, client)
	}
}

// InFlightInfo is one circuit-breaking counter: the RPCs in flight to a
// cluster (and EDS service name) from the channels of one xDS client, and
// the cluster's max_requests. Target is the client's (xdsclient.Client.
// Target, the pool key), which is the channels' own target unless the
// Builder has WithPoolTarget.
type InFlightInfo struct {
	Target, Cluster, EDSService string
	InFlight                    int64
	MaxRequests                 uint32
}

// InFlight returns the circuit-breaking counters of the xDS clients the
// Builder's channels use, for a gauge of in-flight RPCs against
// max_requests. Channels of other Builders that use the same clients share
// the counters, so they appear in their InFlight too.
func (b *Builder) InFlight() []InFlightInfo {
	b.mu.Lock()
	clients := make([]*xdsclient.Client, 0, len(b.clients))
	for c := range b.clients {
		clients = append(clients, c)
	}
	b.mu.Unlock()
	var out []InFlightInfo
	for _, client := range clients {
		clientCounters.Lock()
		sc := clientCounters.m[client]
		clientCounters.Unlock()
		if sc == nil {
			continue // its last channel has just closed
		}
		for ci := range sc.c.All() {
			out = append(out, InFlightInfo{Target: client.Target(), Cluster: ci.Cluster, EDSService: ci.EDSService, InFlight: ci.InFlight, MaxRequests: ci.MaxRequests})
		}
	}
	return out
}
