// Package ringhash is the ring_hash load-balancing policy of xdslens
// channels (gRFC A42, with the picking rules of gRFC A61): each endpoint
// takes a share of a hash ring by its weight, and an RPC goes to the
// endpoint that owns its request hash, so that RPCs of the same hash go to
// the same endpoint while it is usable.
//
// The request hash comes from the RPC's route (its hash policies, gRFC
// A42), which the routing policy computes once per RPC and carries in the
// RPC's context (package callctx); an RPC without one gets a random hash,
// as gRPC's xDS channels give it. gRPC-Go's own ring_hash reads the hash
// from a context key internal to gRPC-Go, which is why this policy exists;
// its ring is built the same way (endpoints sorted by hash key, xxHash64
// of "KEY_N", Envoy's scaling of the ring size), so the same endpoints and
// the same hash choose the same endpoint in both.
//
// Endpoints are keyed by the "envoy.lb" hash_key of their EDS metadata
// when they have one (gRFC A76, as gRPC-Go does by default), else by
// their first address, weighted by the
// weight attribute of package experimental/balancer/weight (the locality
// weight times the endpoint weight, as gRPC's xDS channels set it), and
// each is a pick_first policy that connects only when an RPC needs it
// (package balancer/lazy).
//
// # Picking (gRFC A61)
//
// From the entry that owns the hash, the picker takes the first endpoint
// that is READY, CONNECTING or IDLE, skipping those in TRANSIENT_FAILURE:
// READY takes the RPC, CONNECTING queues it, IDLE starts connecting and
// queues it. When every endpoint is failing, the RPC fails with the error
// of the endpoint that owns the hash. While the policy is CONNECTING or
// TRANSIENT_FAILURE and no endpoint is connecting, one IDLE endpoint is
// asked to connect, so that a failed policy recovers without RPCs.
//
// The ring's sizes are capped at 4096 entries, as gRPC caps them by
// default (GRPC_RING_HASH_CAP changes the cap, as in gRPC-Go).
//
// A pick allocates nothing and costs O(log n) in the ring's size.
package ringhash

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"sync"

	"google.golang.org/grpc/balancer"
	"google.golang.org/grpc/balancer/endpointsharding"
	"google.golang.org/grpc/balancer/lazy"
	"google.golang.org/grpc/balancer/pickfirst"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/experimental/balancer/weight"
	"google.golang.org/grpc/resolver"
	resolverringhash "google.golang.org/grpc/resolver/ringhash"
	"google.golang.org/grpc/serviceconfig"

	"github.com/xdslens/xdslens/xdsgrpc/internal/callctx"
)

// Name is the policy's name as gRPC's xDS channels name it.
const Name = "ring_hash_experimental"

// Ring size bounds (gRFC A42).
const (
	DefaultMinRingSize = 1024
	DefaultMaxRingSize = 4096
	MaxRingSize        = 8 * 1024 * 1024
	// DefaultRingSizeCap caps both sizes, as gRPC caps them by default
	// (gRPC-Go's GRPC_RING_HASH_CAP, C-core's ring size cap channel
	// argument): a Cluster's maximum_ring_size of 8M would otherwise
	// build rings of 8M entries.
	DefaultRingSizeCap = 4096
)

// ringSizeCap is the cap of ring sizes: GRPC_RING_HASH_CAP when it is a
// number in [1, MaxRingSize], as in gRPC-Go, else DefaultRingSizeCap.
func ringSizeCap() uint64 {
	if n, err := strconv.ParseUint(os.Getenv("GRPC_RING_HASH_CAP"), 10, 64); err == nil && n >= 1 && n <= MaxRingSize {
		return n
	}
	return DefaultRingSizeCap
}

// NewConfig returns the config of ring sizes minSize and maxSize, capped
// as gRPC caps them.
func NewConfig(minSize, maxSize uint64) *Config {
	limit := ringSizeCap()
	return &Config{MinRingSize: min(minSize, limit), MaxRingSize: min(maxSize, limit)}
}

// Config is the policy's configuration.
type Config struct {
	serviceconfig.LoadBalancingConfig `json:"-"`
	// MinRingSize and MaxRingSize bound the ring's entries:
	// 1 <= MinRingSize <= MaxRingSize <= MaxRingSize.
	MinRingSize uint64 `json:"minRingSize,omitempty"`
	MaxRingSize uint64 `json:"maxRingSize,omitempty"`
}

// Builder builds the policy. It is not registered with gRPC: gRPC-Go
// registers its own ring_hash under Name.
type Builder struct{}

// Name returns Name.
func (Builder) Name() string { return Name }

