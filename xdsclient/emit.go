package xdsclient

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"google.golang.org/grpc/connectivity"

	"github.com/xdslens/xdslens/xdsclient/internal/authority"
	"github.com/xdslens/xdslens/xdsclient/internal/cache"
	"github.com/xdslens/xdslens/xdsclient/internal/lane"
	"github.com/xdslens/xdslens/xdsclient/internal/transport"
	"github.com/xdslens/xdslens/xdsclient/internal/txn"
	"github.com/xdslens/xdslens/xdsclient/internal/xerr"
)

// hooks returns the hooks in force, composed into one.
func (c *Client) hooks() *Hooks { return c.composed.Load() }

// observer turns the events of the cache and of the servers into hook
// calls, each posted, under the lock, to the lane of the server whose
// event it reports: the one place where a hook's Info is made.
type observer struct{ c *Client }

var (
	_ cache.Observer     = observer{}
	_ authority.Observer = observer{}
)

func (o observer) StateChanged(tx *txn.Tx, e *cache.Entry, old cache.State, oldCached bool) {
	o.stateChanged(tx, o.c.hooks().CacheStateChanged, e, old, oldCached)
}

func (o observer) stateChanged(tx *txn.Tx, f func(CacheStateInfo), e *cache.Entry, old cache.State, oldCached bool) {
	if f != nil {
		state, cached := e.State(tx)
		info := CacheStateInfo{
			Target: o.c.o.target, Authority: e.Group().Name, TypeURL: e.Kind().URL, Name: e.Name(),
			Old: CacheState(old), New: CacheState(state), OldCached: oldCached, NewCached: cached,
			Server: e.Source(tx).URI, Err: e.Err(tx), At: tx.Now(),
		}
		e.Source(tx).Lane.Hook(tx, func() { f(info) })
	}
}

func (o observer) TimerStarted(tx *txn.Tx, e *cache.Entry, src *cache.Source) {
	o.timer(tx, o.c.hooks().ResourceTimerStarted, e, src)
}

func (o observer) TimerStopped(tx *txn.Tx, e *cache.Entry, src *cache.Source) {
	o.timer(tx, o.c.hooks().ResourceTimerStopped, e, src)
}

func (o observer) timer(tx *txn.Tx, f func(ResourceTimerInfo), e *cache.Entry, src *cache.Source) {
	if f != nil {
		info := ResourceTimerInfo{Target: o.c.o.target, Server: src.URI, TypeURL: e.Kind().URL, Name: e.Name(), Duration: src.Timeout, At: tx.Now()}
		src.Lane.Hook(tx, func() { f(info) })
	}
}

func (o observer) Logged(tx *txn.Tx, e *cache.Entry, src *cache.Source, l cache.Log, version string) {
	var (
		level = slog.LevelInfo
		msg   string
		args  []any
	)
	if e != nil {
		args = []any{"type", e.Kind().Short, "name", e.Name()}
	}
	switch l {
	case cache.LogDeletionIgnored:
		level, msg = slog.LevelWarn, "xDS resource deletion ignored (ignore_resource_deletion): keeping the cached resource"
		args = append(args, "version", xerr.Bound(version))
	case cache.LogDeletionUnignored:
		msg = "xDS resource deletion no longer ignored: the server sends the resource again"
	case cache.LogDeletionUnwatched:
		// The caller's cancel: written before cancel returns.
		msg = "xDS resource deletion no longer ignored: watch cancelled"
		o.logAfter(tx, src, level, msg, args...)
		return
	case cache.LogUnknownType:
		level, msg = slog.LevelWarn, "xDS response of a type that was never subscribed; ignored"
		args = append(args, "type", xerr.Bound(version))
	}
	o.log(tx, src, level, msg, args...)
}

// log writes a log line about an event of src on src's lane, before the
// hooks of the same event: the logger's handler is the user's, and runs
// with no lock held.
func (o observer) log(tx *txn.Tx, src *cache.Source, level slog.Level, msg string, args ...any) {
	src.Lane.Hook(tx, o.logLine(src, level, msg, args))
}

// logAfter writes a log line about a caller's call, by the caller, once
// the lock is released.
func (o observer) logAfter(tx *txn.Tx, src *cache.Source, level slog.Level, msg string, args ...any) {
	tx.After(o.logLine(src, level, msg, args))
}

