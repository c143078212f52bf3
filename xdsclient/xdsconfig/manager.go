package xdsconfig

import (
	"sync"
	"sync/atomic"

	"github.com/xdslens/xdslens/xdsclient/xdsresource/routeconfig"

	"github.com/xdslens/xdslens/xdsclient"
	"github.com/xdslens/xdslens/xdsclient/internal/goid"
	"github.com/xdslens/xdslens/xdsclient/xdsresource"
)

// Watcher receives the configs of one listener.
//
// Its calls are serialized and in order, never made under a lock of the
// manager or of the xDS client, and may call Manager.Stop. A slow Watcher
// does not hold up the xDS client: while it runs, newer configs replace
// the one waiting, so it always gets the latest.
type Watcher interface {
	// Update delivers a complete new Config. The Config is immutable.
	Update(*Config)
	// Error says that the whole config failed and RPCs must fail: the
	// Listener or its RouteConfiguration could not be had (a
	// ResourceChanged error), the Listener is not an API listener, or the
	// route configuration has no virtual host for the authority. err is a
	// *ResourceError (a gRPC status error with code UNAVAILABLE). A later
	// Update ends it.
	Error(err error)
}

// WatcherFuncs adapts two funcs to a Watcher; a nil func ignores its call.
type WatcherFuncs struct {
	OnUpdate func(*Config)
	OnError  func(error)
}

// Update calls f.OnUpdate.
func (f WatcherFuncs) Update(c *Config) {
	if f.OnUpdate != nil {
		f.OnUpdate(c)
	}
}

// Error calls f.OnError.
func (f WatcherFuncs) Error(err error) {
	if f.OnError != nil {
		f.OnError(err)
	}
}

// Manager is the dependency manager of one listener, made by Watch.
type Manager struct {
	// Read-only after Watch.
	client    *xdsclient.Client
	listener  string
	authority string
	w         Watcher
	o         options
	msg       messages
	lookupFn  lookupFunc

	wake chan struct{} // the state is dirty, or an error waits in pending
	quit chan struct{} // closed by Stop
	done chan struct{} // closed when the delivering goroutine ends
	// deliverer is the delivering goroutine's ID, read before its first
	// call of the Watcher (0 before); delivering is set while it calls
	// the Watcher, the only time a Stop can come from that goroutine.
	deliverer  atomic.Int64
	delivering atomic.Bool
	dnsWG      sync.WaitGroup

	// mu guards everything below. It is never held while a Watcher runs or
	// while a watch of the xDS client is cancelled (a cancel waits for the
	// watch's running callback, which may wait for mu).
	mu      sync.Mutex
	stopped bool
	dirty   bool // the state changed since the last update
	// structural: a change since the last update may change the graph or
	// what is ready, so the next update walks everything; otherwise only
	// the data of the states in the dirty lists changed (see patch).
	structural bool
	dataEvent  bool // the running event changed data only
	dirtyEDS   []*edsState
	dirtyDNS   []*dnsState
	dirtyCDS   []*clusterState
	lds        *watchState
	lis        *xdsresource.Listener // nil until a valid API listener
	lisVersion string                // the version of the response that carried lis
	ldsNote    string                // the Listener's ambient error
	rds        *watchState           // nil while the route config is inline
	rc         *routeconfig.Config
	rcVersion  string                   // the version of the response that carried rc
	vh         *routeconfig.VirtualHost // nil until rc has a virtual host for authority
	roots      []string                 // the clusters vh's routes name
	rdsNote    string                   // the RouteConfiguration's ambient error

	clusters  map[string]*clusterState
	endpoints map[string]*edsState
	dns       map[string]*dnsState

	walk      walk
	gen       uint64 // the walk's generation
	walkValid bool   // walk describes the current resources
	walkReady bool   // and everything in it has been heard from
	// nEDS and nDNS count the EDS resources and DNS names the walk
	// reached: those whose users are of generation gen.
	nEDS, nDNS int
	slots      []*ClusterConfig

	last       *Config // the last config made
	lastFailed bool    // an error was reported after last
	pending    output  // made, not yet delivered
	delivered  output  // the last config delivered
	cancels    []func()
}

// output is what the Watcher gets next: a config or an error.
type output struct {
	cfg *Config
	err error
}

func (o output) empty() bool { return o.cfg == nil && o.err == nil }

// holds reports whether the config of o has a slot for cluster name.
func (o output) holds(name string) bool { return o.cfg != nil && o.cfg.Clusters[name] != nil }

// watchState is one watch of the xDS client.
type watchState struct {
	name   string
	cancel func()
	dead   bool // no longer wanted: its callbacks are ignored
	heard  bool // a resource or an error came
}

type clusterState struct {
	watchState
	cluster *xdsresource.Cluster // nil unless valid
	// kind and endpoints (EDS name or DNS host) copy cluster's, so that a
	// walk of many clusters does not visit each resource.
	kind      xdsresource.ClusterKind
	endpoints string
	server    string
	version   string         // the version of cluster
	err       *ResourceError // the resource's error, when it failed
	note      string         // its ambient error
	// eds or dns is the state of its endpoints, as the last walk found it.
	eds *edsState
	dns *dnsState
	// graphErr caches the slot error of an invalid aggregate graph, whose
	// walk error says graphDetail.
	graphErr    *ResourceError
	graphDetail string
}

type edsState struct {
	watchState
	users                                       // the clusters that use it
	cla      *xdsresource.ClusterLoadAssignment // nil when it failed
	version  string                             // the version of cla
	dataNote string                             // its error, or what is odd in it
	note     string                             // its ambient error
}