// ParseConfig parses a JSON config: {"minRingSize": N, "maxRingSize": M}.
func (Builder) ParseConfig(js json.RawMessage) (serviceconfig.LoadBalancingConfig, error) {
	c := &Config{MinRingSize: DefaultMinRingSize, MaxRingSize: DefaultMaxRingSize}
	if len(js) > 0 {
		if err := json.Unmarshal(js, c); err != nil {
			return nil, fmt.Errorf("ring_hash: config %s: %w", js, err)
		}
	}
	if err := c.validate(); err != nil {
		return nil, err
	}
	return NewConfig(c.MinRingSize, c.MaxRingSize), nil
}

func (c *Config) validate() error {
	switch {
	case c.MinRingSize < 1 || c.MinRingSize > MaxRingSize:
		return fmt.Errorf("ring_hash: minRingSize %d is not in [1, %d]", c.MinRingSize, MaxRingSize)
	case c.MaxRingSize < 1 || c.MaxRingSize > MaxRingSize:
		return fmt.Errorf("ring_hash: maxRingSize %d is not in [1, %d]", c.MaxRingSize, MaxRingSize)
	case c.MinRingSize > c.MaxRingSize:
		return fmt.Errorf("ring_hash: minRingSize %d is above maxRingSize %d", c.MinRingSize, c.MaxRingSize)
	}
	return nil
}

// Build returns a new policy.
func (Builder) Build(cc balancer.ClientConn, opts balancer.BuildOptions) balancer.Balancer {
	b := &policy{cc: cc, states: map[string]*endpoint{}}
	lazyPickFirst := func(cc balancer.ClientConn, opts balancer.BuildOptions) balancer.Balancer {
		return lazy.NewBalancer(cc, opts, balancer.Get(pickfirst.Name).Build)
	}
	b.child = endpointsharding.NewBalancer(&childCC{ClientConn: cc, b: b}, opts, lazyPickFirst, endpointsharding.Options{DisableAutoReconnect: true})
	return b
}

// policy is one ring_hash policy: an endpointsharding balancer of lazy
// pick_first children, and the ring over them.
type policy struct {
	cc    balancer.ClientConn
	child balancer.Balancer

	mu       sync.Mutex
	cfg      *Config
	states   map[string]*endpoint // by hash key
	ring     *ring
	stale    bool // the ring must be built again
	updating bool // inside UpdateClientConnState: the child's states wait
}

// endpoint is the state of one endpoint's child policy.
type endpoint struct {
	key      string
	weight   uint32
	state    balancer.State
	exitIdle func()
}

// childCC takes the child's state updates.
type childCC struct {
	balancer.ClientConn
	b *policy
}

func (c *childCC) UpdateState(s balancer.State) { c.b.childUpdated(s) }

// hashKey is an endpoint's key on the ring: its hash key (gRFC A76, the
// "envoy.lb" hash_key of its EDS metadata, set with gRPC-Go's
// resolver/ringhash), else its first address.
func hashKey(ep resolver.Endpoint) string {
	if k := resolverringhash.HashKey(ep); k != "" {
		return k
	}
	return ep.Addresses[0].Addr
}

func weightOf(ep resolver.Endpoint) uint32 {
	if w := weight.FromEndpoint(ep).Weight; w > 0 {
		return w
	}
	return 1
}

func (b *policy) UpdateClientConnState(s balancer.ClientConnState) error {
	cfg, ok := s.BalancerConfig.(*Config)
	if !ok {
		return fmt.Errorf("ring_hash: config is a %T, not a *ringhash.Config", s.BalancerConfig)
	}
	if err := cfg.validate(); err != nil {
		return err
	}
	b.mu.Lock()
	b.updating = true
	b.mu.Unlock()
	err := b.child.UpdateClientConnState(balancer.ClientConnState{ResolverState: pickfirst.EnableHealthListener(s.ResolverState)})
	b.mu.Lock()
	b.updating = false
	if b.cfg == nil || *b.cfg != *cfg {
		b.stale = true
	}
	b.cfg = cfg
	b.updateLocked()
	b.mu.Unlock()
	return err
}

// childUpdated takes the endpoints' states, as endpointsharding reports
// them.
func (b *policy) childUpdated(s balancer.State) {
	b.mu.Lock()
	defer b.mu.Unlock()
	seen := make(map[string]bool)
	for _, cs := range endpointsharding.ChildStatesFromPicker(s.Picker) {
		key, w := hashKey(cs.Endpoint), weightOf(cs.Endpoint)
		seen[key] = true
		e := b.states[key]
		if e == nil {
			e = &endpoint{key: key}
			b.states[key] = e
			b.stale = true
		}
		if e.weight != w {
			e.weight, b.stale = w, true
		}
		e.state, e.exitIdle = cs.State, cs.ExitIdle
	}
	for key := range b.states {
		if !seen[key] {
			delete(b.states, key)
			b.stale = true
		}
	}
	b.updateLocked()
}

