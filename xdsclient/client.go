package xdsclient

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/xdslens/xdslens/xdsclient/bootstrap"
	"github.com/xdslens/xdslens/xdsclient/internal/authority"
	"github.com/xdslens/xdslens/xdsclient/internal/cache"
	"github.com/xdslens/xdslens/xdsclient/internal/lane"
	"github.com/xdslens/xdslens/xdsclient/internal/transport"
	"github.com/xdslens/xdslens/xdsclient/internal/txn"
	"github.com/xdslens/xdslens/xdsclient/internal/xerr"
	"github.com/xdslens/xdslens/xdsclient/xdsresource"
)

// Version is the library version sent to xDS servers as the node's
// user_agent_version.
const Version = "0.1.0"

// UserAgentName is sent to xDS servers as the node's user_agent_name.
const UserAgentName = "xdslens"

// Client is an xDS client: it holds one ADS stream per xDS server, a cache
// of the resources that watchers asked for, and the state machines of
// gRFCs A57, A71 and A88. A Client is safe for concurrent use. Close it
// when done.
type Client struct {
	// Read-only after New.
	cfg    *bootstrap.Config
	o      options
	node   *corev3.Node
	nodeID string
	logger *slog.Logger
	ctx    context.Context
	cancel context.CancelFunc
	cache  *cache.Cache
	auths  *authority.Authorities
	// own is the client's lane, for what no server causes (a watch
	// refused); each server has its own (package authority).
	own *lane.Lane[*cache.Watcher]

	lanes     lane.Set
	wg        sync.WaitGroup // the servers' goroutines
	closeDone chan struct{}  // closed once every goroutine of the client has ended, after Close
	closeStep atomic.Int32   // what closing waits for now (closeSteps)
	// composed is the Hooks attached, composed into one and replaced as a
	// whole when hooks are added or removed, so that an event is one nil
	// check and reads need no lock.
	composed atomic.Pointer[Hooks]

	// mu is the client's lock (package txn): s is reached only through
	// the Tx that mu.Lock returns, as are the cache's entries, the
	// authorities and the servers. Lock order: Pool.mu, then mu, then a
	// transport.Conn's own lock, then a lane's; no hook, watcher, logger
	// or resource decoder runs while mu is held.
	mu txn.Mutex
	s  txn.Guarded[clientState]
}

type clientState struct {
	closed      bool
	hookSet     []*Hooks
	loadServers map[string]*loadServer // LRS reporting, by bootstrap.ServerConfig.Key()
}

// New makes a client for the xDS servers of cfg. It starts no connection:
// the first watch on a server connects to it.
func New(cfg *bootstrap.Config, opts ...Option) (*Client, error) {
	if cfg == nil {
		return nil, errors.New("xdsclient: nil bootstrap config")
	}
	if len(cfg.Servers) == 0 {
		return nil, errors.New("xdsclient: bootstrap config has no xds_servers")
	}
	o := defaultOptions()
	for _, opt := range opts {
		opt.apply(&o)
	}
	if err := o.check(); err != nil {
		return nil, err
	}
	node := &corev3.Node{}
	if cfg.Node != nil {
		node = proto.Clone(cfg.Node).(*corev3.Node)
	}
	node.UserAgentName = UserAgentName
	node.UserAgentVersionType = &corev3.Node_UserAgentVersion{UserAgentVersion: Version}
	node.ClientFeatures = []string{"envoy.lb.does_not_support_overprovisioning", "xds.config.resource-in-sotw"}

	ctx, cancel := context.WithCancel(context.Background())
	c := &Client{
		cfg:       cfg,
		o:         o,
		node:      node,
		nodeID:    node.GetId(),
		logger:    o.logger.With("target", o.target),
		ctx:       ctx,
		cancel:    cancel,
		closeDone: make(chan struct{}),
	}
	obs := observer{c}
	c.cache = cache.New(cache.Config{Mutex: &c.mu, NodeID: c.nodeID, Observer: obs, Deliver: newResources, Cancel: c.cancelWatch})
	c.auths = authority.New(authority.Config{
		Mutex: &c.mu, Cache: c.cache, Bootstrap: cfg, Fallback: o.fallback, Legacy: o.legacy,
		Transport: transport.Config{Node: node, KeepaliveTime: o.keepaliveTime, KeepaliveTimeout: o.keepaliveWait,
			MaxResponseSize: o.maxResponseSize, Backoff: o.backoff, MinStreamInterval: o.minStreamInterval, Group: &c.wg},
		Delta: o.deltaFor, ResourceTimeout: o.resourceTimeout, DecodeOptions: c.decodeOptions,
		Context: ctx, Lanes: &c.lanes, Deliver: c.deliver, Observer: obs,
	})
	c.own = lane.New(&c.lanes, ctx, c.deliver)
	var types []cache.TypeInfo
	for _, t := range append(xdsresource.Builtin(), o.types...) {
		types = append(types, cache.Describe(t))
	}
	tx := c.mu.Lock()
	defer tx.Unlock()
	s := c.s.Of(tx)
	s.hookSet = append([]*Hooks(nil), o.hooks...)
	c.composed.Store(compose(s.hookSet))
	for _, t := range types {
		if _, err := c.cache.Register(tx, t); err != nil {
			cancel()
			return nil, fmt.Errorf("xdsclient: WithResourceTypes: %w", err)
		}
	}
	return c, nil
}

