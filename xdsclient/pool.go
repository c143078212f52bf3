package xdsclient

import (
	"fmt"
	"sort"
	"sync"

	"github.com/xdslens/xdslens/xdsclient/bootstrap"
	"github.com/xdslens/xdslens/xdsclient/internal/goid"
)

// ServerTarget is the pool key of the client used by xDS-enabled servers
// (gRFC A71).
const ServerTarget = "#server"

// Pool hands out one Client per target name (gRFC A71): the first Get of a
// target makes its client, later ones share it, and the client is closed
// when the last user releases it. Clients of different targets share
// nothing, so fallback in one does not move another. A Pool is safe for
// concurrent use.
type Pool struct {
	config func() (*bootstrap.Config, error)
	opts   []Option

	mu        sync.Mutex
	clients   map[string]*pooledClient
	observers map[int]*poolObserver
	nextObs   int
	// Observer calls are queued under mu, in the order of their events,
	// and run with mu released by one goroutine at a time (draining, on
	// goroutine drainer).
	events   []poolEvent
	draining bool
	drainer  int64
}

// poolEvent is one queued observer call: added or removed of c for o.
type poolEvent struct {
	o     *poolObserver
	c     *Client
	added bool
	done  chan struct{} // a marker: closed once the calls before it have run
}

type pooledClient struct {
	c    *Client
	refs int
}

type poolObserver struct {
	added, removed func(*Client)
	stopped        bool // guarded by Pool.mu
}

// NewPool makes a pool whose clients use cfg and opts (WithTarget is set by
// the pool).
func NewPool(cfg *bootstrap.Config, opts ...Option) *Pool {
	return newPool(func() (*bootstrap.Config, error) { return cfg, nil }, opts)
}

func newPool(config func() (*bootstrap.Config, error), opts []Option) *Pool {
	return &Pool{config: config, opts: opts, clients: map[string]*pooledClient{}, observers: map[int]*poolObserver{}}
}

var (
	defaultPoolOnce sync.Once
	defaultPool     *Pool
)

// DefaultPool returns the process-wide pool. Its clients use the bootstrap
// named by GRPC_XDS_BOOTSTRAP or GRPC_XDS_BOOTSTRAP_CONFIG, read at the
// first Get (an error then is returned by Get, and retried by the next).
// Tests should make their own pools with NewPool.
func DefaultPool() *Pool {
	defaultPoolOnce.Do(func() {
		var mu sync.Mutex
		var cfg *bootstrap.Config
		defaultPool = newPool(func() (*bootstrap.Config, error) {
			mu.Lock()
			defer mu.Unlock()
			if cfg != nil {
				return cfg, nil
			}
			c, err := bootstrap.FromEnv()
			if err != nil {
				return nil, err
			}
			cfg = c
			return cfg, nil
		}, nil)
	})
	return defaultPool
}

// Get returns the client for target, making it on first use, and a release
// func that the caller must call once when done with it.
func (p *Pool) Get(target string) (c *Client, release func(), err error) {
	p.mu.Lock()
	pc := p.clients[target]
	if pc == nil {
		cfg, err := p.config()
		if err != nil {
			p.mu.Unlock()
			return nil, nil, fmt.Errorf("xdsclient pool: target %q: %w", target, err)
		}
		c, err := New(cfg, append(append([]Option(nil), p.opts...), WithTarget(target))...)
		if err != nil {
			p.mu.Unlock()
			return nil, nil, fmt.Errorf("xdsclient pool: target %q: %w", target, err)
		}
		pc = &pooledClient{c: c}
		p.clients[target] = pc
		for _, o := range p.sortedObservers() {
			p.events = append(p.events, poolEvent{o: o, c: c, added: true})
		}
	}
	pc.refs++
	p.runEventsLocked()
	var once sync.Once
	return pc.c, func() { once.Do(func() { p.release(target, pc) }) }, nil
}

func (p *Pool) release(target string, pc *pooledClient) {
	p.mu.Lock()
	pc.refs--
	if pc.refs > 0 {
		p.mu.Unlock()
		return
	}
	delete(p.clients, target)
	for _, o := range p.sortedObservers() {
		p.events = append(p.events, poolEvent{o: o, c: pc.c})
	}
	p.runEventsLocked()
	// The observers have heard of the removal: close.
	pc.c.Close()
}

// runEventsLocked releases p.mu and returns once the observer calls queued
// so far have run, running them itself unless another goroutine does.
// Called from inside an observer call, it cannot wait for the calls queued
// behind that one, and returns at once.
func (p *Pool) runEventsLocked() {
	done := make(chan struct{})
	p.events = append(p.events, poolEvent{done: done})
	inside := p.draining && p.drainer == goid.Get()
	p.mu.Unlock()
	p.drain()
	if !inside {
		<-done
	}
}

// drain runs the queued observer calls, with p.mu released, unless another
// goroutine is running them (it runs these too).
func (p *Pool) drain() {
	p.mu.Lock()
	if p.draining {
		p.mu.Unlock()
		return
	}
	p.draining = true
	p.drainer = goid.Get()
	for len(p.events) > 0 {
		ev := p.events[0]
		p.events = p.events[1:]
		stopped := ev.o != nil && ev.o.stopped
		p.mu.Unlock()
		switch {
		case ev.done != nil:
			close(ev.done)
		case stopped:
		case ev.added && ev.o.added != nil:
			ev.o.added(ev.c)
		case !ev.added && ev.o.removed != nil:
			ev.o.removed(ev.c)
		}
		p.mu.Lock()
	}
	p.events = nil
	p.draining = false
	p.drainer = 0
	p.mu.Unlock()
}

// Clients returns the pool's clients, sorted by target.
func (p *Pool) Clients() []*Client {
	p.mu.Lock()
	out := make([]*Client, 0, len(p.clients))
	for _, pc := range p.clients {
		out = append(out, pc.c)
	}
	p.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Target() < out[j].Target() })
	return out
}

// Observe calls added for every client of the pool now and for every client
// made later, and removed for every client just before it is closed. It
// returns a func that stops the calls. Calls run one at a time, in the
// order of their events (a client's added before its removed), and never
// under a lock: they may call the Pool and the Client. Get returns once
// the added calls of the client it made have run, unless called from an
// observer call.
func (p *Pool) Observe(added, removed func(*Client)) (stop func()) {
	p.mu.Lock()
	id := p.nextObs
	p.nextObs++
	o := &poolObserver{added: added, removed: removed}
	p.observers[id] = o
	targets := make([]string, 0, len(p.clients))
	for t := range p.clients {
		targets = append(targets, t)
	}
	sort.Strings(targets)
	for _, t := range targets {
		p.events = append(p.events, poolEvent{o: o, c: p.clients[t].c, added: true})
	}
	p.runEventsLocked()
	return func() {
		p.mu.Lock()
		o.stopped = true
		delete(p.observers, id)
		p.mu.Unlock()
	}
}

func (p *Pool) sortedObservers() []*poolObserver {
	ids := make([]int, 0, len(p.observers))
	for id := range p.observers {
		ids = append(ids, id)
	}
	sort.Ints(ids)
	out := make([]*poolObserver, len(ids))
	for i, id := range ids {
		out[i] = p.observers[id]
	}
	return out
}
