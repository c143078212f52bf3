package xdsclient

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"maps"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/xdslens/xdslens/xdsclient/bootstrap"
	"github.com/xdslens/xdslens/xdsclient/internal/xerr"
	"github.com/xdslens/xdslens/xdsclient/xdsresource"
)

// Version is the library version sent to xDS servers as the node's
// user_agent_version.
const Version = "0.1.0"

// UserAgentName is sent to xDS servers as the node's user_agent_name.
const UserAgentName = "xdslens"

// Client is an xDS client: it holds one ADS stream per xDS server, a cache
// of the resources that watchers asked for, and the state machine of gRFCs
// A57 and A88. A Client is safe for concurrent use. Close it when done.
type Client struct {
	cfg       *bootstrap.Config
	o         options
	node      *corev3.Node
	nodeID    string
	logger    *slog.Logger
	ctx       context.Context
	cancel    context.CancelFunc
	callbacks *callbackSerializer
	wg        sync.WaitGroup

	// hooks are the Hooks attached (hookSet, guarded by mu) composed into
	// one, replaced as a whole when hooks are added or removed, so that an
	// event is one nil check and reads need no lock.
	composed atomic.Pointer[Hooks]

	closeDone chan struct{} // closed when Close has ended

	// mu guards the fields below, and the fields of the client's
	// authorities, channels and entries that say so; it is taken through
	// lock, which returns tx, and released through tx.unlock. Lock order:
	// Pool.mu, then mu, then callbackSerializer.mu; no hook or watcher runs
	// while mu is held, so an observer's own lock (telemetry's) is never
	// taken under it.
	tx          txn
	mu          sync.Mutex
	hookSet     []*Hooks
	closed      bool
	types       map[string]xdsresource.Type // by type URL
	typeOrder   []string                    // type URLs in the order requests are sent
	entries     map[string]*typeEntries     // by type URL
	channels    map[string]*channel         // by bootstrap.ServerConfig.Key()
	authorities map[string]*authority
	loadServers map[string]*loadServer // LRS reporting, by bootstrap.ServerConfig.Key()
	toClose     []*channel             // channels to close once the lock is released
	nEntries    int                    // cache entries, for Dump's allocation
	// first and last are the ends of the list of cache entries, in the
	// order they were made, which Dump walks a few at a time.
	first, last *entry
	streamSeq   uint64         // ADS streams started, over all servers; a stream's ID
	respGen     uint64         // responses handled, over all servers
	notes       []notification // hook calls and watcher callbacks, queued on unlock
	// While a response is applied its watcher callbacks wait in held, to
	// be queued after its hooks.
	holdWatchers bool
	held         []notification
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
	if o.resourceTimeout <= 0 {
		return nil, fmt.Errorf("xdsclient: resource timeout %v: must be positive", o.resourceTimeout)
	}
	if o.keepaliveTime < MinKeepaliveTime {
		return nil, fmt.Errorf("xdsclient: keepalive time %v: must be at least %v (gRPC's minimum)", o.keepaliveTime, MinKeepaliveTime)
	}
	if o.keepaliveWait <= 0 {
		return nil, fmt.Errorf("xdsclient: keepalive timeout %v: must be positive", o.keepaliveWait)
	}
	if o.maxResponseSize <= 0 {
		return nil, fmt.Errorf("xdsclient: max response size %d: must be positive", o.maxResponseSize)
	}
	if o.minStreamInterval < 0 {
		return nil, fmt.Errorf("xdsclient: min stream interval %v: must not be negative", o.minStreamInterval)
	}
	if o.logger == nil {
		o.logger = slog.New(slog.DiscardHandler)
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
		cfg:         cfg,
		o:           o,
		node:        node,
		nodeID:      node.GetId(),
		logger:      o.logger.With("target", o.target),
		ctx:         ctx,
		cancel:      cancel,
		types:       map[string]xdsresource.Type{},
		entries:     map[string]*typeEntries{},
		channels:    map[string]*channel{},
		authorities: map[string]*authority{},
		loadServers: map[string]*loadServer{},
		closeDone:   make(chan struct{}),
	}
	c.tx.c = c
	c.hookSet = append([]*Hooks(nil), o.hooks...)
	c.composed.Store(compose(c.hookSet))
	c.callbacks = newCallbackSerializer(ctx, c.beforeCallback)
	tx := c.lock()
	defer tx.unlock()
	for _, t := range append(xdsresource.Builtin(), o.types...) {
		if err := tx.registerType(t); err != nil {
			cancel()
			return nil, fmt.Errorf("xdsclient: WithResourceTypes: %w", err)
		}
	}
	return c, nil
}