// decodeOptions returns what the decoders need to know about resources
// that server s sent: the server and the bootstrap's certificate provider
// instances, which TLS settings must name. The bootstrap never changes, so
// no lock is needed.
func (c *Client) decodeOptions(s *bootstrap.ServerConfig) xdsresource.DecodeOptions {
	return xdsresource.DecodeOptions{
		ServerURI:     s.ShownURI(),
		TrustedServer: s.TrustedXDSServer,
		HasCertificateProvider: func(name string) bool {
			_, ok := c.cfg.CertificateProviders[name]
			return ok
		},
	}
}

// Target returns the name the client was made for (WithTarget).
func (c *Client) Target() string { return c.o.target }

// Node returns the node the client sends to xDS servers: the bootstrap's
// node plus the user agent and client features. It must not be modified.
func (c *Client) Node() *corev3.Node { return c.node }

// Bootstrap returns the configuration the client was made from.
func (c *Client) Bootstrap() *bootstrap.Config { return c.cfg }

// Logger returns the client's logger (WithLogger), with the client's
// target: the data plane routed by the client logs through it.
func (c *Client) Logger() *slog.Logger { return c.logger }

// Watch starts watching the resource of type typ named name. The watcher
// gets the cached resource at once if there is one (then the ambient error
// in force, if any), or the error that stands for the resource if one does,
// and every change after that. Watching the same resource twice makes two
// watchers; the subscription is sent once. Call cancel to stop: once it
// returns, no callback of this watch runs (called from the watch's own
// callback, it returns at once and no later callback runs). The server is
// told when the last watcher of a resource leaves. cancel may be called
// more than once.
//
// Watch never fails: a name that cannot be served (one that is not valid
// UTF-8 or is longer than MaxResourceNameSize, an xdstp:// name of an
// unknown authority or of another type, a server that cannot be dialled),
// a type whose URL is registered to another Type, or a closed client is
// reported through the watcher's ResourceChanged with an error, and the
// watch then ends by itself. Such a watch is that watcher's problem alone:
// nothing is sent to a server for it, and no other watcher hears of it.
// On a closed client that error is UNAVAILABLE with ErrClosed's text; the
// callback runs as every callback does, after those queued before it, and
// not once cancel has returned.
//
// Watch panics if w is nil, as net/http's Handle does for a nil handler: a
// nil watcher is a mistake in the calling code, found at the call rather
// than when the client first has something to tell it. A nil pointer (or
// map, func, chan or slice) of a type that implements Watcher counts as
// nil too: its first callback would crash the process on a goroutine of
// the client's. That check costs one reflection per Watch, none per
// callback.
func (c *Client) Watch(typ xdsresource.Type, name string, w Watcher) (cancel func()) {
	if isNil(w) {
		panic("xdsclient: Watch of " + xerr.ShortName(typ) + " " + xerr.Shown(name) + " with a nil Watcher" + nilType(w))
	}
	return c.watch(typ, name, w)
}

