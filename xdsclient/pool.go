package xdsclient

import (
	"fmt"
	"sort"
	"sync"

	"github.com/xdslens/xdslens/xdsclient/bootstrap"
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
}

type pooledClient struct {
	c    *Client
	refs int
}

type poolObserver struct {
	added, removed func(*Client)
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
			if o.added != nil {
				o.added(c)
			}
		}
	}
	pc.refs++
	p.mu.Unlock()
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
	obs := p.sortedObservers()
	p.mu.Unlock()
	for _, o := range obs {
		if o.removed != nil {
			o.removed(pc.c)
		}
	}
	pc.c.Close()
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
// returns a func that stops the calls. added runs under the pool's lock: it
// must not call the Pool (it may call the Client, for example AddHooks).
func (p *Pool) Observe(added, removed func(*Client)) (stop func()) {
	p.mu.Lock()
	defer p.mu.Unlock()
	id := p.nextObs
	p.nextObs++
	p.observers[id] = &poolObserver{added: added, removed: removed}
	if added != nil {
		targets := make([]string, 0, len(p.clients))
		for t := range p.clients {
			targets = append(targets, t)
		}
		sort.Strings(targets)
		for _, t := range targets {
			added(p.clients[t].c)
		}
	}
	return func() {
		p.mu.Lock()
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
