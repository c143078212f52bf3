package clusterlb

import (
	"cmp"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	"google.golang.org/grpc/balancer"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/xdslens/xdslens/internal/xdsduration"
)

// odConfig is a Cluster's outlier_detection as gRFC A50 reads it, with
// its defaults.
type odConfig struct {
	interval, baseEjection, maxEjection time.Duration
	maxEjectionPercent                  uint32
	successRate                         *successRateConfig       // nil: not run
	failurePercentage                   *failurePercentageConfig // nil: not run
}

type successRateConfig struct {
	stdevFactor, enforcement, minimumHosts, requestVolume uint32
}

type failurePercentageConfig struct {
	threshold, enforcement, minimumHosts, requestVolume uint32
}

// newODConfig converts m (validated by xdsresource) as gRFC A50 says:
// success rate ejection runs unless enforcing_success_rate is 0 (its
// default is 100), failure percentage ejection only when
// enforcing_failure_percentage is above 0. nil when neither runs.
func newODConfig(m *clusterv3.OutlierDetection) *odConfig {
	if m == nil {
		return nil
	}
	dur := func(d *durationpb.Duration, def time.Duration) time.Duration {
		if d == nil {
			return def
		}
		return d.AsDuration()
	}
	u32 := func(v *wrapperspb.UInt32Value, def uint32) uint32 {
		if v == nil {
			return def
		}
		return v.GetValue()
	}
	c := &odConfig{
		interval:           dur(m.GetInterval(), 10*time.Second),
		baseEjection:       dur(m.GetBaseEjectionTime(), 30*time.Second),
		maxEjectionPercent: u32(m.GetMaxEjectionPercent(), 10),
	}
	c.maxEjection = dur(m.GetMaxEjectionTime(), max(300*time.Second, c.baseEjection))
	if e := u32(m.GetEnforcingSuccessRate(), 100); e > 0 {
		c.successRate = &successRateConfig{
			stdevFactor:   u32(m.GetSuccessRateStdevFactor(), 1900),
			enforcement:   e,
			minimumHosts:  u32(m.GetSuccessRateMinimumHosts(), 5),
			requestVolume: u32(m.GetSuccessRateRequestVolume(), 100),
		}
	}
	if e := u32(m.GetEnforcingFailurePercentage(), 0); e > 0 {
		c.failurePercentage = &failurePercentageConfig{
			threshold:     u32(m.GetFailurePercentageThreshold(), 85),
			enforcement:   e,
			minimumHosts:  u32(m.GetFailurePercentageMinimumHosts(), 5),
			requestVolume: u32(m.GetFailurePercentageRequestVolume(), 50),
		}
	}
	if c.successRate == nil && c.failurePercentage == nil {
		return nil
	}
	return c
}

// Ejection algorithms, as EjectionInfo names them.
const (
	AlgorithmSuccessRate       = "success_rate"
	AlgorithmFailurePercentage = "failure_percentage"
)

// EjectionInfo describes an endpoint's ejection by outlier detection, or
// its return.
type EjectionInfo struct {
	Cluster, Leaf string
	// Address is the endpoint's address.
	Address string
	// Ejected is true for an ejection, false for a return.
	Ejected bool
	// Algorithm is AlgorithmSuccessRate or AlgorithmFailurePercentage for
	// an ejection; "" for a return.
	Algorithm string
	// Successes and Failures are the endpoint's RPCs of the interval that
	// decided an ejection; Threshold the success rate (0 to 1) under which,
	// or the failure percentage above which, endpoints were ejected.
	Successes, Failures int64
	Threshold           float64
	// Multiplier is the endpoint's ejection multiplier after the change:
	// an ejection lasts min(base_ejection_time * Multiplier,
	// max(base_ejection_time, max_ejection_time)).
	Multiplier int
	// EjectedEndpoints and Endpoints are, after the change, the leaf's
	// endpoints ejected and those under outlier detection.
	EjectedEndpoints, Endpoints int
}

