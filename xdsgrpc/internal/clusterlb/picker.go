package clusterlb

import (
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync/atomic"

	orcav3 "github.com/cncf/xds/go/xds/data/orca/v3"
	"google.golang.org/grpc/balancer"
	"google.golang.org/grpc/balancer/endpointsharding"
	"google.golang.org/grpc/connectivity"
	// The ORCA parser of trailers, so that DoneInfo.ServerLoad carries the
	// backends' per-call metrics for the load reports.
	_ "google.golang.org/grpc/orca"

	"github.com/xdslens/xdslens/xdsclient/lrs"
	"github.com/xdslens/xdslens/xdsgrpc/internal/callctx"
)

// picker picks for the priority in use. In order, as C-core's
// xds_cluster_impl policy does: the drops of the priority's leaf, its
// circuit breaker, then one of its READY localities by weight and one of
// that locality's READY endpoints in turn. A picker is immutable but for
// its sequence numbers.
type picker struct {
	leaf *leaf
	// locs are the READY localities; none when the priority is failing
	// (err is set) or connecting (err is nil: picks wait).
	locs  []*readyLocality
	sched *stride // nil when there is one locality
	err   error
}

// readyLocality is one READY locality of a picker: its READY endpoints,
// and the Done func of the RPCs it takes, built once.
type readyLocality struct {
	leaf      *leaf
	info      CallInfo
	weight    uint32
	endpoints []balancer.Picker
	next      atomic.Uint32
	done      func(balancer.DoneInfo)
}

func (p *picker) Pick(info balancer.PickInfo) (balancer.PickResult, error) {
	l := p.leaf
	rec := callctx.From(info.Ctx)
	if rec != nil {
		rec.Leaf, rec.Locality = l.name, lrs.Locality{}
	}
	for i := range l.drops {
		d := &l.drops[i]
		if d.perMillion > 0 && l.rand(million) < d.perMillion {
			if l.load != nil {
				l.load.CallDropped(d.category)
			}
			if h := l.hooks.Dropped; h != nil {
				h(DropInfo{Cluster: l.cluster, Leaf: l.name, Category: d.category})
			}
			return balancer.PickResult{}, d.err
		}
	}
	if l.counter == nil { // a leaf whose Cluster failed
		return p.fail()
	}
	if !l.counter.start(l.max) {
		if l.load != nil {
			l.load.CallDropped("")
		}
		if h := l.hooks.CircuitBroken; h != nil {
			h(CircuitBreakerInfo{Cluster: l.cluster, Leaf: l.name, EDSService: l.service, MaxRequests: l.max})
		}
		return balancer.PickResult{}, l.cbErr
	}
	if len(p.locs) == 0 {
		l.counter.end()
		return p.fail()
	}
	loc := p.locs[0]
	if p.sched != nil {
		loc = p.locs[p.sched.next()]
	}
	ep := loc.endpoints[loc.next.Add(1)%uint32(len(loc.endpoints))]
	res, err := ep.Pick(info)
	if err != nil {
		l.counter.end()
		return res, err
	}
	if l.load != nil {
		l.load.CallStarted(loc.info.Locality)
	}
	if h := l.hooks.CallStarted; h != nil {
		h(loc.info)
	}
	if rec != nil {
		rec.Locality = loc.info.Locality
	}
	if inner := res.Done; inner != nil {
		res.Done = func(di balancer.DoneInfo) { inner(di); loc.done(di) }
	} else {
		res.Done = loc.done
	}
	return res, nil
}

// fail fails the pick, or has it wait when the priority is connecting.
func (p *picker) fail() (balancer.PickResult, error) {
	if p.err == nil {
		return balancer.PickResult{}, balancer.ErrNoSubConnAvailable
	}
	if h := p.leaf.hooks.NoEndpoint; h != nil {
		h(NoEndpointInfo{Cluster: p.leaf.cluster, Leaf: p.leaf.name, Err: p.err})
	}
	return balancer.PickResult{}, p.err
}

// finish records the end of an RPC that the locality took.
func (r *readyLocality) finish(di balancer.DoneInfo) {
	l := r.leaf
	l.counter.end()
	if l.load != nil {
		l.load.CallFinished(r.info.Locality, di.Err)
		if orca, ok := di.ServerLoad.(*orcav3.OrcaLoadReport); ok {
			for name, v := range orca.GetNamedMetrics() {
				l.load.CallServerLoad(r.info.Locality, name, v)
			}
		}
	}
	if h := l.hooks.CallFinished; h != nil {
		h(r.info, di.Err)
	}
}

// newPicker returns the picker of a priority of leaf l whose endpoints are
// in state s, as its endpointsharding balancer reported it; order gives
// the position of each locality in the configuration.
func newPicker(l *leaf, s balancer.State, order map[lrs.Locality]int) *picker {
	p := &picker{leaf: l}
	children := endpointsharding.ChildStatesFromPicker(s.Picker)
	switch s.ConnectivityState {
	case connectivity.Ready:
		byID := make(map[lrs.Locality]*readyLocality)
		for _, c := range children {
			a := localityOf(c.Endpoint)
			if c.State.ConnectivityState != connectivity.Ready || a == nil {
				continue
			}
			r := byID[a.id]
			if r == nil {
				r = &readyLocality{leaf: l, info: CallInfo{Cluster: l.cluster, Leaf: l.name, Locality: a.id}, weight: a.weight}
				r.done = r.finish
				r.next.Store(rand.Uint32())
				byID[a.id] = r
				p.locs = append(p.locs, r)
			}
			r.endpoints = append(r.endpoints, c.State.Picker)
		}
		slices.SortFunc(p.locs, func(a, b *readyLocality) int {
			return cmp.Compare(order[a.info.Locality], order[b.info.Locality])
		})
		if len(p.locs) > 1 {
			weights := make([]uint32, len(p.locs))
			for i, r := range p.locs {
				weights[i] = r.weight
			}
			p.sched = newStride(weights, rand.Uint32())
		}
	case connectivity.TransientFailure:
		p.err = fmt.Errorf("%s: all endpoints failing: last error: %v%s", l.label, lastError(children), l.note)
	}
	return p
}

// lastError returns the error of a failing endpoint: what its pick_first
// picker fails picks with (the last connection error).
func lastError(children []endpointsharding.ChildState) error {
	for _, c := range children {
		if c.State.ConnectivityState == connectivity.TransientFailure && c.State.Picker != nil {
			if _, err := c.State.Picker.Pick(balancer.PickInfo{Ctx: context.Background()}); err != nil {
				return err
			}
		}
	}
	return errNoConnection
}