// hooks returns the hooks in force, composed into one.
func (c *Client) hooks() *Hooks { return c.composed.Load() }

// AddHooks adds hooks to a running client and returns a func that removes
// them. The new hooks first see the client's current state as events — a
// ConnectivityChanged and a ConnectedChanged for every server the client
// has a channel to, an AuthorityServerChanged for every authority in use,
// and a CacheStateChanged from StateNone for every cache entry — and then every later event, so that an observer attached late
// (metrics, a debugging tool) keeps an exact picture.
func (c *Client) AddHooks(h *Hooks) (remove func()) {
	tx := c.lock()
	defer tx.unlock()
	c.hookSet = append(c.hookSet[:len(c.hookSet):len(c.hookSet)], h)
	c.composed.Store(compose(c.hookSet))
	for _, ch := range c.channels {
		if f := h.ConnectivityChanged; f != nil && ch.h.Known {
			info := ConnectivityInfo{Target: c.o.target, Server: ch.uri, State: ch.h.Connectivity}
			tx.hook(func() { f(info) })
		}
		if f := h.ConnectedChanged; f != nil && ch.h.Connected {
			info := ConnectedInfo{Target: c.o.target, Server: ch.uri, Connected: true}
			tx.hook(func() { f(info) })
		}
	}
	if f := h.AuthorityServerChanged; f != nil {
		for _, a := range c.authorities {
			info := AuthorityServerInfo{Target: c.o.target, Authority: a.name, Server: a.activeChan().uri, Priority: a.active, Reason: "current"}
			tx.hook(func() { f(info) })
		}
	}
	if f := h.CacheStateChanged; f != nil {
		for e := range c.allEntries() {
			info := CacheStateInfo{
				Target: c.o.target, Authority: e.auth.name, TypeURL: e.kind.typ.TypeURL(), Name: e.name,
				Old: StateNone, New: e.state, NewCached: e.res.ok(), Server: e.active().uri, Err: e.failureErr(), At: tx.clock(),
			}
			tx.hook(func() { f(info) })
		}
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			tx := c.lock()
			defer tx.unlock()
			var kept []*Hooks
			for _, x := range c.hookSet {
				if x != h {
					kept = append(kept, x)
				}
			}
			c.hookSet = kept
			c.composed.Store(compose(kept))
		})
	}
}

// Target returns the name the client was made for (WithTarget).
func (c *Client) Target() string { return c.o.target }

// Node returns the node the client sends to xDS servers: the bootstrap's
// node plus the user agent and client features. It must not be modified.
func (c *Client) Node() *corev3.Node { return c.node }

// Bootstrap returns the configuration the client was made from.
func (c *Client) Bootstrap() *bootstrap.Config { return c.cfg }

// registerType makes t the Type of its type URL. A type URL has one
// Type for the client's life: another Type for it is an error, since the
// cache, the requests and CSDS know a resource by its type URL alone.
func (tx *txn) registerType(t xdsresource.Type) error {
	c := tx.c
	url := t.TypeURL()
	if old, ok := c.types[url]; ok {
		if sameType(old, t) {
			return nil
		}
		return fmt.Errorf("type URL %q is already registered to another resource type (%T)", url, old)
	}
	if !reflect.TypeOf(t).Comparable() {
		return fmt.Errorf("resource type %T for %q is not comparable: use a pointer", t, url)
	}
	c.types[url] = t
	c.typeOrder = append(c.typeOrder, url)
	return nil
}