// outlier is the outlier detection of one leaf cluster, over the
// endpoints of all its priorities (as C-core does since gRFC A75; gRFC
// A50's first design ran it per priority). Its map and timer are used on
// the Balancer's serializer; the counters are added to by RPCs, without a
// lock.
type outlier struct {
	b    *Balancer
	leaf string
	// via is the leaf the Ejection hook was last called for: it reports
	// the returns of a leaf that has left the config, or of a closed
	// Balancer, whose hook and names stay those of its last leaf.
	via *leaf

	mu        sync.Mutex // guards cfg and eps for NewSubConn, which may run off the serializer
	cfg       *odConfig
	eps       map[string]*odEndpoint // by address
	timer     *time.Timer
	timerBase time.Time // when the current interval started
}

// odEndpoint is one address under outlier detection.
type odEndpoint struct {
	addr    string
	buckets [2]odBucket
	active  atomic.Uint32 // the bucket RPCs count into

	// Used on the serializer:
	ejectedAt  time.Time // zero when not ejected
	multiplier int
	subConns   map[*implSubConn]struct{}
}

type odBucket struct{ successes, failures atomic.Int64 }

// record counts the end of an RPC sent to the endpoint.
func (e *odEndpoint) record(err error) {
	b := &e.buckets[e.active.Load()]
	if err == nil {
		b.successes.Add(1)
	} else {
		b.failures.Add(1)
	}
}

// swap starts a new interval and returns the counts of the last one.
func (e *odEndpoint) swap() (successes, failures int64) {
	old := e.active.Load()
	next := 1 - old
	e.buckets[next].successes.Store(0)
	e.buckets[next].failures.Store(0)
	e.active.Store(next)
	return e.buckets[old].successes.Load(), e.buckets[old].failures.Load()
}

func (e *odEndpoint) ejected() bool { return !e.ejectedAt.IsZero() }