// watch is Watch for a sink that is a Watcher or the TypedWatcher of a
// typed helper (see deliverTo), checked not to be nil.
func (c *Client) watch(typ xdsresource.Type, name string, w any) (cancel func()) {
	nameErr := checkName(name)
	ti := cache.Describe(typ) // the type's own methods, before the lock
	tx := c.mu.Lock()
	defer func() { tx.Unlock() }()
	if nameErr != nil {
		return c.refuse(tx, ti, name, w, xerr.Status(codes.InvalidArgument, fmt.Sprintf("%s resource name %s (node ID %s): %v", ti.Short, xerr.Shown(name), xerr.Shown(c.nodeID), nameErr)))
	}
	if c.s.Of(tx).closed {
		return c.refuse(tx, ti, name, w, c.closedErr(ti, name))
	}
	k, err := c.cache.Register(tx, ti)
	if err != nil {
		return c.refuse(tx, ti, name, w, xerr.Status(codes.InvalidArgument, fmt.Sprintf("%s %q (node ID %s): %v", ti.Short, name, xerr.Shown(c.nodeID), err)))
	}
	name, err = canonicalName(ti.URL, name)
	if err == nil && len(name) > MaxResourceNameSize {
		err = fmt.Errorf("resource name %s: its canonical form has %d bytes, more than the %d a resource name may have", xerr.Shown(name), len(name), MaxResourceNameSize)
	}
	if err != nil {
		return c.refuse(tx, ti, name, w, xerr.Status(codes.InvalidArgument, fmt.Sprintf("%s (node ID %s): %v", ti.Short, xerr.Shown(c.nodeID), err)))
	}
	// A cached resource is decoded for the new watcher with the lock
	// released, so that a large resource does not hold up the client and
	// no decoder runs under the lock; if the entry holds another update by
	// the time the lock is taken again, that one is decoded.
	var (
		res        any
		resErr     error
		decodedFor cache.Held
		decoded    bool
	)
	for {
		e := c.cache.Get(tx, k, name)
		if e != nil {
			if h := c.cache.Held(tx, e); h.Ok() && !(decoded && h.Same(decodedFor)) {
				tx.Unlock()
				res, resErr = c.cache.Decode(h)
				decodedFor, decoded = h, true
				tx = c.mu.Lock()
				if c.s.Of(tx).closed {
					return c.refuse(tx, ti, name, w, c.closedErr(ti, name))
				}
				continue
			}
		}
		a, err := c.auths.Get(tx, name)
		if err != nil {
			return c.refuse(tx, ti, name, w, xerr.Status(codes.InvalidArgument, fmt.Sprintf("%s %q (node ID %s): %v", ti.Short, name, xerr.Shown(c.nodeID), err)))
		}
		if e == nil {
			e = c.cache.Add(tx, k, name, a.Group())
			c.auths.Subscribe(tx, a, e)
		}
		ref := c.cache.NewWatcher(tx, e, w)
		c.cache.Watch(tx, e, ref, res, resErr, c.auths.Down(tx, a))
		return ref.Stop
	}
}

// refuse tells w, through ResourceChanged, that its watch cannot be
// served: err. No cache entry is made; the watch ends with the callback,
// which its cancel func, like any other, can stop. The callback runs on
// the lane of the caller, when Watch is called from a callback or a hook
// (after that callback, then), else on the client's own lane.
func (c *Client) refuse(tx *txn.Tx, ti cache.TypeInfo, name string, w any, err error) (cancel func()) {
	ref := &cache.Watcher{Sink: w}
	l, ok := c.lanes.Current().(*lane.Lane[*cache.Watcher])
	if !ok {
		l = c.own
	}
	l.Call(tx, ref, func() {
		c.watcherNotified(ti.URL, name, NotifyResourceError, err)
		deliverTo(w, nil, err, false)
	})
	return func() {
		ref.Cancel()
		ref.Wait(&c.lanes)
	}
}

// closedErr is the error of a watch on a closed client.
func (c *Client) closedErr(ti cache.TypeInfo, name string) error {
	return status.Errorf(codes.Unavailable, "%s %q: %v", ti.Short, name, ErrClosed)
}

// cancelWatch ends the watch of ref: the entry leaves the cache, and is
// unsubscribed, with its last watcher. Once it returns, no callback of the
// watch runs, unless it was called from that callback.
func (c *Client) cancelWatch(ref *cache.Watcher) {
	if ref.Cancel() {
		tx := c.mu.Lock()
		if !c.s.Of(tx).closed && c.cache.Unwatch(tx, ref) {
			e := ref.Entry()
			a := c.auths.Of(tx, e.Group())
			c.cache.Remove(tx, e)
			c.auths.Unsubscribe(tx, a, e)
		}
		tx.Unlock()
	}
	ref.Wait(&c.lanes)
}

// Close stops every stream and timer, closes every channel (their hooks
// fire: stream ended, not connected, channel closed), drops the cache and
// waits for the client's goroutines to end. Hooks queued before Close run
// before it returns; watchers get no callback after Close returns (a watch
// made on a closed client gets one, saying so: see Watch). Close may be
// called from a watcher callback or a hook: it then returns without
// waiting for the goroutines that run callbacks, which end as soon as the
// callback that called Close returns. Close is Shutdown with no deadline.
func (c *Client) Close() { _ = c.Shutdown(context.Background()) }