// updateLocked publishes the policy's state and picker, unless an update
// of the config is under way (it publishes at its end).
func (b *policy) updateLocked() {
	state := b.aggregateLocked()
	if state == connectivity.Connecting || state == connectivity.TransientFailure {
		b.connectOneLocked()
	}
	if b.updating || b.cfg == nil {
		return
	}
	if len(b.states) == 0 {
		b.ring = nil
		b.cc.UpdateState(balancer.State{ConnectivityState: connectivity.TransientFailure, Picker: errPicker{errNoEndpoints}})
		return
	}
	if b.stale || b.ring == nil {
		eps := make([]weighted, 0, len(b.states))
		for _, e := range b.states {
			eps = append(eps, weighted{key: e.key, weight: e.weight})
		}
		b.ring, b.stale = newRing(eps, b.cfg.MinRingSize, b.cfg.MaxRingSize), false
	}
	// The endpoints of the ring, in ring order, so that a pick does not
	// look up a map.
	p := &picker{ring: b.ring, byEntry: make([]endpointPick, len(b.ring.entries))}
	for i, en := range b.ring.entries {
		e := b.states[en.key]
		p.byEntry[i] = endpointPick{state: e.state.ConnectivityState, picker: e.state.Picker}
	}
	b.cc.UpdateState(balancer.State{ConnectivityState: state, Picker: p})
}

var errNoEndpoints = errors.New("ring_hash: no endpoints")

// aggregateLocked is the policy's state (gRFC A42): READY if an endpoint
// is; TRANSIENT_FAILURE if two are failing; CONNECTING if one is
// connecting, or one of several is failing; IDLE if one is idle; else
// TRANSIENT_FAILURE.
func (b *policy) aggregateLocked() connectivity.State {
	var n [connectivity.Shutdown + 1]int
	for _, e := range b.states {
		n[e.state.ConnectivityState]++
	}
	switch {
	case n[connectivity.Ready] > 0:
		return connectivity.Ready
	case n[connectivity.TransientFailure] > 1:
		return connectivity.TransientFailure
	case n[connectivity.Connecting] > 0:
		return connectivity.Connecting
	case n[connectivity.TransientFailure] == 1 && len(b.states) > 1:
		return connectivity.Connecting
	case n[connectivity.Idle] > 0:
		return connectivity.Idle
	}
	return connectivity.TransientFailure
}

// connectOneLocked asks one IDLE endpoint (the first by hash key) to
// connect, unless one is connecting already.
func (b *policy) connectOneLocked() {
	keys := make([]string, 0, len(b.states))
	for k, e := range b.states {
		if e.state.ConnectivityState == connectivity.Connecting {
			return
		}
		if e.state.ConnectivityState == connectivity.Idle {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return
	}
	e := b.states[slices.MinFunc(keys, cmp.Compare[string])]
	if e.exitIdle != nil {
		e.exitIdle()
	}
}

func (b *policy) ResolverError(err error) { b.child.ResolverError(err) }

func (b *policy) UpdateSubConnState(balancer.SubConn, balancer.SubConnState) {}

// ExitIdle does nothing: endpoints connect when RPCs need them.
func (b *policy) ExitIdle() {}

func (b *policy) Close() { b.child.Close() }

// endpointPick is what a picker knows of one endpoint.
type endpointPick struct {
	state  connectivity.State
	picker balancer.Picker
}

// picker picks by the request hash; it is immutable.
type picker struct {
	ring    *ring
	byEntry []endpointPick // by ring entry
}

func (p *picker) Pick(info balancer.PickInfo) (balancer.PickResult, error) {
	h, ok := callctx.RequestHash(info.Ctx)
	if !ok {
		h = rand.Uint64()
	}
	first := p.ring.find(h)
	n := len(p.byEntry)
	for i := range n {
		e := &p.byEntry[(first+i)%n]
		switch e.state {
		case connectivity.Ready, connectivity.Connecting, connectivity.Idle:
			return e.picker.Pick(info)
		}
	}
	return p.byEntry[first].picker.Pick(info)
}

type errPicker struct{ err error }

func (p errPicker) Pick(balancer.PickInfo) (balancer.PickResult, error) {
	return balancer.PickResult{}, p.err
}
