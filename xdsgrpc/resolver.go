package xdsgrpc

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"

	"google.golang.org/grpc"
	"google.golang.org/grpc/attributes"
	"google.golang.org/grpc/resolver"
	"google.golang.org/grpc/serviceconfig"

	"github.com/xdslens/xdslens/internal/certstore"
	"github.com/xdslens/xdslens/internal/handshake"
	"github.com/xdslens/xdslens/internal/hookqueue"
	"github.com/xdslens/xdslens/xdsclient"
	"github.com/xdslens/xdslens/xdsclient/xdsconfig"
	"github.com/xdslens/xdslens/xdsgrpc/history"
	"github.com/xdslens/xdslens/xdsgrpc/internal/clusterlb"
)

// Scheme is the URI scheme of the targets this package resolves:
// "xdslens:///LISTENER" or "xdslens://AUTHORITY/LISTENER". It is not gRPC's
// "xds", so that grpc-go's own xDS resolver can be used in the same program.
const Scheme = "xdslens"

// Builder resolves "xdslens:" targets with the clients of one
// xdsclient.Pool. One Builder may serve many channels; channels of the same
// target share the pool's client for it, and so its cache, its connections
// to xDS servers and its circuit-breaker counters.
type Builder struct {
	pool *xdsclient.Pool
	opts options

	// hooks are the composed hooks, read by every pick without a lock.
	hooks atomic.Pointer[Hooks]

	mu       sync.Mutex
	hookList []*Hooks                  // guarded by mu
	clients  map[*xdsclient.Client]int // the clients of live channels, with their counts; guarded by mu
	// channels are the live channels' resolvers by canonical target;
	// guarded by mu.
	channels map[string][]*xdsResolver
	// conns maps the *grpc.ClientConn of a channel to its resolver, once
	// known (see channelOf).
	conns sync.Map
	// interceptors is set once DialOptions gave the interceptors out:
	// channels without them cannot apply routes' deadlines, retries and
	// filters, and are told so when they start (warned).
	interceptors atomic.Bool
	warned       atomic.Bool
}

// NewBuilder returns a Builder that gets its xDS clients from pool. Give
// its DialOptions to a channel, or use DialOptions.
func NewBuilder(pool *xdsclient.Pool, opts ...Option) *Builder {
	b := &Builder{pool: pool, clients: map[*xdsclient.Client]int{}, channels: map[string][]*xdsResolver{}}
	b.opts = defaultOptions()
	for _, o := range opts {
		o.apply(&b.opts)
	}
	b.hookList = b.opts.hooks
	b.hooks.Store(compose(b.hookList))
	for _, attach := range b.opts.observers {
		attach(b)
	}
	return b
}

// AddHooks adds hooks that observe the data plane of every channel of the
// Builder, those already resolved included, from their next event on, and
// returns a func that removes them.
func (b *Builder) AddHooks(h *Hooks) (remove func()) {
	b.mu.Lock()
	b.hookList = append(slices.Clip(b.hookList), h)
	b.hooks.Store(compose(b.hookList))
	b.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			b.mu.Lock()
			defer b.mu.Unlock()
			if i := slices.Index(b.hookList, h); i >= 0 {
				b.hookList = slices.Delete(slices.Clone(b.hookList), i, i+1)
				b.hooks.Store(compose(b.hookList))
			}
		})
	}
}

// ClientTarget returns the target under which the Builder's channels of
// channelTarget get their xDS client from the pool: WithPoolTarget's, else
// channelTarget itself. It is the grpc.target of that client's metrics.
func (b *Builder) ClientTarget(channelTarget string) string {
	if b.opts.poolTarget != "" {
		return b.opts.poolTarget
	}
	return channelTarget
}

func init() {
	resolver.Register(NewBuilder(xdsclient.DefaultPool()))
}

// Scheme returns Scheme.
func (b *Builder) Scheme() string { return Scheme }

// errServiceConfigDisabled is returned by Build for a channel that ignores
// the resolver's service config, through which the routing policy is set.
var errServiceConfigDisabled = errors.New("xdslens: the channel ignores service configs from its resolver (grpc.WithDisableServiceConfig), so RPCs could not be routed by xDS; remove that option")

