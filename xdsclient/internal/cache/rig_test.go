package cache_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/xdslens/xdslens/internal/xdswatch/demo/controlplane"
	"github.com/xdslens/xdslens/xdsclient/internal/cache"
	"github.com/xdslens/xdslens/xdsclient/internal/lane"
	"github.com/xdslens/xdslens/xdsclient/internal/transport"
	"github.com/xdslens/xdslens/xdsclient/internal/txn"
	"github.com/xdslens/xdslens/xdsclient/xdsresource"
)

// rig is a cache with one server, src, and entries of clusters (c1, c2,
// ...) and of endpoints (e1, ...), each watched once: what the watchers
// hear is recorded as lines ("c1 resource", "c1 error NotFound", "c1
// ambient InvalidArgument", "c1 cleared"), as are the timers and the
// cache's log lines.
type rig struct {
	t        *testing.T
	mu       txn.Mutex
	c        *cache.Cache
	src      *cache.Source
	g        *cache.Group
	cds, eds *cache.Kind
	entries  map[string]*cache.Entry
	ev       *observer
	noted    chan string // what watchers heard, not yet read
}

// observer records the cache's timer events and log lines.
type observer struct {
	mu   sync.Mutex
	seen []string
}

func (o *observer) add(s string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.seen = append(o.seen, s)
}

// take returns what was recorded since the last take.
func (o *observer) take() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := o.seen
	o.seen = nil
	return out
}

func (o *observer) TimerStarted(_ *txn.Tx, e *cache.Entry, src *cache.Source) {
	o.add("start " + e.Name() + " on " + src.URI)
}
func (o *observer) TimerStopped(_ *txn.Tx, e *cache.Entry, src *cache.Source) {
	o.add("stop " + e.Name() + " on " + src.URI)
}
func (o *observer) Logged(_ *txn.Tx, e *cache.Entry, _ *cache.Source, l cache.Log, _ string) {
	name := ""
	if e != nil {
		name = e.Name()
	}
	o.add(fmt.Sprintf("log %d %s", l, name))
}
func (*observer) StateChanged(*txn.Tx, *cache.Entry, cache.State, bool)                       {}
func (*observer) Applied(*txn.Tx, *cache.Source, string, string, string, bool, cache.Applied) {}

// newRig makes a rig whose server has features f and does-not-exist timer
// timeout (an hour if 0), with the entries named: "c..." clusters, "e..."
// endpoints.
func newRig(t *testing.T, f cache.Features, timeout time.Duration, names ...string) *rig {
	t.Helper()
	if timeout == 0 {
		timeout = time.Hour
	}
	ctx, cancel := context.WithCancel(context.Background())
	var lanes lane.Set
	r := &rig{t: t, entries: map[string]*cache.Entry{}, ev: &observer{}, noted: make(chan string, 256)}
	t.Cleanup(func() {
		tx := r.mu.Lock()
		r.c.CloseSource(tx, r.src)
		r.src.Lane.Close(tx)
		tx.Unlock()
		cancel()
		lanes.Wait()
	})
	r.c = cache.New(cache.Config{Mutex: &r.mu, NodeID: "node-1", Legacy: f.Legacy, Observer: r.ev,
		Deliver: func(int) func(int, cache.Delivery) any { return func(_ int, d cache.Delivery) any { return d } }})
	r.src = r.newSource("xds.test:443", f, timeout, &lanes, ctx)
	tx := r.mu.Lock()
	defer tx.Unlock()
	var err error
	if r.cds, err = r.c.Register(tx, cache.Describe(xdsresource.ClusterType)); err != nil {
		t.Fatal(err)
	}
	if r.eds, err = r.c.Register(tx, cache.Describe(xdsresource.EndpointsType)); err != nil {
		t.Fatal(err)
	}
	r.g = cache.NewGroup(tx, "#old", r.src)
	for _, name := range names {
		e := r.c.Add(tx, r.kind(name), name, r.g)
		r.c.Watch(tx, e, &cache.Watcher{Sink: name}, nil, nil, "")
		r.entries[name] = e
	}
	return r
}

// newSource makes another server of the rig's cache.
func (r *rig) newSource(uri string, f cache.Features, timeout time.Duration, lanes *lane.Set, ctx context.Context) *cache.Source {
	src := r.c.NewSource()
	src.URI, src.Features, src.Timeout = uri, f, timeout
	src.Transient = f.TransientTimer && !f.Legacy
	src.Lane = lane.New(lanes, ctx, r.run)
	return src
}