// logLine returns what writes a log line. Whether its level is on is
// asked there too, when the line is written: a handler's Enabled is the
// user's code as much as its Handle, and runs with no lock held.
func (o observer) logLine(src *cache.Source, level slog.Level, msg string, args []any) func() {
	logger := o.c.logger
	args = append(args, "server", src.URI)
	return func() { logger.Log(context.Background(), level, msg, args...) }
}

func (o observer) Applied(tx *txn.Tx, src *cache.Source, typeURL, version, nonce string, delta bool, a cache.Applied) {
	if f := o.c.hooks().ResponseReceived; f != nil {
		info := ResponseInfo{Target: o.c.o.target, Server: src.URI, TypeURL: typeURL, Version: version, Nonce: nonce,
			Valid: a.Valid, Invalid: a.Invalid, Errors: a.Errors, Removed: a.Removed, NACK: a.NACK, Delta: delta}
		src.Lane.Hook(tx, func() { f(info) })
	}
}

func (o observer) Connectivity(tx *txn.Tx, s *authority.Server, state connectivity.State) {
	o.connectivity(tx, o.c.hooks().ConnectivityChanged, s, state)
}

func (o observer) connectivity(tx *txn.Tx, f func(ConnectivityInfo), s *authority.Server, state connectivity.State) {
	if f != nil {
		info := ConnectivityInfo{Target: o.c.o.target, Server: s.URI(), State: state}
		s.Lane().Hook(tx, func() { f(info) })
	}
}

func (o observer) Connected(tx *txn.Tx, s *authority.Server, connected bool, reason error) {
	o.connected(tx, o.c.hooks().ConnectedChanged, s, connected, reason)
}

func (o observer) connected(tx *txn.Tx, f func(ConnectedInfo), s *authority.Server, connected bool, reason error) {
	if f != nil {
		info := ConnectedInfo{Target: o.c.o.target, Server: s.URI(), Connected: connected, Reason: reason}
		s.Lane().Hook(tx, func() { f(info) })
	}
}

func (o observer) StreamStarted(tx *txn.Tx, s *authority.Server, attempt int) {
	if f := o.c.hooks().StreamStarted; f != nil {
		info := StreamInfo{Target: o.c.o.target, Server: s.URI(), Attempt: attempt, Delta: s.Delta()}
		s.Lane().Hook(tx, func() { f(info) })
	}
}

func (o observer) StreamEnded(tx *txn.Tx, s *authority.Server, started, responded bool, err error, backoff time.Duration) {
	f := o.c.hooks().StreamEnded
	if !started {
		f = o.c.hooks().StreamStartFailed
	}
	if f != nil {
		info := StreamEndInfo{Target: o.c.o.target, Server: s.URI(), ResponseReceived: responded, Err: err, Backoff: backoff}
		s.Lane().Hook(tx, func() { f(info) })
	}
}

func (o observer) ServerFailure(tx *txn.Tx, s *authority.Server, reason error) {
	if f := o.c.hooks().ServerFailure; f != nil {
		info := ServerFailureInfo{Target: o.c.o.target, Server: s.URI(), Reason: reason}
		s.Lane().Hook(tx, func() { f(info) })
	}
}

func (o observer) RequestSent(tx *txn.Tx, s *authority.Server, r transport.Request) {
	if f := o.c.hooks().RequestSent; f != nil {
		info := RequestInfo{Target: o.c.o.target, Server: s.URI(), TypeURL: r.TypeURL, Names: r.Names, Unsubscribed: r.Unsubscribed,
			Version: r.Version, Nonce: r.Nonce, NACK: r.NACK, Delta: r.Delta}
		s.Lane().Hook(tx, func() { f(info) })
	}
}

func (o observer) ChannelClosed(tx *txn.Tx, s *authority.Server, reason error) {
	if f := o.c.hooks().ChannelClosed; f != nil {
		info := ChannelInfo{Target: o.c.o.target, Server: s.URI(), Reason: reason}
		s.Lane().Hook(tx, func() { f(info) })
	}
}

func (o observer) AuthorityServer(tx *txn.Tx, on *authority.Server, a *authority.Authority, s *authority.Server, prev string, priority int, reason string) {
	o.authorityServer(tx, o.c.hooks().AuthorityServerChanged, on, a, s, prev, priority, reason)
}