// Build starts resolving target for a channel: it gets the pool's client
// for the target, builds the name of the Listener to watch from the
// bootstrap's templates (gRFC A47), and starts a dependency manager
// (package xdsconfig) whose configs it hands to the channel.
func (b *Builder) Build(target resolver.Target, cc resolver.ClientConn, bo resolver.BuildOptions) (resolver.Resolver, error) {
	if bo.DisableServiceConfig {
		return nil, errServiceConfigDisabled
	}
	key := target.String()
	client, release, err := b.pool.Get(b.ClientTarget(key))
	if err != nil {
		return nil, fmt.Errorf("xdslens: target %q: %w", key, err)
	}
	path := target.URL.Path
	if path == "" {
		path = target.URL.Opaque
	}
	listener, err := client.Bootstrap().ClientListenerResourceName(target.URL.Host, path)
	if err != nil {
		release()
		return nil, fmt.Errorf("xdslens: target %q: %w", key, err)
	}
	authority := bo.Authority
	if authority == "" {
		authority = Authority(target)
	}
	q := &hookqueue.Queue{}
	r := &xdsResolver{
		hookq:      q,
		cc:         cc,
		client:     client,
		release:    release,
		target:     key,
		listener:   listener,
		counters:   b.acquireCounters(client),
		builder:    b,
		hooks:      b.clusterHooks(key, q),
		sc:         cc.ParseServiceConfig(routerServiceConfig),
		channelID:  rand.Uint64(),
		configured: make(chan struct{}),
	}
	if b.opts.historySize > 0 {
		r.history = history.NewRecorder(key, listener, b.opts.historySize)
	}
	if !b.interceptors.Load() && !b.warned.Swap(true) {
		client.Logger().Warn("xdslens channel dialled without xdsgrpc.DialOptions: its RPCs are routed, but the RPCs of routes with a max_stream_duration, a retry_policy or HTTP filters fail rather than go without them; dial with xdsgrpc.DialOptions(pool) to apply them",
			"channel", key)
	}
	if handshake.Applies(bo.DialCreds) {
		// The channel's credentials apply the TLS settings of clusters,
		// with the bootstrap's certificate providers.
		r.certs, r.releaseCerts = certstore.For(client.Bootstrap())
	}
	b.mu.Lock()
	b.channels[key] = append(b.channels[key], r)
	b.mu.Unlock()
	if h := b.hooks.Load(); h != nil && h.ChannelStarted != nil {
		q.Post(func() { h.ChannelStarted(ChannelInfo{Target: key, Listener: listener}) })
	}
	r.mgr = xdsconfig.Watch(client, listener, authority, r, b.opts.configOptions...)
	return r, nil
}

// routerServiceConfig selects the routing policy; its configuration
// travels in the resolver state's attributes.
var routerServiceConfig = `{"loadBalancingConfig":[{"` + routerName + `":{}}]}`

// acquireCounters returns the circuit-breaking counters of client's
// channels, and counts one more channel of the Builder on client.
func (b *Builder) acquireCounters(client *xdsclient.Client) *sharedCounters {
	b.mu.Lock()
	b.clients[client]++
	b.mu.Unlock()
	return acquireCounters(client)
}

func (b *Builder) releaseCounters(client *xdsclient.Client) {
	b.mu.Lock()
	if b.clients[client]--; b.clients[client] == 0 {
		delete(b.clients, client)
	}
	b.mu.Unlock()
	releaseCounters(client)
}

// xdsResolver is the resolver of one channel.
type xdsResolver struct {
	// hookq runs the channel's hooks but those of picks, in the order of
	// their events, on a goroutine that gRPC does not wait for when the
	// channel closes: a hook may close the channel.
	hookq    *hookqueue.Queue
	cc       resolver.ClientConn
	client   *xdsclient.Client
	release  func()
	target   string
	listener string
	counters *sharedCounters
	builder  *Builder
	hooks    *clusterlb.Hooks
	sc       *serviceconfig.ParseResult
	mgr      *xdsconfig.Manager
	// channelID is the channel's random ID, the hash of the
	// "io.grpc.channel_id" hash policy (gRFC A42).
	channelID uint64
	// router is the channel's routing policy, once it has one.
	router atomic.Pointer[router]
	// configured is closed once the channel has its first picker, which
	// the interceptors wait for to route RPCs that start before it.
	configured     chan struct{}
	configuredOnce sync.Once
	// certs holds the bootstrap's certificate providers when the
	// channel's credentials apply clusters' TLS settings (xdscreds); nil
	// otherwise. releaseCerts gives it back.
	certs        *certstore.Store
	releaseCerts func()
	// history records the channel's configs; nil when the Builder keeps
	// none (WithConfigHistory).
	history *history.Recorder

	// last is the config last handed to the channel, nil after an error.
	// The dependency manager calls Update and Error one at a time, so
	// only they use it, without a lock.
	last *xdsconfig.Config
}