// users are the clusters that the walk of generation gen found using an
// EDS resource or DNS name.
type users struct {
	gen   uint64
	users []*clusterState
}

// add adds st, and reports whether it is the first of generation gen.
func (u *users) add(gen uint64, st *clusterState) (first bool) {
	if u.gen != gen {
		clear(u.users)
		u.gen, u.users, first = gen, u.users[:0], true
	}
	u.users = append(u.users, st)
	return first
}

// Watch starts the dependency manager of listener for a channel whose
// authority is authority (the virtual host is chosen for it) on client c,
// and reports to w. Stop it with Manager.Stop.
func Watch(c *xdsclient.Client, listener, authority string, w Watcher, opts ...Option) *Manager {
	o := defaultOptions()
	for _, opt := range opts {
		opt.apply(&o)
	}
	m := &Manager{
		client:    c,
		listener:  listener,
		authority: authority,
		w:         w,
		o:         o,
		msg:       newMessages(c.Node().GetId()),
		wake:      make(chan struct{}, 1),
		quit:      make(chan struct{}),
		done:      make(chan struct{}),
		clusters:  make(map[string]*clusterState),
		endpoints: make(map[string]*edsState),
		dns:       make(map[string]*dnsState),
	}
	m.lookupFn = m.lookup
	started := make(chan struct{})
	go m.run(started)
	<-started
	m.mu.Lock()
	m.watchListener()
	m.mu.Unlock()
	return m
}

// Stop ends every watch and DNS resolution of the manager. Once it
// returns, the Watcher gets no call and no goroutine of the manager runs;
// called from the Watcher, it returns at once and the Watcher gets no
// further call. Stop may be called more than once.
func (m *Manager) Stop() {
	m.mu.Lock()
	if m.stopped {
		m.mu.Unlock()
		m.wait()
		return
	}
	m.stopped = true
	cancels := m.cancels
	m.cancels = nil
	if m.lds != nil {
		cancels = append(cancels, m.lds.cancel)
	}
	if m.rds != nil {
		cancels = append(cancels, m.rds.cancel)
	}
	for _, st := range m.clusters {
		cancels = append(cancels, st.cancel)
	}
	for _, st := range m.endpoints {
		cancels = append(cancels, st.cancel)
	}
	for _, st := range m.dns {
		st.cancel()
	}
	m.pending = output{}
	m.mu.Unlock()
	close(m.quit)
	for _, cancel := range cancels {
		cancel()
	}
	m.wait()
}

// wait returns once the manager's goroutines are over, but for the one
// that calls it.
func (m *Manager) wait() {
	m.dnsWG.Wait()
	if m.delivering.Load() && goid.Get() == m.deliverer.Load() {
		return
	}
	<-m.done
}

// ResolveNow asks for the host names of the LOGICAL_DNS clusters to be
// resolved again, no sooner than the DNS minimum interval after their last
// resolution (see WithDNSMinInterval). A load balancer calls it when the
// addresses it has fail.
func (m *Manager) ResolveNow() {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, st := range m.dns {
		select {
		case st.now <- struct{}{}:
		default:
		}
	}
}

// run makes the configs and delivers them to the Watcher, one call at a
// time. Events only change the state and mark it dirty; the config is made
// here, once for however many events came meanwhile, so that a burst of
// callbacks (the 10,000 clusters of one response) costs a few walks of the
// graph, not one per callback.
func (m *Manager) run(started chan<- struct{}) {
	defer close(m.done)
	close(started)
	for {
		select {
		case <-m.wake:
		case <-m.quit:
			return
		}
		for {
			m.mu.Lock()
			if m.stopped {
				m.mu.Unlock()
				return
			}
			if m.dirty {
				m.dirty = false
				m.update()
			}
			out := m.pending
			m.pending = output{}
			cancels := m.takeCancels()
			m.mu.Unlock()
			for _, cancel := range cancels {
				cancel()
			}
			if out.empty() {
				break
			}
			if m.deliverer.Load() == 0 {
				m.deliverer.Store(goid.Get())
			}
			m.delivering.Store(true)
			if out.cfg != nil {
				m.w.Update(out.cfg)
			} else {
				m.w.Error(out.err)
			}
			m.delivering.Store(false)
			if out.cfg != nil {
				m.afterDelivery(out)
			}
		}
	}
}

// afterDelivery drops the watches that only the previous config needed.
func (m *Manager) afterDelivery(out output) {
	m.mu.Lock()
	if m.stopped {
		m.mu.Unlock()
		return
	}
	m.delivered = out
	if m.walkValid {
		m.reconcile()
	}
	cancels := m.takeCancels()
	m.mu.Unlock()
	for _, cancel := range cancels {
		cancel()
	}
}

// enqueue hands out to the delivering goroutine, in place of anything not
// yet delivered.
func (m *Manager) enqueue(out output) {
	m.pending = out
	m.signal()
}

// signal wakes the goroutine that makes and delivers configs.
func (m *Manager) signal() {
	select {
	case m.wake <- struct{}{}:
	default:
	}
}

func (m *Manager) takeCancels() []func() {
	c := m.cancels
	m.cancels = nil
	return c
}

// handle runs event, a change of the state of a watch or DNS name, with
// mu held, unless the manager is stopped or the watch is no longer
// wanted (*dead); the config is then made again.
func (m *Manager) handle(dead *bool, event func()) {
	m.mu.Lock()
	if m.stopped || *dead {
		m.mu.Unlock()
		return
	}
	m.dataEvent = false
	event()
	if !m.dataEvent {
		m.structural = true
	}
	m.dirty = true
	m.signal()
	cancels := m.takeCancels()
	m.mu.Unlock()
	for _, cancel := range cancels {
		cancel()
	}
}
