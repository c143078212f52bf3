package clusterlb

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"

	"google.golang.org/grpc/balancer"
	"google.golang.org/grpc/connectivity"
	estats "google.golang.org/grpc/experimental/stats"
	"google.golang.org/grpc/resolver"
	"google.golang.org/grpc/serviceconfig"

	"github.com/xdslens/xdslens/xdsclient/lrs"
)

// wrrLocalityConfig is wrr_locality's config: the policy of each locality.
type wrrLocalityConfig struct {
	serviceconfig.LoadBalancingConfig
	child *endpointPolicy
}

// wrrLocalityBuilder builds wrr_locality (gRFC A52): a child policy per
// locality of the priority, each given that locality's endpoints, and
// localities picked by weight among the READY ones, with the static stride
// schedule of C-core's weighted_round_robin (see stride). It is built by
// the cluster policy, not registered with gRPC.
type wrrLocalityBuilder struct{}

func (wrrLocalityBuilder) Name() string { return nameWRRLocality }

func (wrrLocalityBuilder) Build(cc balancer.ClientConn, opts balancer.BuildOptions) balancer.Balancer {
	return &wrrLocality{cc: cc, opts: opts, children: map[lrs.Locality]*localityChild{}}
}

// wrrLocality is one wrr_locality policy. Its methods are called one at a
// time; its children report their states from any goroutine, under mu.
type wrrLocality struct {
	cc   balancer.ClientConn
	opts balancer.BuildOptions

	mu       sync.Mutex
	children map[lrs.Locality]*localityChild
	order    []*localityChild // in the order of the config's localities
	updating bool             // inside UpdateClientConnState: publish at its end
	closed   bool
}

// localityChild is the policy of one locality.
type localityChild struct {
	id     lrs.Locality
	weight uint32
	key    string // the policy's key, to rebuild it when it changes
	bal    balancer.Balancer
	state  balancer.State // guarded by wrrLocality.mu
}

type localityCC struct {
	balancer.ClientConn
	w   *wrrLocality
	c   *localityChild
	rec estats.MetricsRecorder
}

// MetricsRecorder returns the recorder of the locality's policy, which
// labels its metrics with the locality.
func (cc *localityCC) MetricsRecorder() estats.MetricsRecorder { return cc.rec }

func (cc *localityCC) UpdateState(s balancer.State) {
	w := cc.w
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed || w.children[cc.c.id] != cc.c {
		return
	}
	cc.c.state = s
	w.publishLocked()
}

var errNoLocality = errors.New("no endpoints")

func (w *wrrLocality) UpdateClientConnState(s balancer.ClientConnState) error {
	cfg, ok := s.BalancerConfig.(*wrrLocalityConfig)
	if !ok {
		return fmt.Errorf("wrr_locality: config is a %T", s.BalancerConfig)
	}
	// Group the endpoints by locality, in the order localities appear.
	var ids []lrs.Locality
	byID := map[lrs.Locality][]resolver.Endpoint{}
	weights := map[lrs.Locality]uint32{}
	for _, ep := range s.ResolverState.Endpoints {
		a := localityOf(ep)
		if a == nil {
			return errors.New("wrr_locality: an endpoint has no locality")
		}
		if _, ok := byID[a.id]; !ok {
			ids = append(ids, a.id)
		}
		byID[a.id] = append(byID[a.id], ep)
		weights[a.id] = a.weight
	}
	w.mu.Lock()
	w.updating = true
	old := w.children
	children := make(map[lrs.Locality]*localityChild, len(ids))
	order := make([]*localityChild, len(ids))
	var fresh []*localityChild
	for i, id := range ids {
		c := old[id]
		if c == nil || c.key != cfg.child.key {
			c = &localityChild{id: id, key: cfg.child.key, state: balancer.State{ConnectivityState: connectivity.Connecting}}
			fresh = append(fresh, c)
		}
		c.weight = weights[id]
		children[id], order[i] = c, c
	}
	w.children, w.order = children, order
	w.mu.Unlock()

	for _, c := range fresh {
		cc := &localityCC{ClientConn: w.cc, w: w, c: c, rec: w.cc.MetricsRecorder()}
		if r, ok := cc.rec.(*recorder); ok {
			cc.rec = r.forLocality(c.id)
		}
		c.bal = cfg.child.builder.Build(cc, w.opts)
	}
	var errs []error
	for _, c := range order {
		err := c.bal.UpdateClientConnState(balancer.ClientConnState{
			ResolverState:  resolver.State{Endpoints: byID[c.id], Attributes: s.ResolverState.Attributes},
			BalancerConfig: cfg.child.config,
		})
		if err != nil {
			errs = append(errs, fmt.Errorf("locality %v: %w", c.id, err))
		}
	}
	for id, c := range old {
		if children[id] != c {
			c.bal.Close()
		}
	}
	w.mu.Lock()
	w.updating = false
	w.publishLocked()
	w.mu.Unlock()
	return errors.Join(errs...)
}

