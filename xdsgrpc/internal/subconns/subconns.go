// Package subconns shares a channel's connections among its load-balancing
// policies: one connection per endpoint address (and TLS settings),
// however many clusters name the address, as gRPC C-core's subchannel pool
// shares subchannels. gRPC-Go gives each policy connections of its own, so
// a channel whose 1,000 clusters name the same 2 addresses would otherwise
// open 2,000 connections.
//
// A Pool is the ClientConn of the policies, in front of the channel's:
// NewSubConn of one address returns a handle on a shared connection, made
// by the first policy that asks for the address and shut down with the
// last handle. Each handle gets the connection's states as a connection of
// its own would: the current state when it is made (if the connection has
// left IDLE), then every change; its health listener gets the
// connection's health once it is READY. What belongs to one policy stays
// with it: its listeners, its Shutdown (which closes only its handle, and
// tells it SHUTDOWN), and the connection's attributes as the first policy
// gave them (the channel's attributes of an address are the same for every
// cluster, but for the TLS settings, which are part of the key).
//
// Listeners are called on gRPC's goroutine for the connection's events,
// and on the caller's for the state a new handle starts with: the
// policies given to a Pool must not be called back synchronously from
// NewSubConn or RegisterHealthListener (they wrap their listeners to run
// on a serializer of their own, as package clusterlb does).
package subconns

import (
	"sync"

	"google.golang.org/grpc/balancer"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/resolver"

	"github.com/xdslens/xdslens/internal/handshake"
)

// Pool shares the SubConns of one channel.
type Pool struct {
	balancer.ClientConn

	mu     sync.Mutex
	shared map[string]*conn
}

// New returns a Pool in front of cc.
func New(cc balancer.ClientConn) *Pool {
	return &Pool{ClientConn: cc, shared: map[string]*conn{}}
}

// conn is one shared connection and its handles.
type conn struct {
	p    *Pool
	key  string
	real balancer.SubConn

	// Guarded by Pool.mu:
	handles    map[*Handle]struct{}
	state      balancer.SubConnState
	seen       bool // a state was reported
	healthReg  bool // a health listener is registered on real for this READY
	lastHealth *balancer.SubConnState
}

// Handle is one policy's SubConn on a shared connection.
type Handle struct {
	balancer.SubConn // the shared connection: what a picker returns
	c                *conn
	listener         func(balancer.SubConnState)
	health           func(balancer.SubConnState) // guarded by Pool.mu
	closed           bool                        // guarded by Pool.mu
}

// key is what connections are shared by: the address, the server name,
// and the TLS settings of the cluster.
func key(a resolver.Address) string {
	k := a.Addr + "\x00" + a.ServerName
	if info := handshake.Get(a.Attributes); info != nil {
		k += "\x00" + info.Key()
	}
	return k
}

// Connections returns the number of shared connections, for tests and
// gauges.
func (p *Pool) Connections() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.shared)
}

// NewSubConn returns a handle on the shared connection to addrs, made if
// there is none. A SubConn of several addresses is not shared.
func (p *Pool) NewSubConn(addrs []resolver.Address, opts balancer.NewSubConnOptions) (balancer.SubConn, error) {
	if len(addrs) != 1 {
		return p.ClientConn.NewSubConn(addrs, opts)
	}
	k := key(addrs[0])
	p.mu.Lock()
	defer p.mu.Unlock()
	c := p.shared[k]
	if c == nil {
		c = &conn{p: p, key: k, handles: map[*Handle]struct{}{}}
		real, err := p.ClientConn.NewSubConn(addrs, balancer.NewSubConnOptions{
			HealthCheckEnabled: opts.HealthCheckEnabled,
			StateListener:      c.updated,
		})
		if err != nil {
			return nil, err
		}
		c.real = real
		p.shared[k] = c
	}
	h := &Handle{SubConn: c.real, c: c, listener: opts.StateListener}
	c.handles[h] = struct{}{}
	if c.seen && h.listener != nil {
		h.listener(c.state)
	}
	return h, nil
}

// RemoveSubConn is deprecated in gRPC: SubConns shut themselves down.
func (p *Pool) RemoveSubConn(sc balancer.SubConn) { sc.Shutdown() }

// updated takes a state of the shared connection to every handle.
func (c *conn) updated(s balancer.SubConnState) {
	c.p.mu.Lock()
	c.state, c.seen = s, true
	if s.ConnectivityState != connectivity.Ready {
		c.healthReg, c.lastHealth = false, nil
	}
	ls := make([]func(balancer.SubConnState), 0, len(c.handles))
	for h := range c.handles {
		if h.listener != nil {
			ls = append(ls, h.listener)
		}
	}
	c.p.mu.Unlock()
	for _, l := range ls {
		l(s)
	}
}

// healthUpdated takes a health state of the shared connection to every
// handle with a health listener.
func (c *conn) healthUpdated(s balancer.SubConnState) {
	c.p.mu.Lock()
	c.lastHealth = &s
	ls := make([]func(balancer.SubConnState), 0, len(c.handles))
	for h := range c.handles {
		if h.health != nil {
			ls = append(ls, h.health)
		}
	}
	c.p.mu.Unlock()
	for _, l := range ls {
		l(s)
	}
}

// Underlying returns the shared connection, which a picker gives gRPC.
func (h *Handle) Underlying() balancer.SubConn { return h.c.real }

// Connect asks the shared connection to connect.
func (h *Handle) Connect() { h.c.real.Connect() }

// UpdateAddresses is deprecated in gRPC, and not supported on a shared
// connection: policies make a new SubConn for new addresses.
func (h *Handle) UpdateAddresses([]resolver.Address) {}

// GetOrBuildProducer gets a producer of the shared connection, such as
// the out-of-band load reports of package orca.
func (h *Handle) GetOrBuildProducer(pb balancer.ProducerBuilder) (balancer.Producer, func()) {
	return h.c.real.GetOrBuildProducer(pb)
}

// RegisterHealthListener registers the handle's health listener: it gets
// the shared connection's health while the connection is READY (a
// listener registered when it is not is ignored, as gRPC ignores it).
func (h *Handle) RegisterHealthListener(l func(balancer.SubConnState)) {
	c := h.c
	c.p.mu.Lock()
	if h.closed || c.state.ConnectivityState != connectivity.Ready {
		c.p.mu.Unlock()
		return
	}
	h.health = l
	register := !c.healthReg
	c.healthReg = true
	last := c.lastHealth
	c.p.mu.Unlock()
	if register {
		c.real.RegisterHealthListener(c.healthUpdated)
	} else if last != nil && l != nil {
		l(*last)
	}
}

// Shutdown closes the handle, and the shared connection with its last
// handle; the handle's listener is told SHUTDOWN, as gRPC tells it.
func (h *Handle) Shutdown() {
	c := h.c
	c.p.mu.Lock()
	if h.closed {
		c.p.mu.Unlock()
		return
	}
	h.closed = true
	h.health = nil
	delete(c.handles, h)
	last := len(c.handles) == 0
	if last && c.p.shared[c.key] == c {
		delete(c.p.shared, c.key)
	}
	c.p.mu.Unlock()
	if last {
		c.real.Shutdown()
	}
	if h.listener != nil {
		h.listener(balancer.SubConnState{ConnectivityState: connectivity.Shutdown})
	}
}