// kind returns the kind of the entry name.
func (r *rig) kind(name string) *cache.Kind {
	if strings.HasPrefix(name, "e") {
		return r.eds
	}
	return r.cds
}

// run is the lanes' callback: it records what a watcher heard.
func (r *rig) run(w *cache.Watcher, payload any, err error, ambient bool) {
	name := w.Sink.(string)
	var line string
	switch {
	case payload != nil:
		line = name + " resource"
	case err == nil:
		line = name + " cleared"
	case ambient:
		line = fmt.Sprintf("%s ambient %v", name, status.Code(err))
	default:
		line = fmt.Sprintf("%s error %v", name, status.Code(err))
	}
	r.noted <- line
}

// heard returns what the watchers heard since the last call, once every
// callback posted so far has run, sorted by resource name (each
// resource's in order).
func (r *rig) heard() []string {
	tx := r.mu.Lock()
	done := r.src.Lane.Barrier(tx)
	tx.Unlock()
	<-done
	var out []string
	for len(r.noted) > 0 {
		out = append(out, <-r.noted)
	}
	slices.SortStableFunc(out, func(a, b string) int { return strings.Compare(strings.Fields(a)[0], strings.Fields(b)[0]) })
	return out
}

// state returns the state of the entry name and whether it holds a
// resource.
func (r *rig) state(name string) (cache.State, bool) {
	tx := r.mu.Lock()
	defer tx.Unlock()
	return r.entries[name].State(tx)
}

// apply applies u from the rig's server, as a transport would hand it
// over: Known, with Subscribed the entries of its type.
func (r *rig) apply(u *transport.Update) cache.Applied {
	r.t.Helper()
	u.Known = true
	for name := range r.entries {
		if r.kind(name).URL == u.TypeURL {
			u.Subscribed++
		}
	}
	a, ok := r.c.Apply(r.src, u, func(*txn.Tx) bool { return true })
	if !ok {
		r.t.Fatalf("Apply of %s version %q: not applied", u.TypeURL, u.Version)
	}
	<-a.Wait
	return a
}

// res is a resource of an update as a row writes it.
type res struct {
	name    string
	invalid bool
	version string // delta: its own version
}

func valid(name string) res   { return res{name: name} }
func invalid(name string) res { return res{name: name, invalid: true} }

// bytesOf returns the serialized resource r: a cluster (an EDS one, or a
// STATIC one, which the client rejects, if invalid) or valid endpoints.
func bytesOf(t testing.TB, r res) []byte {
	t.Helper()
	var m proto.Message
	switch {
	case strings.HasPrefix(r.name, "e"):
		if r.invalid {
			t.Fatalf("no invalid endpoints in the rows: %s", r.name)
		}
		m = controlplane.Endpoints(r.name, "127.0.0.1:1")
	case r.invalid:
		m = &clusterv3.Cluster{Name: r.name, ClusterDiscoveryType: &clusterv3.Cluster_Type{Type: clusterv3.Cluster_STATIC}}
	default:
		m = controlplane.Cluster(r.name, "")
	}
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// sotw is a State of the World update of typeURL at version.
func sotw(t testing.TB, typeURL, version string, rs ...res) *transport.Update {
	u := &transport.Update{TypeURL: typeURL, Version: version, ShownVersion: version, Nonce: "n" + version}
	for _, r := range rs {
		u.Resources = append(u.Resources, transport.Resource{Value: bytesOf(t, r)})
	}
	return u
}

// delta is a delta update of typeURL, with its resources and removals.
func delta(t testing.TB, typeURL, version string, rs []res, removed ...string) *transport.Update {
	u := &transport.Update{TypeURL: typeURL, Version: version, ShownVersion: version, Nonce: "n" + version, Delta: true, Removed: removed}
	for _, r := range rs {
		v := r.version
		if v == "" {
			v = version
		}
		u.Resources = append(u.Resources, transport.Resource{Name: r.name, Version: v, ShownVersion: v, Value: bytesOf(t, r)})
	}
	return u
}

// withErrors adds TP3 errors to u.
func withErrors(u *transport.Update, errs ...transport.ResourceError) *transport.Update {
	u.Errors = append(u.Errors, errs...)
	return u
}

// tp3 is a TP3 error for name.
func tp3(name string, code codes.Code) transport.ResourceError {
	return transport.ResourceError{Name: name, Code: code, Message: "server says " + code.String()}
}

var (
	cdsURL = xdsresource.ClusterType.TypeURL()
	edsURL = xdsresource.EndpointsType.TypeURL()
)