// sameType reports whether a and b are the same Type value.
func sameType(a, b xdsresource.Type) bool {
	return reflect.TypeOf(a) == reflect.TypeOf(b) && reflect.TypeOf(a).Comparable() && a == b
}

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
// callback runs as every callback does, one at a time, after those queued
// before it, and not once cancel has returned.
//
// Watch panics if w is nil, as net/http's Handle does for a nil handler: a
// nil watcher is a mistake in the calling code, found at the call rather
// than when the client first has something to tell it.
func (c *Client) Watch(typ xdsresource.Type, name string, w Watcher) (cancel func()) {
	if w == nil {
		panic("xdsclient: Watch of " + xerr.ShortName(typ) + " " + xerr.Shown(name) + " with a nil Watcher")
	}
	nameErr := checkName(name)
	tx := c.lock()
	defer tx.unlock()
	if nameErr != nil {
		return tx.refuse(typ, name, w, xerr.Status(codes.InvalidArgument, fmt.Sprintf("%s resource name %s (node ID %s): %v", xerr.ShortName(typ), xerr.Shown(name), xerr.Shown(c.nodeID), nameErr)))
	}
	if c.closed {
		return tx.refuse(typ, name, w, c.closedErr(typ, name))
	}
	if err := tx.registerType(typ); err != nil {
		return tx.refuse(typ, name, w, xerr.Status(codes.InvalidArgument, fmt.Sprintf("%s %q (node ID %s): %v", xerr.ShortName(typ), name, xerr.Shown(c.nodeID), err)))
	}
	name, err := canonicalName(typ, name)
	if err == nil && len(name) > MaxResourceNameSize {
		err = fmt.Errorf("resource name %s: its canonical form has %d bytes, more than the %d a resource name may have", xerr.Shown(name), len(name), MaxResourceNameSize)
	}
	if err != nil {
		return tx.refuse(typ, name, w, xerr.Status(codes.InvalidArgument, fmt.Sprintf("%s (node ID %s): %v", xerr.ShortName(typ), xerr.Shown(c.nodeID), err)))
	}
	// A cached resource is decoded for the new watcher with the lock released,
	// so that a large resource does not hold up the client; if the entry
	// holds another update by the time the lock is taken again, the new one is
	// decoded.
	var (
		res        *Resource
		resErr     error
		decodedFor *update
	)
	for {
		e := tx.kind(typ).table.get(name)
		if e != nil && e.res.ok() && e.res.from != decodedFor {
			h := e.res
			tx.unlock()
			res, resErr = c.decodeHeld(e, h)
			decodedFor = h.from
			tx = c.lock()
			if c.closed {
				return tx.refuse(typ, name, w, c.closedErr(typ, name))
			}
			continue
		}
		if e == nil {
			if e, err = tx.newEntry(typ, name); err != nil {
				return tx.refuse(typ, name, w, err)
			}
		}
		ref := &watcherRef{w: w, e: e}
		e.addWatcher(ref)
		cur := tx.currentErr(e)
		switch {
		case e.res.ok():
			tx.notifyOne(ref, res, resErr, false)
			if cur != nil {
				tx.notifyOne(ref, nil, cur, true)
			}
		case cur != nil:
			tx.notifyOne(ref, nil, cur, false)
		}
		return ref.cancel
	}
}

// refuse tells w, through ResourceChanged, that its watch cannot be
// served: err. No cache entry is made; the watch ends with the callback,
// which its cancel func, like any other, can stop.
func (tx *txn) refuse(typ xdsresource.Type, name string, w Watcher, err error) (cancel func()) {
	c := tx.c
	ref := &watcherRef{w: w}
	tx.hook(func() {
		c.callbacks.runWatcher(ref, func() {
			c.watcherNotified(typ.TypeURL(), name, NotifyResourceError, err)
			w.ResourceChanged(nil, err)
		})
	})
	return func() {
		ref.cancelled.Store(true)
		c.callbacks.waitCallback(ref)
	}
}

// closedErr is the error of a watch on a closed client.
func (c *Client) closedErr(typ xdsresource.Type, name string) error {
	return status.Errorf(codes.Unavailable, "%s %q: %v", xerr.ShortName(typ), name, ErrClosed)
}

// kind returns the entries of typ, making the table on first use.
func (tx *txn) kind(typ xdsresource.Type) *typeEntries {
	c := tx.c
	k := c.entries[typ.TypeURL()]
	if k == nil {
		k = &typeEntries{typ: typ}
		c.entries[typ.TypeURL()] = k
	}
	return k
}