func (o observer) authorityServer(tx *txn.Tx, f func(AuthorityServerInfo), on *authority.Server, a *authority.Authority, s *authority.Server, prev string, priority int, reason string) {
	if f != nil {
		info := AuthorityServerInfo{Target: o.c.o.target, Authority: a.Name(), Previous: prev, Priority: priority, Reason: reason}
		if s != nil {
			info.Server = s.URI()
		}
		on.Lane().Hook(tx, func() { f(info) })
	}
}

func (o observer) Log(tx *txn.Tx, s *authority.Server, level slog.Level, msg string, args ...any) {
	o.log(tx, s.Source(), level, msg, args...)
}

// deliver runs one watcher callback, on a lane: the WatcherNotified hooks,
// then the watcher.
func (c *Client) deliver(w *cache.Watcher, payload any, err error, ambient bool) {
	kind := NotifyResource
	switch {
	case ambient:
		kind = NotifyAmbientError
	case err != nil:
		kind = NotifyResourceError
	}
	if c.hooks().WatcherNotified != nil {
		// The entry is read only for the hook: without one, a callback
		// touches no memory of the cache.
		e := w.Entry()
		c.watcherNotified(e.Kind().URL, e.Name(), kind, err)
	}
	res, _ := payload.(*Resource)
	deliverTo(w.Sink, res, err, ambient)
}

// watcherNotified calls the WatcherNotified hooks.
func (c *Client) watcherNotified(typeURL, name string, kind NotificationKind, err error) {
	if f := c.hooks().WatcherNotified; f != nil {
		f(NotificationInfo{Target: c.o.target, TypeURL: typeURL, Name: name, Kind: kind, Err: err})
	}
}

// newResources returns what makes the Resources watchers get of the n
// changed resources of one response, allocated together: one allocation
// per response rather than per resource.
func newResources(n int) func(place int, d cache.Delivery) any {
	slab := make([]Resource, n)
	return func(place int, d cache.Delivery) any {
		var r *Resource
		if place >= 0 && place < len(slab) {
			r = &slab[place]
		} else {
			r = new(Resource)
		}
		*r = Resource{Type: d.Type, Name: d.Name, Version: d.Version, Value: d.Value, Raw: d.Raw, Server: d.Server, ReceivedAt: d.At}
		return r
	}
}

// AddHooks adds hooks to a running client and returns a func that removes
// them. The new hooks first see the client's current state as events — a
// ConnectivityChanged and a ConnectedChanged for every server the client
// has a channel to, an AuthorityServerChanged for every authority in use,
// and a CacheStateChanged from StateNone for every cache entry — and then
// every later event, so that an observer attached late (metrics, a
// debugging tool) keeps an exact picture. Each replayed event runs on the
// lane of its server, before that server's later events, once every lane
// has run what it was given before AddHooks.
func (c *Client) AddHooks(h *Hooks) (remove func()) {
	tx := c.mu.Lock()
	defer tx.Unlock()
	s := c.s.Of(tx)
	s.hookSet = append(s.hookSet[:len(s.hookSet):len(s.hookSet)], h)
	c.composed.Store(compose(s.hookSet))
	servers := c.auths.Servers(tx)
	lanes := []*lane.Lane[*cache.Watcher]{c.own}
	for _, srv := range servers {
		lanes = append(lanes, srv.Lane())
	}
	for _, l := range lanes {
		l.Fence(tx, lanes...)
	}
	// The replay makes its Infos where the events do (observer), for the
	// new hooks alone.
	o := observer{c}
	for _, srv := range servers {
		if st := srv.Health(tx); st.Known {
			o.connectivity(tx, h.ConnectivityChanged, srv, st.Connectivity)
		}
		if srv.Health(tx).Connected {
			o.connected(tx, h.ConnectedChanged, srv, true, nil)
		}
	}
	for _, a := range c.auths.All(tx) {
		active, priority := a.Active(tx)
		o.authorityServer(tx, h.AuthorityServerChanged, active, a, active, "", priority, "current")
	}
	for e := range c.cache.All(tx) {
		o.stateChanged(tx, h.CacheStateChanged, e, cache.StateNone, false)
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			tx := c.mu.Lock()
			defer tx.Unlock()
			s := c.s.Of(tx)
			var kept []*Hooks
			for _, x := range s.hookSet {
				if x != h {
					kept = append(kept, x)
				}
			}
			s.hookSet = kept
			c.composed.Store(compose(kept))
		})
	}
}