// publishLocked gives the parent the aggregate state, READY if a locality
// is, else CONNECTING, IDLE, TRANSIENT_FAILURE in that order, and a picker
// over the READY localities by weight.
func (w *wrrLocality) publishLocked() {
	if w.updating || w.closed {
		return
	}
	if len(w.order) == 0 {
		w.cc.UpdateState(balancer.State{ConnectivityState: connectivity.TransientFailure, Picker: errPicker{errNoLocality}})
		return
	}
	var n [connectivity.Shutdown + 1]int
	for _, c := range w.order {
		n[c.state.ConnectivityState]++
	}
	state := connectivity.TransientFailure
	switch {
	case n[connectivity.Ready] > 0:
		state = connectivity.Ready
	case n[connectivity.Connecting] > 0:
		state = connectivity.Connecting
	case n[connectivity.Idle] > 0:
		state = connectivity.Idle
	}
	p := &localityPicker{}
	for _, c := range w.order {
		if c.state.ConnectivityState == state && c.state.Picker != nil {
			p.pickers = append(p.pickers, c.state.Picker)
			p.weights = append(p.weights, c.weight)
		}
	}
	switch {
	case len(p.pickers) == 0:
		w.cc.UpdateState(balancer.State{ConnectivityState: state, Picker: errPicker{balancer.ErrNoSubConnAvailable}})
		return
	case len(p.pickers) > 1:
		p.sched = newStride(p.weights, rand.Uint32())
	}
	w.cc.UpdateState(balancer.State{ConnectivityState: state, Picker: p})
}

func (w *wrrLocality) ResolverError(err error) {
	w.mu.Lock()
	cs := slices.Clone(w.order)
	w.mu.Unlock()
	for _, c := range cs {
		c.bal.ResolverError(err)
	}
}

func (w *wrrLocality) UpdateSubConnState(balancer.SubConn, balancer.SubConnState) {}

func (w *wrrLocality) ExitIdle() {
	w.mu.Lock()
	cs := slices.Clone(w.order)
	w.mu.Unlock()
	for _, c := range cs {
		c.bal.ExitIdle()
	}
}

func (w *wrrLocality) Close() {
	w.mu.Lock()
	w.closed = true
	cs := w.children
	w.children, w.order = nil, nil
	w.mu.Unlock()
	for _, c := range cs {
		c.bal.Close()
	}
}

// localityPicker picks a locality by weight, then picks with its policy's
// picker. With the localities in one state other than READY (all
// connecting, or all failing), it picks among them alike, so that the RPC
// waits, or fails with a locality's error.
type localityPicker struct {
	pickers []balancer.Picker
	weights []uint32
	sched   *stride // nil with one locality
}

func (p *localityPicker) Pick(info balancer.PickInfo) (balancer.PickResult, error) {
	if p.sched == nil {
		return p.pickers[0].Pick(info)
	}
	return p.pickers[p.sched.next()].Pick(info)
}
