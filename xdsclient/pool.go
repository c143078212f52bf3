package xdsclient

import (
	"fmt"
	"iter"
	"maps"
	"slices"
	"sort"
	"sync"

	"github.com/xdslens/xdslens/xdsclient/bootstrap"
	"github.com/xdslens/xdslens/xdsclient/internal/goid"
	"github.com/xdslens/xdslens/xdsclient/internal/txn"
	"github.com/xdslens/xdslens/xdsclient/internal/xerr"
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

	// mu is the pool's lock: s is reached only through the Tx it gives.
	mu txn.Mutex
	s  txn.Guarded[poolState]
}

type poolState struct {
	clients   map[string]*pooledClient
	observers map[int]*poolObserver
	nextObs   int
	// Observer calls are queued under the lock, in the order of their
	// events, and run with it released by one goroutine at a time
	// (draining); drainer is that goroutine's ID, read when it makes its
	// first observer call (0 before: no call from inside one can come).
	events   []poolEvent
	draining bool
	drainer  int64
}

// poolEvent is one queued observer call: added or removed of c for the
// observer id, o.
type poolEvent struct {
	id    int
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
}

// NewPool makes a pool whose clients use cfg and opts (WithTarget is set by
// the pool).
func NewPool(cfg *bootstrap.Config, opts ...Option) *Pool {
	return newPool(func() (*bootstrap.Config, error) { return cfg, nil }, opts)
}

func newPool(config func() (*bootstrap.Config, error), opts []Option) *Pool {
	p := &Pool{config: config, opts: opts}
	tx := p.mu.Lock()
	*p.s.Of(tx) = poolState{clients: map[string]*pooledClient{}, observers: map[int]*poolObserver{}}
	tx.Unlock()
	return p
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
	tx := p.mu.Lock()
	st := p.s.Of(tx)
	pc := st.clients[target]
	if pc == nil {
		cfg, err := p.config()
		if err != nil {
			tx.Unlock()
			return nil, nil, fmt.Errorf("xdsclient pool: target %s: %w", xerr.Shown(target), err)
		}
		c, err := New(cfg, append(append([]Option(nil), p.opts...), WithTarget(target))...)
		if err != nil {
			tx.Unlock()
			return nil, nil, fmt.Errorf("xdsclient pool: target %s: %w", xerr.Shown(target), err)
		}
		pc = &pooledClient{c: c}
		st.clients[target] = pc
		for id, o := range st.sortedObservers() {
			st.events = append(st.events, poolEvent{id: id, o: o, c: c, added: true})
		}
	}
	pc.refs++
	p.runEvents(tx)
	var once sync.Once
	return pc.c, func() { once.Do(func() { p.release(target, pc) }) }, nil
}

func (p *Pool) release(target string, pc *pooledClient) {
	tx := p.mu.Lock()
	st := p.s.Of(tx)
	pc.refs--
	if pc.refs > 0 {
		tx.Unlock()
		return
	}
	delete(st.clients, target)
	for id, o := range st.sortedObservers() {
		st.events = append(st.events, poolEvent{id: id, o: o, c: pc.c})
	}
	p.runEvents(tx)
	// The observers have heard of the removal: close.
	pc.c.Close()
}

// runEvents releases the lock, tx, and returns once the observer calls
// queued so far have run, running them itself unless another goroutine
// does. Called from inside an observer call, it cannot wait for the calls
// queued behind that one, and returns at once.
func (p *Pool) runEvents(tx *txn.Tx) {
	st := p.s.Of(tx)
	done := make(chan struct{})
	st.events = append(st.events, poolEvent{done: done})
	inside := st.draining && st.drainer != 0 && st.drainer == goid.Get()
	tx.Unlock()
	p.drain()
	if !inside {
		<-done
	}
}

// drain runs the queued observer calls, with the lock released, unless
// another goroutine is running them (it runs these too).
func (p *Pool) drain() {
	tx := p.mu.Lock()
	st := p.s.Of(tx)
	if st.draining {
		tx.Unlock()
		return
	}
	st.draining = true
	for len(st.events) > 0 {
		ev := st.events[0]
		st.events = st.events[1:]
		var call func(*Client)
		switch {
		case ev.done != nil, ev.o != nil && st.observers[ev.id] != ev.o: // a marker; a stopped observer
		case ev.added:
			call = ev.o.added
		default:
			call = ev.o.removed
		}
		if call != nil && st.drainer == 0 {
			st.drainer = goid.Get()
		}
		tx.Unlock()
		if ev.done != nil {
			close(ev.done)
		} else if call != nil {
			call(ev.c)
		}
		tx = p.mu.Lock()
		st = p.s.Of(tx)
	}
	st.events = nil
	st.draining = false
	st.drainer = 0
	tx.Unlock()
}

// Clients returns the pool's clients, sorted by target.
func (p *Pool) Clients() []*Client {
	tx := p.mu.Lock()
	st := p.s.Of(tx)
	out := make([]*Client, 0, len(st.clients))
	for _, pc := range st.clients {
		out = append(out, pc.c)
	}
	tx.Unlock()
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
	tx := p.mu.Lock()
	st := p.s.Of(tx)
	id := st.nextObs
	st.nextObs++
	o := &poolObserver{added: added, removed: removed}
	st.observers[id] = o
	targets := make([]string, 0, len(st.clients))
	for t := range st.clients {
		targets = append(targets, t)
	}
	sort.Strings(targets)
	for _, t := range targets {
		st.events = append(st.events, poolEvent{id: id, o: o, c: st.clients[t].c, added: true})
	}
	p.runEvents(tx)
	return func() {
		tx := p.mu.Lock()
		delete(p.s.Of(tx).observers, id)
		tx.Unlock()
	}
}

// sortedObservers yields the observers by id, in the order they came.
func (st *poolState) sortedObservers() iter.Seq2[int, *poolObserver] {
	return func(yield func(int, *poolObserver) bool) {
		for _, id := range slices.Sorted(maps.Keys(st.observers)) {
			if !yield(id, st.observers[id]) {
				return
			}
		}
	}
}