// tableOf returns the entries of the type with that URL, nil if none.
func (c *Client) tableOf(typeURL string) *entryTable {
	if k := c.entries[typeURL]; k != nil {
		return &k.table
	}
	return nil
}

// allEntries yields every cache entry. Entries must not be added or removed
// meanwhile.
func (c *Client) allEntries() iter.Seq[*entry] {
	return func(yield func(*entry) bool) {
		for _, k := range c.entries {
			for e := range k.table.all() {
				if !yield(e) {
					return
				}
			}
		}
	}
}

// entriesOf yields the cache entries of a, of every type.
func (c *Client) entriesOf(a *authority) iter.Seq[*entry] {
	return func(yield func(*entry) bool) {
		for e := range c.allEntries() {
			if e.auth == a && !yield(e) {
				return
			}
		}
	}
}

func (tx *txn) newEntry(typ xdsresource.Type, name string) (*entry, error) {
	c := tx.c
	a, err := tx.authority(name)
	if err != nil {
		return nil, xerr.Status(codes.InvalidArgument, fmt.Sprintf("%s %q (node ID %s): %v", xerr.ShortName(typ), name, xerr.Shown(c.nodeID), err))
	}
	k := tx.kind(typ)
	e := &entry{kind: k, name: name, auth: a}
	k.table.add(e)
	c.nEntries++
	c.link(e)
	a.addEntry(tx, e)
	tx.setState(e, StateRequested, held{})
	if ch := a.activeChan(); ch.h.Failed {
		// A new resource is wanted while the server is down (gRFC A71):
		// this one is missing, so there is no need to look for another.
		tx.maybeFallback(a, ch.h.Failure)
	}
	return e, nil
}

func (c *Client) cancelWatch(ref *watcherRef) {
	e := ref.e
	tx := c.lock()
	defer tx.unlock()
	e.removeWatcher(ref)
	if e.watcher != nil || e.removed || c.closed {
		return
	}
	e.removed = true
	if e.deletionIgnored {
		c.logger.Info("xDS resource deletion no longer ignored: watch cancelled", "type", xerr.ShortName(e.kind.typ), "name", e.name, "server", e.active().uri)
	}
	tx.setState(e, StateNone, held{})
	e.kind.table.remove(e)
	c.nEntries--
	c.unlink(e)
	e.auth.removeEntry(tx, e)
}

// Close stops every stream and timer, closes every channel (their hooks
// fire: stream ended, not connected, channel closed), drops the cache and
// waits for the client's goroutines to end. Hooks queued before Close run
// before it returns; watchers get no callback after Close returns (a watch
// made on a closed client gets one, saying so: see Watch). Close may be
// called from a watcher callback or a hook: it then returns without
// waiting for the goroutine that runs callbacks, which ends as soon as the
// callback that called Close returns.
func (c *Client) Close() {
	tx := c.lock()
	if c.closed {
		tx.unlock()
		if !c.callbacks.onSerializer() {
			<-c.closeDone
		}
		return
	}
	c.closed = true
	for _, key := range slices.Sorted(maps.Keys(c.channels)) {
		tx.closeChannel(c.channels[key], ErrClosed)
	}
	c.entries = map[string]*typeEntries{}
	c.authorities = map[string]*authority{}
	c.nEntries = 0
	c.first, c.last = nil, nil
	loads := slices.Collect(maps.Values(c.loadServers))
	c.loadServers = map[string]*loadServer{}
	tx.unlock()
	c.stopLoadReports(loads)
	c.cancel()
	c.wg.Wait()
	if !c.callbacks.onSerializer() {
		<-c.callbacks.stopped
	}
	close(c.closeDone)
}

// txn is the client's lock, held. It is the only way to reach what
// Client.mu guards and to queue effects (hook calls, watcher callbacks,
// channels to close): the functions that need the lock are methods of txn
// or take one. Client.lock takes the lock and returns the client's txn;
// txn.unlock is the only way to release it.
type txn struct {
	c *Client
	// now is when the lock was taken, read once (clock): the events of one
	// holding of the lock happen together.
	now time.Time
}

