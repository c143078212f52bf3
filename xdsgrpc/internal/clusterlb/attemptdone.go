package clusterlb

import (
	"google.golang.org/grpc/balancer"

	"github.com/xdslens/xdslens/xdsgrpc/internal/callctx"
)

// attemptDone is the Done of one attempt of an RPC whose interceptors
// learn its status (callctx.Call.Holds). gRPC-Go (v1.85.0) may give an
// attempt's Done no error though the attempt failed: a Trailers-Only
// answer that closed the stream before the request was written (package
// internal/rpcstatus). Nothing in DoneInfo tells that attempt from one
// that ended well: BytesReceived is set by the answer's headers alone,
// and the Trailer and ServerLoad come with any answer. So an attempt that
// ends without an error, once something was sent, is held in its Call,
// and reported (load, outlier detection, the CallFinished hook) once the
// interceptors settle it: with the RPC's status when it ends (for an RPC
// that succeeds, on its return), or the status a retry was made for, as
// gRPC C-core reports the status its policies get. The circuit breaker's
// count ends with the attempt. An attempt ended by an error is reported
// at once, as without the interceptors; a pick whose RPC never started on
// its connection (neverStarted) is taken back at once, not held.
//
// attemptDones are kept in their leaf's pool, each with its Done func made
// once, so that a pick allocates nothing; one goes back to the pool once
// reported. gRPC calls an attempt's Done once.
type attemptDone struct {
	l    *leaf
	st   *scState // the connection's state; st.leaf differs from l after a config change
	call *callctx.Call
	di   balancer.DoneInfo // what Done got, while held
	done func(balancer.DoneInfo)
}

// attemptDoneOf returns the Done of an attempt of call sent on a
// connection of state st by leaf l.
func (l *leaf) attemptDoneOf(st *scState, call *callctx.Call) func(balancer.DoneInfo) {
	d, _ := l.dones.Get().(*attemptDone)
	if d == nil {
		d = new(attemptDone)
		d.done = d.end
	}
	d.l, d.st, d.call = l, st, call
	return d.done
}

// end is the attempt's Done.
func (d *attemptDone) end(di balancer.DoneInfo) {
	if neverStarted(di) {
		d.l.unpick(d.st.info.Locality)
		d.release()
		return
	}
	d.l.counter.end()
	if di.Err == nil && di.BytesSent {
		d.di = di
		err, known := d.call.Hold(d)
		if !known {
			return // the interceptors settle it, from now on
		}
		di.Err = err
	}
	d.report(di)
}

// Settle reports the attempt, held since it ended, as ended with err.
func (d *attemptDone) Settle(err error) {
	di := d.di
	di.Err = err
	d.report(di)
}

// Unanswered reports whether the server sent nothing on the attempt's
// stream.
func (d *attemptDone) Unanswered() bool { return !d.di.BytesReceived }

// report reports the attempt, which ended as di says, and puts d back in
// its leaf's pool.
func (d *attemptDone) report(di balancer.DoneInfo) {
	l, st := d.l, d.st
	if st.leaf == l {
		st.report(di)
	} else {
		// A config changed the leaf between the connection's refresh and
		// the pick: the RPC ends on the leaf that started it.
		l.report(CallInfo{Cluster: l.cluster, Leaf: l.name, Locality: st.info.Locality, Policy: l.policyName()}, di)
	}
	d.release()
}

// release puts d back in its leaf's pool.
func (d *attemptDone) release() {
	l := d.l
	d.l, d.st, d.call, d.di = nil, nil, nil, balancer.DoneInfo{}
	l.dones.Put(d)
}
