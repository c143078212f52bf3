package clusterlb

import (
	"fmt"

	orcav3 "github.com/cncf/xds/go/xds/data/orca/v3"
	"google.golang.org/grpc/balancer"
	"google.golang.org/grpc/status"
	// The ORCA parser of trailers, so that DoneInfo.ServerLoad carries the
	// backends' per-call metrics for the load reports.
	_ "google.golang.org/grpc/orca"

	"github.com/xdslens/xdslens/xdsclient/lrs"
	"github.com/xdslens/xdslens/xdsgrpc/internal/callctx"
)

// picker picks for one priority of a leaf. In order, as C-core's
// xds_cluster_impl policy does: the drops of the leaf, its circuit
// breaker, then the endpoint policy's pick; the endpoint picked tells the
// locality its load is reported under. A priority without endpoints, or
// whose leaf cannot be used, has no child and fails with err; a priority
// whose policy has not made its first picker has none either, and its err
// is balancer.ErrNoSubConnAvailable. A picker is
// immutable.
type picker struct {
	leaf  *leaf
	child balancer.Picker // nil when err is set
	err   error
	// failing says that the endpoint policy is in TRANSIENT_FAILURE: its
	// errors are given the leaf's name and resolution note.
	failing bool
}

func (p *picker) Pick(info balancer.PickInfo) (balancer.PickResult, error) {
	l := p.leaf
	rec := callctx.From(info.Ctx)
	if rec != nil {
		rec.Leaf, rec.Policy, rec.Locality, rec.Address = l.name, l.policyName(), lrs.Locality{}, ""
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
	if p.child == nil {
		if p.err == balancer.ErrNoSubConnAvailable {
			// Connecting: the RPC waits for the policy's first picker.
			return balancer.PickResult{}, p.err
		}
		return p.fail(p.err)
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
	res, err := p.child.Pick(info)
	if err != nil {
		l.counter.end()
		if err == balancer.ErrNoSubConnAvailable {
			return res, err
		}
		if p.failing {
			err = failingError(l, err)
		}
		return p.fail(err)
	}
	sc, ok := res.SubConn.(*implSubConn)
	if !ok {
		l.counter.end()
		return p.fail(fmt.Errorf("%s: load-balancing policy %q picked a connection it did not make through its ClientConn (%T)", l.label, l.policy.name, res.SubConn))
	}
	st := sc.st.Load()
	res.SubConn = sc.real
	if l.load != nil {
		l.load.CallStarted(st.info.Locality)
	}
	if h := l.hooks.CallStarted; h != nil {
		h(st.info)
	}
	if rec != nil {
		rec.Locality, rec.Address = st.info.Locality, sc.addr
	}
	var done func(balancer.DoneInfo)
	switch {
	case rec != nil && rec.Holds():
		// The interceptors learn the RPC's status: an attempt that ends
		// without one is held until they do (attemptdone.go).
		rec.Superseded()
		done = l.attemptDoneOf(st, rec)
	case st.leaf != l:
		// A config changed the leaf between the connection's refresh and
		// this pick: the RPC ends on the leaf that started it.
		info := CallInfo{Cluster: l.cluster, Leaf: l.name, Locality: st.info.Locality, Policy: l.policyName()}
		done = func(di balancer.DoneInfo) {
			if neverStarted(di) {
				l.unpick(info.Locality)
				return
			}
			l.counter.end()
			l.report(info, di)
		}
	default:
		done = st.done
	}
	if inner := res.Done; inner != nil {
		res.Done = func(di balancer.DoneInfo) { inner(di); done(di) }
	} else {
		res.Done = done
	}
	return res, nil
}

// failingError is the error of an RPC that found every endpoint of leaf l
// failing, whose endpoint policy failed it with err: it names the leaf and
// ends with its resolution note. A status keeps its code, which fails
// wait-for-ready RPCs too; any other error lets them wait.
func failingError(l *leaf, err error) error {
	if st, ok := status.FromError(err); ok {
		return status.Errorf(st.Code(), "%s: all endpoints failing: last error: %s%s", l.label, st.Message(), l.note)
	}
	return fmt.Errorf("%s: all endpoints failing: last error: %v%s", l.label, err, l.note)
}

// fail fails the pick with err, reported as finding no endpoint.
func (p *picker) fail(err error) (balancer.PickResult, error) {
	if h := p.leaf.hooks.NoEndpoint; h != nil {
		h(NoEndpointInfo{Cluster: p.leaf.cluster, Leaf: p.leaf.name, Policy: p.leaf.policyName(), Err: err})
	}
	return balancer.PickResult{}, err
}

// neverStarted reports whether di ends a pick whose RPC never started on
// the connection picked: gRPC-Go (v1.85.0, picker_wrapper.go) ends with
// an empty DoneInfo a pick whose connection it finds no longer READY when
// it takes it, and picks again. An attempt that started has BytesSent
// set (its stream was made), or ended with an error.
func neverStarted(di balancer.DoneInfo) bool { return di.Err == nil && !di.BytesSent }

// unpick takes back a pick of l whose RPC never started on the connection
// of locality: its circuit breaker count ends, and its load report counts
// it neither issued nor finished. It counts in neither outlier detection
// nor the CallFinished hook: gRPC C-core starts the call tracker of a
// pick (xds_cluster_impl's counts, outlier detection's) only once the
// call has a connection, and queues a pick whose connection is gone.
func (l *leaf) unpick(locality lrs.Locality) {
	l.counter.end()
	if l.load != nil {
		l.load.CallNotStarted(locality)
	}
}

// report records the end of an RPC that an endpoint of l took: its load
// and its hook. The circuit breaker's count of it has ended.
func (l *leaf) report(info CallInfo, di balancer.DoneInfo) {
	if l.load != nil {
		l.load.CallFinished(info.Locality, di.Err)
		if orca, ok := di.ServerLoad.(*orcav3.OrcaLoadReport); ok {
			for name, v := range orca.GetNamedMetrics() {
				l.load.CallServerLoad(info.Locality, name, v)
			}
		}
	}
	if h := l.hooks.CallFinished; h != nil {
		h(info, di.Err)
	}
}