// clock returns the time of the events of this holding of the lock, the
// At of the hooks it queues.
func (tx *txn) clock() time.Time {
	if tx.now.IsZero() {
		tx.now = time.Now()
	}
	return tx.now
}

// lock takes the client's lock.
func (c *Client) lock() *txn {
	c.mu.Lock()
	c.tx.now = time.Time{}
	return &c.tx
}

// unlock queues the hook calls and watcher callbacks gathered while the
// lock was held, in the order their events happened, and releases it;
// connections of channels closed meanwhile are closed after.
func (tx *txn) unlock() {
	c := tx.c
	if len(c.notes) > 0 {
		c.notes = c.callbacks.addAll(c.notes)
	}
	closing := c.toClose
	c.toClose = nil
	c.mu.Unlock()
	for _, ch := range closing {
		ch.cc.Close()
	}
}

// hook queues f, a hook call, after the events queued so far. Callers check
// first that some hook of the kind is set, so that no closure is made for
// nothing.
func (tx *txn) hook(f func()) { tx.c.notes = append(tx.c.notes, notification{hook: f}) }

func (c *Client) beforeCallback(n notification) {
	kind := NotifyResource
	switch {
	case n.ambient:
		kind = NotifyAmbientError
	case n.err != nil:
		kind = NotifyResourceError
	}
	c.watcherNotified(n.w.e.kind.typ.TypeURL(), n.w.e.name, kind, n.err)
}

// watcherNotified calls the WatcherNotified hooks.
func (c *Client) watcherNotified(typeURL, name string, kind NotificationKind, err error) {
	if f := c.hooks().WatcherNotified; f != nil {
		f(NotificationInfo{Target: c.o.target, TypeURL: typeURL, Name: name, Kind: kind, Err: err})
	}
}

// snapshotOf copies e's fields. The lock is held.
func snapshotOf(e *entry) EntrySnapshot {
	s := EntrySnapshot{
		TypeURL: e.kind.typ.TypeURL(), Name: e.name, Authority: e.auth.name, Server: e.active().uri,
		State: e.state, Watchers: e.watcherCount(),
	}
	if r := e.res; r.ok() {
		s.Cached, s.Raw, s.Version, s.UpdatedAt, s.ResourceServer = true, r.raw, r.from.version, r.from.at, r.from.ch.uri
	}
	if f := e.failure(); f != nil {
		s.Err, s.FailedVersion, s.FailedAt, s.FailedRaw = f.err, f.version, f.at, f.raw
	}
	return s
}

// EntrySnapshot is one cache entry as Dump saw it.
type EntrySnapshot struct {
	// TypeURL is the entry's resource type URL.
	TypeURL string
	// Name is the resource name as subscribed.
	Name string
	// Authority is the xDS authority of the name ("#old" for old-style
	// names).
	Authority string
	// Server is the URI of the xDS server the entry is subscribed on.
	Server string
	// State is the A88 cache state.
	State CacheState
	// Cached reports whether the entry holds a resource. Raw is the held
	// resource as received, the value of an Any of type TypeURL; Version is
	// the version_info of the response that last carried it, UpdatedAt when
	// that response arrived, and ResourceServer the URI of the server that
	// sent it.
	Cached         bool
	Raw            []byte
	Version        string
	UpdatedAt      time.Time
	ResourceServer string
	// Err is the data error the entry carries (NACK, TP3 error, deletion,
	// timeout), nil in REQUESTED and ACKED.
	Err error
	// FailedVersion and FailedAt are the version and time of the update
	// that failed, when the error came from one; FailedRaw is the rejected
	// resource when its bytes are known.
	FailedVersion string
	FailedAt      time.Time
	FailedRaw     []byte
	// Watchers is how many watchers the entry has.
	Watchers int
}

// dumpChunk is how many entries Dump copies per holding of the lock: an
// update never waits behind more than this many copies, however large the
// cache.
const dumpChunk = 128

// dumpWalkChunk is how many entries Dump lists per holding of the lock:
// listing one costs far less than copying it.
const dumpWalkChunk = 1024