// endpoint returns the state of addr, nil when addr is not under outlier
// detection.
func (o *outlier) endpoint(addr string) *odEndpoint {
	if o == nil {
		return nil
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.eps[addr]
}

// update applies cfg (nil when the cluster has no outlier detection, or
// none that runs) and the leaf's addresses; on the serializer. Endpoints
// keep their state while their address stays; a config without outlier
// detection returns every ejected endpoint (gRFC A50).
func (o *outlier) update(cfg *odConfig, addrs map[string]bool) {
	o.mu.Lock()
	old := o.eps
	o.cfg = cfg
	eps := make(map[string]*odEndpoint, len(addrs))
	for a := range addrs {
		e := old[a]
		if e == nil {
			e = &odEndpoint{addr: a, subConns: map[*implSubConn]struct{}{}}
		}
		eps[a] = e
	}
	if cfg == nil {
		eps = map[string]*odEndpoint{}
	}
	o.eps = eps
	o.mu.Unlock()
	for _, e := range sortedEjected(old) {
		if eps[e.addr] != e {
			o.uneject(e)
		}
	}
	if cfg == nil {
		stopTimer(&o.timer)
		o.timerBase = time.Time{}
		return
	}
	// gRFC A50: a new config keeps the interval's start; a first one
	// starts an interval with counters at zero.
	now := time.Now()
	if o.timerBase.IsZero() {
		o.timerBase = now
		for _, e := range eps {
			e.swap()
		}
	}
	stopTimer(&o.timer)
	o.arm(max(cfg.interval-now.Sub(o.timerBase), 0))
}

func (o *outlier) arm(d time.Duration) {
	var t *time.Timer
	t = time.AfterFunc(d, func() {
		o.b.s.schedule(func() {
			if o.timer == t && !o.b.closed {
				o.sweep()
			}
		})
	})
	o.timer = t
}

// stop stops the timer; the endpoints keep their state.
// stop stops the detection of a closed Balancer: its ejected endpoints are
// reported returned, so that whoever counts ejections does not keep them
// ejected; their connections are closing and are not told.
func (o *outlier) stop() {
	stopTimer(&o.timer)
	o.mu.Lock()
	eps := o.eps
	o.eps = map[string]*odEndpoint{}
	o.mu.Unlock()
	for _, e := range sortedEjected(eps) {
		e.ejectedAt = time.Time{}
		o.report(e, false, EjectionInfo{})
	}
}

// sortedEjected returns the ejected endpoints of eps, by address.
func sortedEjected(eps map[string]*odEndpoint) []*odEndpoint {
	var out []*odEndpoint
	for _, e := range eps {
		if e.ejected() {
			out = append(out, e)
		}
	}
	sortCounts(out, func(e *odEndpoint) string { return e.addr })
	return out
}

// sweep is one interval's analysis (gRFC A50): the counters are swapped,
// the algorithms run, ejection multipliers decay and ejections end.
func (o *outlier) sweep() {
	now := time.Now()
	o.timerBase = now
	o.arm(o.cfg.interval)
	cfg := o.cfg
	type count struct {
		e          *odEndpoint
		succ, fail int64
	}
	o.mu.Lock()
	counts := make([]count, 0, len(o.eps))
	for _, e := range o.eps {
		s, f := e.swap()
		counts = append(counts, count{e, s, f})
	}
	o.mu.Unlock()
	// Endpoints in the order of their addresses, so that runs are
	// repeatable.
	sortCounts(counts, func(c count) string { return c.e.addr })
	ejected := 0
	for _, c := range counts {
		if c.e.ejected() {
			ejected++
		}
	}
	canEject := func() bool {
		return len(counts) > 0 && 100*float64(ejected)/float64(len(counts)) < float64(cfg.maxEjectionPercent)
	}
	eject := func(c count, algorithm string, threshold float64) {
		c.e.ejectedAt = now
		c.e.multiplier++
		ejected++
		o.setEjected(c.e, true, EjectionInfo{Algorithm: algorithm, Successes: c.succ, Failures: c.fail, Threshold: threshold})
	}
	if sr := cfg.successRate; sr != nil {
		var rates []float64
		for _, c := range counts {
			if c.succ+c.fail >= int64(sr.requestVolume) {
				rates = append(rates, float64(c.succ)/float64(c.succ+c.fail))
			}
		}
		if len(rates) >= int(sr.minimumHosts) && len(rates) > 0 {
			var mean, variance float64
			for _, r := range rates {
				mean += r
			}
			mean /= float64(len(rates))
			for _, r := range rates {
				variance += (r - mean) * (r - mean)
			}
			stdev := math.Sqrt(variance / float64(len(rates)))
			threshold := mean - stdev*float64(sr.stdevFactor)/1000
			for _, c := range counts {
				if !canEject() {
					break
				}
				total := c.succ + c.fail
				if c.e.ejected() || total < int64(sr.requestVolume) {
					continue
				}
				if float64(c.succ)/float64(total) < threshold && o.b.draw(100) < sr.enforcement {
					eject(c, AlgorithmSuccessRate, threshold)
				}
			}
		}
	}
	if fp := cfg.failurePercentage; fp != nil && len(counts) >= int(fp.minimumHosts) {
		for _, c := range counts {
			if !canEject() {
				break
			}
			total := c.succ + c.fail
			if c.e.ejected() || total < int64(fp.requestVolume) || total == 0 {
				continue
			}
			if 100*float64(c.fail)/float64(total) > float64(fp.threshold) && o.b.draw(100) < fp.enforcement {
				eject(c, AlgorithmFailurePercentage, float64(fp.threshold))
			}
		}
	}
	for _, c := range counts {
		e := c.e
		switch {
		case !e.ejected():
			if e.multiplier > 0 {
				e.multiplier--
			}
		case e.ejectedAt == now:
			// ejected in this sweep
		default:
			if !now.Before(e.ejectedAt.Add(ejectionTime(cfg.baseEjection, cfg.maxEjection, e.multiplier))) {
				o.uneject(e)
			}
		}
	}
}

// ejectionTime is how long an ejection with the given multiplier lasts
// (gRFC A50): min(base * multiplier, max(base, maxEjection)), the product
// saturated, so that a base_ejection_time of centuries ejects for as long
// as a time.Duration says instead of wrapping to a negative time that
// returns the endpoint at the next interval.
func ejectionTime(base, maxEjection time.Duration, multiplier int) time.Duration {
	return min(xdsduration.Times(base, int64(multiplier)), max(base, maxEjection))
}

// uneject returns e.
func (o *outlier) uneject(e *odEndpoint) {
	e.ejectedAt = time.Time{}
	o.setEjected(e, false, EjectionInfo{})
}

// setEjected tells e's connections, and the Ejection hook.
func (o *outlier) setEjected(e *odEndpoint, ejected bool, info EjectionInfo) {
	for w := range e.subConns {
		w.setEjected(ejected)
	}
	o.report(e, ejected, info)
}

// report calls the Ejection hook of the leaf, or of its last leaf when it
// has left the config.
func (o *outlier) report(e *odEndpoint, ejected bool, info EjectionInfo) {
	l := o.b.leafNamed(o.leaf)
	if l == nil {
		l = o.via
	}
	o.via = l
	if l == nil || l.hooks.Ejection == nil {
		return
	}
	info.Cluster, info.Leaf, info.Address, info.Ejected, info.Multiplier = l.cluster, l.name, e.addr, ejected, e.multiplier
	o.mu.Lock()
	info.Endpoints = len(o.eps)
	for _, x := range o.eps {
		if x.ejected() {
			info.EjectedEndpoints++
		}
	}
	o.mu.Unlock()
	l.hooks.Ejection(info)
}

// ejectionState is what an ejected connection's health listener is told.
var ejectionState = balancer.SubConnState{ConnectivityState: connectivity.TransientFailure}

// sortCounts sorts xs by key.
func sortCounts[T any](xs []T, key func(T) string) {
	slices.SortFunc(xs, func(a, b T) int { return cmp.Compare(key(a), key(b)) })
}

// draw returns a uniformly distributed number in [0, n), from the
// Config's Rand when it has one.
func (b *Balancer) draw(n uint32) uint32 {
	if b.cfg != nil && b.cfg.Rand != nil {
		return b.cfg.Rand(n)
	}
	return rand.Uint32N(n)
}

// leafNamed returns the current leaf of that name, nil if there is none.
func (b *Balancer) leafNamed(name string) *leaf {
	for _, l := range b.leaves {
		if l.name == name {
			return l
		}
	}
	return nil
}

// updateOutliers gives each leaf's outlier detection its config and the
// addresses of all its priorities, makes those of new leaves and stops
// those of leaves gone; on the serializer.
func (b *Balancer) updateOutliers(cfg *Config, specs []prioritySpec) {
	addrs := map[string]map[string]bool{}
	for _, s := range specs {
		m := addrs[s.leaf.name]
		if m == nil {
			m = map[string]bool{}
			addrs[s.leaf.name] = m
		}
		for _, ep := range s.endpoints {
			for _, a := range ep.Addresses {
				m[a.Addr] = true
			}
		}
	}
	next := make(map[string]*outlier, len(cfg.Leaves))
	for _, slot := range cfg.Leaves {
		var od *odConfig
		if slot.Err == nil {
			od = newODConfig(slot.Cluster.OutlierDetection)
		}
		o := b.outliers[slot.Name]
		if o == nil {
			if od == nil {
				continue
			}
			o = &outlier{b: b, leaf: slot.Name}
		}
		o.update(od, addrs[slot.Name])
		if od != nil {
			next[slot.Name] = o
		}
	}
	for name, o := range b.outliers {
		if next[name] != o {
			o.update(nil, nil)
		}
	}
	b.outliers = next
}
