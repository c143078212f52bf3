package lrs

import (
	"iter"
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// Locality names the locality of the endpoints a call went to, as the
// ClusterLoadAssignment gave it.
type Locality struct {
	Region, Zone, SubZone string
}

// Store holds the loads that a data plane records for the clusters it
// reports to one LRS server, per cluster and EDS service name. It is safe
// for concurrent use.
type Store struct {
	mu       sync.Mutex
	clusters map[clusterKey]*ClusterLoad // guarded by mu
}

type clusterKey struct{ cluster, service string }

// NewStore returns an empty Store.
func NewStore() *Store {
	return &Store{clusters: map[clusterKey]*ClusterLoad{}}
}

// Cluster returns the load of cluster and EDS service name service, made on
// first use. Every caller asking for the same pair shares one ClusterLoad.
func (s *Store) Cluster(cluster, service string) *ClusterLoad {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := clusterKey{cluster, service}
	l := s.clusters[k]
	if l == nil {
		l = &ClusterLoad{cluster: cluster, service: service, lastTaken: time.Now()}
		s.clusters[k] = l
	}
	return l
}

// take returns what every cluster recorded since its last report and
// resets those counts, for the clusters named in names (all of them when
// all is set). Clusters with nothing to report are left out.
func (s *Store) take(names []string, all bool, now time.Time) []clusterSnapshot {
	s.mu.Lock()
	loads := make([]*ClusterLoad, 0, len(s.clusters))
	if all {
		for _, l := range s.clusters {
			loads = append(loads, l)
		}
	} else {
		wanted := make(map[string]bool, len(names))
		for _, n := range names {
			wanted[n] = true
		}
		for k, l := range s.clusters {
			if wanted[k.cluster] {
				loads = append(loads, l)
			}
		}
	}
	s.mu.Unlock()
	var out []clusterSnapshot
	for _, l := range loads {
		if snap, ok := l.take(now); ok {
			out = append(out, snap)
		}
	}
	return out
}

// restore gives back to the store what take returned, when the report
// could not be written: the counts go into the next report, and its
// load_report_interval covers the time of both.
func (s *Store) restore(snaps []clusterSnapshot) {
	s.mu.Lock()
	loads := make([]*ClusterLoad, len(snaps))
	for i, snap := range snaps {
		loads[i] = s.clusters[clusterKey{snap.cluster, snap.service}]
	}
	s.mu.Unlock()
	for i, l := range loads {
		if l != nil {
			l.restore(&snaps[i])
		}
	}
}

// ClusterLoad records the load of one cluster and EDS service name. Its
// methods are meant to be called on every RPC: they take no lock once a
// locality (or drop category, or metric name) has been seen, and allocate
// nothing.
//
// A count recorded at the instant a report is taken lands in that report
// or the next one, never in both and never in neither; a server load's
// value and its count may land in successive reports, so that the sums
// over all reports are exact.
type ClusterLoad struct {
	cluster, service string

	localities cowMap[Locality, localityLoad]
	drops      cowMap[string, atomic.Uint64]
	totalDrops atomic.Uint64

	mu        sync.Mutex
	lastTaken time.Time // guarded by mu: when the last report was taken
}

// localityLoad holds the counts of one locality.
type localityLoad struct {
	// issued is signed: CallNotStarted may take back a call that a report
	// has counted already, and the next reports count it off.
	issued             atomic.Int64
	succeeded, errored atomic.Uint64
	inProgress         atomic.Int64
	metrics            cowMap[string, metricLoad]
}

// metricLoad is the sum and count of one named server load.
type metricLoad struct {
	count atomic.Uint64
	sum   atomic.Uint64 // float64 bits
}

// add records n calls whose values sum to sum.
func (m *metricLoad) add(sum float64, n uint64) {
	for {
		old := m.sum.Load()
		if m.sum.CompareAndSwap(old, math.Float64bits(math.Float64frombits(old)+sum)) {
			break
		}
	}
	m.count.Add(n)
}

// Cluster returns the cluster name the load is recorded for.
func (l *ClusterLoad) Cluster() string { return l.cluster }

// Service returns the EDS service name the load is recorded for.
func (l *ClusterLoad) Service() string { return l.service }

// CallStarted records a call sent to an endpoint of locality: one more
// issued call and one more in progress.
func (l *ClusterLoad) CallStarted(locality Locality) {
	ll := l.localities.loadOrAdd(locality)
	ll.inProgress.Add(1)
	ll.issued.Add(1)
}

// CallNotStarted takes back the CallStarted of a call that never started
// on a connection: one recorded when an endpoint was picked for it, and
// that gRPC-Go then found no longer ready, and picked again. It counts
// neither as issued nor in progress, as gRPC C-core counts a call only
// once it starts on a connection; CallFinished must not be called for it.
// When a report has counted it as issued already, the next ones count one
// call fewer, so that the sums over all reports are exact.
func (l *ClusterLoad) CallNotStarted(locality Locality) {
	ll := l.localities.load(locality)
	if ll == nil {
		return
	}
	ll.inProgress.Add(-1)
	ll.issued.Add(-1)
}

// CallFinished records the end of a call that CallStarted recorded: it
// succeeded when err is nil, else it failed. A call finished in a locality
// where no call started is ignored.
func (l *ClusterLoad) CallFinished(locality Locality, err error) {
	ll := l.localities.load(locality)
	if ll == nil {
		return
	}
	ll.inProgress.Add(-1)
	if err == nil {
		ll.succeeded.Add(1)
	} else {
		ll.errored.Add(1)
	}
}

// CallDropped records a call dropped before it was sent, by the drop
// category of the ClusterLoadAssignment's drop_overloads. An empty
// category (a call dropped by circuit breaking, for instance) counts in
// total_dropped_requests only.
func (l *ClusterLoad) CallDropped(category string) {
	l.totalDrops.Add(1)
	if category != "" {
		l.drops.loadOrAdd(category).Add(1)
	}
}

// CallServerLoad records a named load that the backend of locality
// reported for a call (an ORCA metric, for instance): reports carry the
// count of calls that reported it and the sum of the values. A load for a
// locality where no call started is ignored.
func (l *ClusterLoad) CallServerLoad(locality Locality, name string, value float64) {
	ll := l.localities.load(locality)
	if ll == nil {
		return
	}
	ll.metrics.loadOrAdd(name).add(value, 1)
}

// clusterSnapshot is what one cluster recorded between two reports.
type clusterSnapshot struct {
	cluster, service string
	totalDrops       uint64
	drops            map[string]uint64
	localities       []localitySnapshot
	interval         time.Duration
	since            time.Time // the lastTaken the snapshot replaced
}

type localitySnapshot struct {
	locality                   Locality
	issued, succeeded, errored uint64
	inProgress                 int64
	metrics                    map[string]metricSnapshot
	ll                         *localityLoad
}

type metricSnapshot struct {
	count uint64
	sum   float64
}

// take resets the counts of l and returns them; ok is false when there is
// nothing to report (no call, no drop, nothing in progress).
func (l *ClusterLoad) take(now time.Time) (snap clusterSnapshot, ok bool) {
	snap = clusterSnapshot{cluster: l.cluster, service: l.service}
	snap.totalDrops = l.totalDrops.Swap(0)
	for cat, n := range l.drops.all() {
		if v := n.Swap(0); v > 0 {
			if snap.drops == nil {
				snap.drops = map[string]uint64{}
			}
			snap.drops[cat] = v
		}
	}
	for loc, ll := range l.localities.all() {
		issued := ll.issued.Swap(0)
		if issued < 0 {
			// Calls taken back after a report counted them: the
			// reports to come count them off.
			ll.issued.Add(issued)
			issued = 0
		}
		ls := localitySnapshot{
			locality:   loc,
			issued:     uint64(issued),
			succeeded:  ll.succeeded.Swap(0),
			errored:    ll.errored.Swap(0),
			inProgress: ll.inProgress.Load(),
			ll:         ll,
		}
		for name, m := range ll.metrics.all() {
			c := m.count.Swap(0)
			s := math.Float64frombits(m.sum.Swap(0))
			if c == 0 && s == 0 {
				continue
			}
			if ls.metrics == nil {
				ls.metrics = map[string]metricSnapshot{}
			}
			ls.metrics[name] = metricSnapshot{count: c, sum: s}
		}
		if ls.issued == 0 && ls.succeeded == 0 && ls.errored == 0 && ls.inProgress == 0 && ls.metrics == nil {
			continue
		}
		snap.localities = append(snap.localities, ls)
	}
	l.mu.Lock()
	snap.since = l.lastTaken
	snap.interval = now.Sub(l.lastTaken)
	l.lastTaken = now
	l.mu.Unlock()
	ok = snap.totalDrops > 0 || len(snap.localities) > 0
	return snap, ok
}

// restore adds the counts of snap back into l.
func (l *ClusterLoad) restore(snap *clusterSnapshot) {
	l.totalDrops.Add(snap.totalDrops)
	for cat, v := range snap.drops {
		l.drops.loadOrAdd(cat).Add(v)
	}
	for _, ls := range snap.localities {
		ll := ls.ll
		ll.issued.Add(int64(ls.issued))
		ll.succeeded.Add(ls.succeeded)
		ll.errored.Add(ls.errored)
		for name, m := range ls.metrics {
			ll.metrics.loadOrAdd(name).add(m.sum, m.count)
		}
	}
	l.mu.Lock()
	if snap.since.Before(l.lastTaken) {
		l.lastTaken = snap.since
	}
	l.mu.Unlock()
}

// cowMap is a map that is read without a lock: readers load the current
// table through an atomic pointer; a writer copies it under mu. It suits
// keys that are added rarely and read on every call; entries are never
// removed. Up to linearMax keys are found by comparing them in turn, which
// for a few string keys costs less than hashing one.
type cowMap[K comparable, V any] struct {
	t  atomic.Pointer[cowTable[K, V]]
	mu sync.Mutex
}

// linearMax is the size up to which a cowMap is searched linearly.
const linearMax = 8

// cowTable is one version of a cowMap's content: keys and vals side by
// side, and m, the same as a map, once there are more than linearMax keys.
type cowTable[K comparable, V any] struct {
	keys []K
	vals []*V
	m    map[K]*V
}

func (t *cowTable[K, V]) get(k K) *V {
	if t.m != nil {
		return t.m[k]
	}
	for i := range t.keys {
		if t.keys[i] == k {
			return t.vals[i]
		}
	}
	return nil
}

// load returns the value of k, nil if there is none.
func (c *cowMap[K, V]) load(k K) *V {
	if t := c.t.Load(); t != nil {
		return t.get(k)
	}
	return nil
}

// loadOrAdd returns the value of k, adding a zero value if there is none.
func (c *cowMap[K, V]) loadOrAdd(k K) *V {
	if v := c.load(k); v != nil {
		return v
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	old := c.t.Load()
	if old == nil {
		old = &cowTable[K, V]{}
	} else if v := old.get(k); v != nil {
		return v
	}
	v := new(V)
	n := &cowTable[K, V]{
		keys: append(old.keys[:len(old.keys):len(old.keys)], k),
		vals: append(old.vals[:len(old.vals):len(old.vals)], v),
	}
	if len(n.keys) > linearMax {
		n.m = make(map[K]*V, len(n.keys))
		for i, key := range n.keys {
			n.m[key] = n.vals[i]
		}
	}
	c.t.Store(n)
	return v
}

// all yields every key and value.
func (c *cowMap[K, V]) all() iter.Seq2[K, *V] {
	return func(yield func(K, *V) bool) {
		t := c.t.Load()
		if t == nil {
			return
		}
		for i := range t.keys {
			if !yield(t.keys[i], t.vals[i]) {
				return
			}
		}
	}
}