// Dump returns every cache entry, sorted by type URL and name. It never
// holds the client's lock for long, whatever the size of the cache: it
// lists the entries a thousand at a time and copies them 128 at a time, so
// an update or a watch waits at most for one such step. Each snapshot is
// one entry exactly as the cache held it; entries removed before their
// step are left out, entries added meanwhile may or may not be seen, and a
// dump taken while updates flow shows each entry as it was when its step
// ran. The snapshots share the cache's bytes (Raw, FailedRaw), which must
// not be modified. A closed client has no entries.
func (c *Client) Dump() []EntrySnapshot { return c.dump(nil) }

// dump is Dump; held, when not nil, is told how long each holding of the
// lock lasted.
//
// It lists the entries, walking the list of entries dumpWalkChunk at a time
// and remembering where it stopped: an entry removed meanwhile keeps its
// link to the next one (see unlink), so the walk goes on from it. It sorts
// them by type URL and name, which never change, with the lock released,
// and copies them dumpChunk at a time, leaving out those removed by then.
func (c *Client) dump(held func(time.Duration)) []EntrySnapshot {
	// step runs f with the lock held, unless the client is closed. Each
	// holding starts with a fresh time slice, so that the scheduler seldom
	// preempts the goroutine while it holds the lock.
	step := func(f func()) bool {
		runtime.Gosched()
		tx := c.lock()
		start := time.Now()
		open := !c.closed
		if open {
			f()
		}
		tx.unlock()
		if held != nil {
			held(time.Since(start))
		}
		return open
	}
	tx := c.lock()
	n := c.nEntries
	tx.unlock()
	list := make([]*entry, 0, n+n/8)
	var at *entry // the last entry walked
	for started := false; !started || at != nil; started = true {
		list = slices.Grow(list, dumpWalkChunk) // room is made before the lock is taken
		walk := func() {
			next := c.first
			if at != nil {
				next = at.next
			}
			for k := 0; next != nil && k < dumpWalkChunk; k++ {
				if !next.removed {
					list = append(list, next)
				}
				at, next = next, next.next
			}
			if next == nil {
				at = nil
			}
		}
		if !step(walk) {
			return nil
		}
	}
	sortEntries(list)
	out := make([]EntrySnapshot, 0, len(list))
	for lo := 0; lo < len(list); lo += dumpChunk {
		copyChunk := func() {
			for _, e := range list[lo:min(lo+dumpChunk, len(list))] {
				if !e.removed {
					out = append(out, snapshotOf(e))
				}
			}
		}
		if !step(copyChunk) {
			return nil
		}
	}
	clear(list)
	return out
}

// sortEntries sorts entries by type URL and name, fields set when an entry
// is made and never changed, so the lock need not be held.
func sortEntries(entries []*entry) {
	rank := map[*typeEntries]int32{}
	for _, e := range entries {
		rank[e.kind] = 0
	}
	kinds := slices.SortedFunc(maps.Keys(rank), func(a, b *typeEntries) int {
		return strings.Compare(a.typ.TypeURL(), b.typ.TypeURL())
	})
	for i, k := range kinds {
		rank[k] = int32(i)
	}
	type key struct {
		name string
		rank int32
		e    *entry
	}
	keys := make([]key, len(entries))
	for i, e := range entries {
		keys[i] = key{e.name, rank[e.kind], e}
	}
	slices.SortFunc(keys, func(a, b key) int {
		if a.rank != b.rank {
			return int(a.rank - b.rank)
		}
		return strings.Compare(a.name, b.name)
	})
	for i := range keys {
		entries[i] = keys[i].e
	}
}

// link puts a new entry at the end of the list of entries.
func (c *Client) link(e *entry) {
	e.prev = c.last
	if c.last != nil {
		c.last.next = e
	} else {
		c.first = e
	}
	c.last = e
}

// unlink takes a removed entry out of the list of entries. Its own next
// link is kept, so that a Dump that stopped at it goes on from there: the
// entries after it are never taken out of the list without their links
// being kept in the same way.
func (c *Client) unlink(e *entry) {
	if e.prev != nil {
		e.prev.next = e.next
	} else {
		c.first = e.next
	}
	if e.next != nil {
		e.next.prev = e.prev
	} else {
		c.last = e.prev
	}
	e.prev = nil
}
