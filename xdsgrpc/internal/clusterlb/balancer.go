package clusterlb

import (
	"errors"
	"fmt"
	"time"

	"google.golang.org/grpc/balancer"
	"google.golang.org/grpc/connectivity"
)

// Balancer is the load-balancing policy of one route-level cluster; see
// the package documentation. It implements balancer.Balancer and talks
// only to the balancer.ClientConn it was built with, so it can be the
// child of another policy. The ClientConn's UpdateState must not call the
// Balancer back synchronously, as gRPC's own ClientConn never does.
type Balancer struct {
	cc    balancer.ClientConn
	bopts balancer.BuildOptions
	s     *serializer

	// Everything below is used on the serializer only.
	cfg      *Config
	own      *Counters // the counters used when the Config gives none
	leaves   []*leaf
	namers   map[string]*namer   // by leaf name
	order    []*child            // the priorities of the Config, highest first
	children map[string]*child   // by key: those of order, started or not
	cur      *child              // the priority in use
	outliers map[string]*outlier // the outlier detection of each leaf that has one, by name
	closed   bool
}

// New returns a Balancer that creates its connections through cc. Give it
// a Config with UpdateClientConnState before anything else.
func New(cc balancer.ClientConn, opts balancer.BuildOptions) *Balancer {
	return &Balancer{
		cc:       cc,
		bopts:    opts,
		s:        newSerializer(),
		namers:   map[string]*namer{},
		children: map[string]*child{},
	}
}

var _ balancer.Balancer = (*Balancer)(nil)

// UpdateClientConnState applies the *Config in s.BalancerConfig; the
// resolver state is not used. Connections to the endpoints that remain
// are kept; those to endpoints no longer in the Config are closed.
func (b *Balancer) UpdateClientConnState(s balancer.ClientConnState) error {
	cfg, ok := s.BalancerConfig.(*Config)
	if !ok {
		return b.invalid(fmt.Errorf("clusterlb: BalancerConfig is a %T, not a *clusterlb.Config", s.BalancerConfig))
	}
	if err := cfg.validate(); err != nil {
		return b.invalid(err)
	}
	if !b.s.do(func() { b.update(cfg) }) {
		return errClosed
	}
	return nil
}

var errClosed = errors.New("clusterlb: the balancer is closed")

// invalid reports an unusable Config: picks fail with err if there is no
// previous Config to keep using.
func (b *Balancer) invalid(err error) error {
	b.s.do(func() {
		if b.cfg == nil && !b.closed {
			b.cc.UpdateState(balancer.State{ConnectivityState: connectivity.TransientFailure, Picker: errPicker{err}})
		}
	})
	return err
}

// ResolverError is given to the priorities' endpoint policies, which
// ignore it while they have endpoints; before the first Config, picks
// fail with it.
func (b *Balancer) ResolverError(err error) {
	b.s.do(func() {
		if b.closed {
			return
		}
		if b.cfg == nil {
			b.cc.UpdateState(balancer.State{ConnectivityState: connectivity.TransientFailure,
				Picker: errPicker{fmt.Errorf("resolver error: %w", err)}})
			return
		}
		for _, c := range b.children {
			if c.im != nil {
				c.im.resolverError(err)
			}
		}
	})
}

// UpdateSubConnState is not used: the Balancer's SubConns report to their
// listeners.
func (b *Balancer) UpdateSubConnState(balancer.SubConn, balancer.SubConnState) {}

// ExitIdle asks the priority in use to connect, as C-core does.
func (b *Balancer) ExitIdle() {
	b.s.do(func() {
		if c := b.cur; c != nil && c.im != nil {
			c.im.exitIdle()
		}
	})
}

// Close closes every connection, stops the load reports and gives back
// the circuit-breaking counters. No goroutine of the Balancer runs after
// it returns, and the ClientConn is not used again.
func (b *Balancer) Close() {
	b.s.do(func() {
		b.closed = true
		for _, c := range b.children {
			b.stop(c)
		}
		for _, o := range b.outliers {
			o.stop()
		}
		b.children, b.order = nil, nil
		for _, l := range b.leaves {
			l.release()
		}
		b.leaves = nil
	})
	b.s.stop()
}

// update applies cfg.
func (b *Balancer) update(cfg *Config) {
	if b.closed {
		return
	}
	counters := cfg.Counters
	if counters == nil {
		if b.own == nil {
			b.own = NewCounters()
		}
		counters = b.own
	}
	old := b.leaves
	newLeaves := make([]*leaf, len(cfg.Leaves))
	var specs []prioritySpec
	namers := make(map[string]*namer, len(cfg.Leaves))
	for i, slot := range cfg.Leaves {
		l := newLeaf(cfg, counters, slot)
		newLeaves[i] = l
		n := b.namers[slot.Name]
		if n == nil {
			n = &namer{}
		}
		namers[slot.Name] = n
		specs = append(specs, l.priorities(slot, n)...)
	}
	b.namers = namers
	b.leaves = newLeaves
	b.updateOutliers(cfg, specs)

	order := make([]*child, len(specs))
	children := make(map[string]*child, len(specs))
	for i, spec := range specs {
		c := b.children[spec.key]
		if c == nil {
			c = &child{key: spec.key}
		}
		c.setSpec(spec)
		if c.started {
			b.refresh(c)
		}
		order[i], children[spec.key] = c, c
	}
	for key, c := range b.children {
		if children[key] == nil {
			b.stop(c)
		}
	}
	b.order, b.children, b.cfg = order, children, cfg
	b.choose()
	for _, l := range old {
		l.release()
	}
}

// failoverTimeout and retention return the Config's durations.
func (b *Balancer) failoverTimeout() time.Duration {
	if b.cfg == nil || b.cfg.FailoverTimeout == 0 {
		return DefaultFailoverTimeout
	}
	return b.cfg.FailoverTimeout
}

func (b *Balancer) retention() time.Duration {
	if b.cfg == nil || b.cfg.Retention == 0 {
		return DefaultRetention
	}
	return b.cfg.Retention
}

// errPicker fails every pick with err.
type errPicker struct{ err error }

func (p errPicker) Pick(balancer.PickInfo) (balancer.PickResult, error) {
	return balancer.PickResult{}, p.err
}
