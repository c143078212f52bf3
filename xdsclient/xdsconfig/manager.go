package xdsconfig

import (
	"sync"
	"sync/atomic"

	"github.com/xdslens/xdslens/xdsclient"
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

	wake      chan struct{} // a config or error waits in pending
	quit      chan struct{} // closed by Stop
	done      chan struct{} // closed when the delivering goroutine ends
	deliverer atomic.Int64  // the delivering goroutine's ID
	dnsWG     sync.WaitGroup

	// mu guards everything below. It is never held while a Watcher runs or
	// while a watch of the xDS client is cancelled (a cancel waits for the
	// watch's running callback, which may wait for mu).
	mu      sync.Mutex
	stopped bool
	lds     *watchState
	lis     *xdsresource.Listener // nil until a valid API listener
	ldsNote string                // the Listener's ambient error
	rds     *watchState           // nil while the route config is inline
	rc      *xdsresource.RouteConfiguration
	vh      *xdsresource.VirtualHost // nil until rc has a virtual host for authority
	roots   []string                 // the clusters vh's routes name
	rdsNote string                   // the RouteConfiguration's ambient error

	clusters  map[string]*clusterState
	endpoints map[string]*edsState
	dns       map[string]*dnsState

	walk      walk
	walkValid bool            // walk describes the current resources
	wantEDS   map[string]bool // EDS names the walk reached
	wantDNS   map[string]bool // DNS names the walk reached
	slots     []*ClusterConfig

	last       *Config // the last config made
	lastFailed bool    // an error was reported after last
	pending    output  // made, not yet delivered
	delivered  output  // the last config delivered
	cancels    []func()
}

// output is what the Watcher gets next: a config, with the endpoint names
// it holds, or an error.
type output struct {
	cfg      *Config
	err      error
	eds, dns map[string]bool
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
	server  string
	err     *ResourceError // the resource's error, when it failed
	note    string         // its ambient error
	// graphErr caches the slot error of an invalid aggregate graph, whose
	// walk error says graphDetail.
	graphErr    *ResourceError
	graphDetail string
}

type edsState struct {
	watchState
	cla      *xdsresource.ClusterLoadAssignment // nil when it failed
	dataNote string                             // its error, or what is odd in it
	note     string                             // its ambient error
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
		wantEDS:   make(map[string]bool),
		wantDNS:   make(map[string]bool),
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
	if goid() != m.deliverer.Load() {
		<-m.done
	}
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

// run delivers what the manager makes to the Watcher, one call at a time.
func (m *Manager) run(started chan<- struct{}) {
	defer close(m.done)
	m.deliverer.Store(goid())
	close(started)
	for {
		select {
		case <-m.wake:
		case <-m.quit:
			return
		}
		for {
			m.mu.Lock()
			out := m.pending
			m.pending = output{}
			if m.stopped || out.empty() {
				m.mu.Unlock()
				break
			}
			m.mu.Unlock()
			if out.cfg != nil {
				m.w.Update(out.cfg)
				m.afterDelivery(out)
			} else {
				m.w.Error(out.err)
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
// wanted (*dead); then it makes the config again.
func (m *Manager) handle(dead *bool, event func()) {
	m.mu.Lock()
	if m.stopped || *dead {
		m.mu.Unlock()
		return
	}
	event()
	m.update()
	cancels := m.takeCancels()
	m.mu.Unlock()
	for _, cancel := range cancels {
		cancel()
	}
}