// Shutdown closes the client as Close does, and waits for its goroutines
// to end until ctx is done, as the OpenTelemetry SDK's Shutdown does; it
// returns nil once they have ended, or the context's error (wrapped,
// saying what is still running) when ctx is done first. Called from a
// watcher callback or a hook, it returns nil at once, as Close does.
//
// What is closed does not depend on ctx: when Shutdown starts, the client
// is closed (a Watch is answered with ErrClosed's error, Dump is empty,
// ReportLoad fails), its streams and channels end and no watcher callback
// starts any more: the callbacks queued but not yet begun are dropped,
// whatever ctx. What ctx bounds is the wait for what is still running: a
// watcher callback or a hook that has not returned, the hook calls queued
// behind it on its server's lane (they still run, in order, after it
// returns: ChannelClosed and the other hooks of closing included), the
// last load reports (at most lrs.FinalReportTimeout) and the ends of the
// streams. When ctx is done first, all of that goes on after Shutdown
// returns, and every goroutine of the client ends once the callbacks and
// hooks still running return; a later Close waits for that, and a later
// Shutdown waits again until its own ctx is done.
func (c *Client) Shutdown(ctx context.Context) error {
	c.startClose()
	if c.lanes.Running() {
		return nil
	}
	select {
	case <-c.closeDone:
		return nil
	default:
	}
	select {
	case <-c.closeDone:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("xdsclient: shutdown of client %s: %s: %w", xerr.Shown(c.o.target), closeSteps[c.closeStep.Load()], ctx.Err())
	}
}

// The steps of closing, in order, which Shutdown names when its context
// ends first.
const (
	closeLoadReports int32 = iota
	closeStreams
	closeLanes
)

var closeSteps = [...]string{
	closeLoadReports: "the last load reports are being sent",
	closeStreams:     "the streams to the xDS servers are ending",
	closeLanes:       "a watcher callback or a hook is still running, or hooks queued before the shutdown wait to run",
}

// startClose closes the client, the first time it is called: the cache
// is dropped, the authorities and their servers closed, and the context
// of the streams and lanes cancelled (no watcher callback starts after
// that). A goroutine then waits for the rest to end and closes closeDone.
func (c *Client) startClose() {
	tx := c.mu.Lock()
	s := c.s.Of(tx)
	if s.closed {
		tx.Unlock()
		return
	}
	s.closed = true
	c.auths.Close(tx, ErrClosed)
	c.cache.Clear(tx)
	loads := s.loadServers
	s.loadServers = nil
	tx.Unlock()
	c.cancel()
	// A load report hook that closes the client runs on its Reporter's
	// goroutine, which the closing must not wait for: that Reporter is
	// stopped here, and ends once the hook returns.
	for k, ls := range loads {
		if ls.rep.Running() {
			ls.stop()
			delete(loads, k)
		}
	}
	go func() {
		defer close(c.closeDone)
		for _, ls := range loads {
			ls.stop()
		}
		c.closeStep.Store(closeStreams)
		c.wg.Wait()
		c.closeStep.Store(closeLanes)
		c.lanes.Wait()
	}()
}

// Dump returns every cache entry, sorted by type URL and name. It never
// holds the client's lock for long, whatever the size of the cache: it
// lists the entries with the lock released (the cache's tables of entries
// stay as they were for it, changes going to a copy) and copies them 128
// at a time, so an update or a watch waits at most for one such step. Each
// snapshot is one entry exactly as the cache held it; entries removed
// before their step are left out, entries added meanwhile are not seen, and a
// dump taken while updates flow shows each entry as it was when its step
// ran. The snapshots share the cache's bytes (Raw, FailedRaw), which must
// not be modified. A closed client has no entries.
func (c *Client) Dump() []EntrySnapshot { return c.dump(nil) }

// dump is Dump; held, when not nil, is told how long each holding of the
// lock lasted.
func (c *Client) dump(held func(time.Duration)) []EntrySnapshot {
	var out []EntrySnapshot
	open := func(tx *txn.Tx) bool { return !c.s.Of(tx).closed }
	each := func(tx *txn.Tx, e *cache.Entry) { out = append(out, entrySnapshot(e.Snapshot(tx))) }
	if !c.cache.Dump(open, each, held) {
		return nil
	}
	return out
}