// Update is called by the dependency manager with a complete config.
func (r *xdsResolver) Update(cfg *xdsconfig.Config) {
	prev := r.last
	r.last = cfg
	r.cc.UpdateState(r.state(&channelState{config: cfg}))
	h := r.builder.hooks.Load()
	hooked := h != nil && h.ConfigChanged != nil
	if !hooked && r.history == nil {
		return
	}
	// One pass over the clusters tells both what changed.
	changes := xdsconfig.Diff(prev, cfg)
	if r.history != nil {
		r.history.ConfigAfter(prev, changes, cfg)
	}
	if hooked {
		ci := ConfigInfo{Target: r.target, Listener: r.listener, Config: cfg, Changes: changes}
		r.hookq.Post(func() { h.ConfigChanged(ci) })
	}
}

// Error is called by the dependency manager when the whole config failed:
// every RPC of the channel fails with err (an UNAVAILABLE status) until a
// config comes.
func (r *xdsResolver) Error(err error) {
	r.last = nil
	r.cc.UpdateState(r.state(&channelState{err: err}))
	if r.history != nil {
		r.history.Error(err)
	}
	if h := r.builder.hooks.Load(); h != nil && h.ConfigFailed != nil {
		ci := ConfigErrorInfo{Target: r.target, Listener: r.listener, Err: err}
		r.hookq.Post(func() { h.ConfigFailed(ci) })
	}
}

func (r *xdsResolver) state(cs *channelState) resolver.State {
	cs.target = r.target
	cs.resolver = r
	cs.client = r.client
	cs.counters = r.counters
	cs.builder = r.builder
	cs.clusterHooks = r.hooks
	return resolver.State{
		ServiceConfig: r.sc,
		Attributes:    attributes.New(channelStateKey{}, cs),
	}
}

// ResolveNow asks the dependency manager to resolve LOGICAL_DNS names
// again; xDS resources need no asking.
func (r *xdsResolver) ResolveNow(resolver.ResolveNowOptions) { r.mgr.ResolveNow() }

// Close stops the dependency manager and releases the client. The
// channel's hooks run before it returns, ChannelClosed last, unless one
// is running at that moment, which may be a hook that closes the channel
// (waiting for it would wait for ever): then they run just after.
func (r *xdsResolver) Close() {
	r.mgr.Stop()
	if h := r.builder.hooks.Load(); h != nil && h.ChannelClosed != nil {
		ci := ChannelInfo{Target: r.target, Listener: r.listener}
		r.hookq.Post(func() { h.ChannelClosed(ci) })
	}
	r.hookq.Close()
	r.builder.releaseCounters(r.client)
	r.builder.forget(r)
	if r.releaseCerts != nil {
		r.releaseCerts()
	}
	r.release()
}

// forget removes the closed channel r from the Builder's channels.
func (b *Builder) forget(r *xdsResolver) {
	b.mu.Lock()
	rs := slices.DeleteFunc(slices.Clone(b.channels[r.target]), func(x *xdsResolver) bool { return x == r })
	if len(rs) == 0 {
		delete(b.channels, r.target)
	} else {
		b.channels[r.target] = rs
	}
	b.mu.Unlock()
	b.conns.Range(func(k, v any) bool {
		if v == r {
			b.conns.Delete(k)
		}
		return true
	})
}

// channelOf returns the resolver of the channel cc, nil when it is not
// known: cc's resolver once a pick of cc bound them (bind), else the only
// live channel of the Builder with cc's target. Channels of one target and
// Builder differ only when dialled with different authorities; an RPC
// started before its channel is bound is routed by its first pick.
func (b *Builder) channelOf(cc *grpc.ClientConn) *xdsResolver {
	if v, ok := b.conns.Load(cc); ok {
		return v.(*xdsResolver)
	}
	b.mu.Lock()
	rs := b.channels[cc.CanonicalTarget()]
	b.mu.Unlock()
	if len(rs) == 1 {
		return rs[0]
	}
	return nil
}

// bind records that conn, a *grpc.ClientConn, is r's channel.
func (r *xdsResolver) bind(conn any) {
	if _, ok := r.builder.conns.Load(conn); !ok {
		r.builder.conns.Store(conn, r)
	}
}

// channelStateKey is the attribute key of the channelState the resolver
// hands to the router.
type channelStateKey struct{}

// channelState is what one resolver update tells the router: the config,
// or the error that fails every RPC, and what the router needs beside it.
type channelState struct {
	config   *xdsconfig.Config
	err      error
	target   string
	resolver *xdsResolver
	client   *xdsclient.Client
	counters *sharedCounters
	builder  *Builder
	// clusterHooks are the hooks of the cluster policies.
	clusterHooks *clusterlb.Hooks
}

// hooks returns the Builder's hooks as they are now.
func (cs *channelState) hooks() *Hooks { return cs.builder.hooks.Load() }
