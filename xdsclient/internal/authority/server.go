package authority

import (
	"cmp"
	"errors"
	"log/slog"
	"slices"

	"google.golang.org/grpc/connectivity"

	"github.com/xdslens/xdslens/xdsclient/bootstrap"
	"github.com/xdslens/xdslens/xdsclient/internal/cache"
	"github.com/xdslens/xdslens/xdsclient/internal/health"
	"github.com/xdslens/xdslens/xdsclient/internal/lane"
	"github.com/xdslens/xdslens/xdsclient/internal/transport"
	"github.com/xdslens/xdslens/xdsclient/internal/txn"
	"github.com/xdslens/xdslens/xdsclient/internal/xerr"
)

// Server is one xDS server in use: its connection (package transport), its
// health (package health), and the cache's view of it, whose lane runs
// the hooks and callbacks of its events. It is the Handler of its
// connection: each event takes the client's lock, steps the health state
// machine and carries out the effects, or applies a response to the cache.
type Server struct {
	as   *Authorities
	conn *transport.Conn
	src  *cache.Source
	s    txn.Guarded[serverState]
}

type serverState struct {
	h      health.State
	auths  map[*Authority]struct{} // the authorities that use the server
	closed bool
}

// URI is the server's URI as shown (bootstrap.ServerConfig.ShownURI).
func (s *Server) URI() string { return s.src.URI }

// Source is the cache's view of the server.
func (s *Server) Source() *cache.Source { return s.src }

// Lane is where the hooks and callbacks of the server's events run.
func (s *Server) Lane() *lane.Lane[*cache.Watcher] { return s.src.Lane }

// Delta reports whether the server is spoken to over incremental xDS.
func (s *Server) Delta() bool { return s.conn.Delta() }

// Config is the server's bootstrap entry.
func (s *Server) Config() *bootstrap.ServerConfig { return s.conn.Server() }

// Health returns what the client knows of the server (gRFC A57).
func (s *Server) Health(tx *txn.Tx) health.State { return s.s.Of(tx).h }

// server returns the server of sc, making it (and starting its
// connection) on first use.
func (as *Authorities) server(tx *txn.Tx, sc *bootstrap.ServerConfig) (*Server, error) {
	st := as.s.Of(tx)
	key := sc.Key()
	if s := st.servers[key]; s != nil {
		return s, nil
	}
	cfg := as.cfg
	s := &Server{as: as}
	src := cfg.Cache.NewSource()
	src.URI = sc.ShownURI()
	src.Features = cache.Features{Legacy: cfg.Legacy, FailOnDataErrors: sc.FailOnDataErrors, IgnoreDeletion: sc.IgnoreResourceDeletion, TransientTimer: sc.ResourceTimerIsTransientError}
	src.Decode = cfg.DecodeOptions(sc)
	src.Timeout, src.Transient = cfg.ResourceTimeout, false
	if !cfg.Legacy && sc.ResourceTimerIsTransientError {
		src.Timeout, src.Transient = 2*cfg.ResourceTimeout, true
	}
	src.Lane = lane.New(cfg.Lanes, cfg.Context, cfg.Deliver)
	s.src = src
	s.s.Of(tx).auths = map[*Authority]struct{}{}
	tc := cfg.Transport
	tc.Server = sc
	tc.Delta = cfg.Delta(sc)
	conn, err := transport.New(cfg.Context, tc, s)
	if err != nil {
		src.Lane.Close(tx)
		return nil, err
	}
	s.conn = conn
	if st.servers == nil {
		st.servers = map[string]*Server{}
	}
	st.servers[key] = s
	return s, nil
}

// Servers yields the servers in use, sorted by bootstrap key.
func (as *Authorities) Servers(tx *txn.Tx) []*Server {
	st := as.s.Of(tx)
	out := make([]*Server, 0, len(st.servers))
	for _, s := range st.servers {
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b *Server) int { return cmp.Compare(a.conn.Server().Key(), b.conn.Server().Key()) })
	return out
}

// close stops a server nothing uses any more, or every server when the
// client closes; its connection closes once the lock is released.
// Observers see it go: its stream ends (reason as the error), it is no
// longer connected, and it is closed.
func (s *Server) close(tx *txn.Tx, reason error) {
	ss := s.s.Of(tx)
	if ss.closed {
		return
	}
	obs := s.as.cfg.Observer
	s.as.cfg.Cache.CloseSource(tx, s.src)
	if ss.h.Stream != 0 {
		obs.StreamEnded(tx, s, true, ss.h.Responded, reason, 0)
		ss.h.Stream = 0
	}
	if ss.h.Connected {
		ss.h.Connected = false
		obs.Connected(tx, s, false, reason)
	}
	ss.closed = true
	obs.ChannelClosed(tx, s, reason)
	s.src.Lane.Close(tx)
	delete(s.as.s.Of(tx).servers, s.conn.Server().Key())
	tx.After(s.conn.Close)
}

// Connectivity implements transport.Handler.
func (s *Server) Connectivity(state connectivity.State) {
	tx, ok := s.lock(0)
	if !ok {
		return
	}
	defer tx.Unlock()
	s.step(tx, health.Event{Kind: health.Connectivity, State: state}, nil)
}

// StreamStarted implements transport.Handler.
func (s *Server) StreamStarted(id uint64) {
	tx, ok := s.lock(0)
	if !ok {
		return
	}
	defer tx.Unlock()
	s.step(tx, health.Event{Kind: health.StreamStarted, Stream: id}, nil)
	s.as.cfg.Observer.StreamStarted(tx, s, s.s.Of(tx).h.Attempts)
}

// Requests implements transport.Handler: the names subscribed on the
// server are those of the entries of the authorities that use it (an
// authority subscribes its entries on every server from its primary down
// to its active one), read from the cache with the lock held.
func (s *Server) Requests(id uint64, build func(names func(typeURL string) []string)) {
	tx, ok := s.lock(id)
	if !ok {
		return
	}
	defer tx.Unlock()
	build(func(typeURL string) []string { return s.names(tx, typeURL) })
}

// names returns the names of typeURL subscribed on the server.
func (s *Server) names(tx *txn.Tx, typeURL string) []string {
	c := s.as.cfg.Cache
	k := c.KindOf(tx, typeURL)
	if k == nil {
		return nil
	}
	auths := s.s.Of(tx).auths
	return c.Names(tx, k, func(g *cache.Group) bool {
		_, ok := auths[s.as.Of(tx, g)]
		return ok
	})
}

// Versions implements transport.Handler: the versions held, unless the
// server failed since (package health).
func (s *Server) Versions(id uint64, typeURL string) map[string]string {
	tx, ok := s.lock(id)
	if !ok {
		return nil
	}
	defer tx.Unlock()
	k := s.as.cfg.Cache.KindOf(tx, typeURL)
	if k == nil || !s.s.Of(tx).h.SendVersions(id) {
		return nil
	}
	return s.as.cfg.Cache.Versions(tx, s.src, k)
}

// Sending implements transport.Handler: the subscriptions count as sent
// from here (gRFC A57 starts the timer once they are): the request is
// written right after, and if the write fails the stream ends and the
// timers stop. Starting them after the write would let a fast answer
// overtake them.
func (s *Server) Sending(id uint64, typeURL string, names []string, resumed bool) {
	tx, ok := s.lock(id)
	if !ok {
		return
	}
	defer tx.Unlock()
	ss := s.s.Of(tx)
	if resumed {
		ss.h, _ = health.Step(ss.h, health.Event{Kind: health.Resumed})
	}
	if k := s.as.cfg.Cache.KindOf(tx, typeURL); k != nil && ss.h.TimersRun() {
		s.as.cfg.Cache.Sent(tx, s.src, k, names)
	}
}

// Sent implements transport.Handler.
func (s *Server) Sent(id uint64, r transport.Request) {
	tx, ok := s.lock(id)
	if !ok {
		return
	}
	defer tx.Unlock()
	s.as.cfg.Observer.RequestSent(tx, s, r)
}

// Response implements transport.Handler: the response counts for the
// server's health (its first on the stream), then the cache applies it.
func (s *Server) Response(id uint64, u *transport.Update) transport.Result {
	tx, ok := s.lock(id)
	if !ok {
		return transport.Result{Ignored: true}
	}
	s.step(tx, health.Event{Kind: health.Response}, nil)
	tx.Unlock()
	a, ok := s.as.cfg.Cache.Apply(s.src, u, func(tx *txn.Tx) bool {
		if s.s.Of(tx).closed {
			return false
		}
		if len(u.Resources)+len(u.Errors) > 0 {
			// A higher priority server that delivers again is used again
			// (gRFC A71).
			s.as.switchBackTo(tx, s)
		}
		return true
	})
	if !ok {
		return transport.Result{Ignored: true}
	}
	return transport.Result{Valid: a.Valid, NACK: a.NACK, Wait: a.Wait}
}

// StreamEnded implements transport.Handler: the end of a stream (or the
// failure to create one), each with its own hook, so that every
// StreamEnded matches a StreamStarted.
func (s *Server) StreamEnded(_ uint64, e transport.End) {
	tx, ok := s.lock(0)
	if !ok {
		return
	}
	defer tx.Unlock()
	ev := health.Event{Kind: health.StreamStartFailed, Err: e.Err, Backoff: e.Backoff}
	if e.Started {
		ev = health.Event{Kind: health.StreamEnded, Err: e.Err, Cause: transport.Cause(e.Err), Backoff: e.Backoff}
	}
	s.step(tx, ev, func() {
		s.as.cfg.Observer.StreamEnded(tx, s, e.Started, e.Responded, e.Err, e.Backoff)
	})
}

// lock takes the client's lock for an event of the server, unless the
// server is closed or (for stream != 0) the event is of a stream that is
// no longer current.
func (s *Server) lock(stream uint64) (*txn.Tx, bool) {
	tx := s.as.cfg.Mutex.Lock()
	ss := s.s.Of(tx)
	if ss.closed || (stream != 0 && ss.h.Stream != stream) {
		tx.Unlock()
		return nil, false
	}
	return tx, true
}

// step applies a health event (gRFC A57) and carries out its effects, in
// this order: the new connectivity state, timers stopped, the event's own
// hook (own, if not nil), timers started, the log line, a server failure
// (ServerFailure, Connected, fallback, watchers), or the server connected
// again.
func (s *Server) step(tx *txn.Tx, ev health.Event, own func()) {
	ss := s.s.Of(tx)
	obs, c := s.as.cfg.Observer, s.as.cfg.Cache
	var eff health.Effects
	ss.h, eff = health.Step(ss.h, ev)
	if eff.ConnectivityChanged {
		obs.Connectivity(tx, s, ss.h.Connectivity)
	}
	if eff.StopTimers {
		c.StopTimers(tx, s.src)
	}
	if own != nil {
		own()
	}
	if eff.StartTimers {
		s.startTimers(tx)
	}
	s.log(tx, eff.Log, ev)
	if eff.ServerFailure {
		obs.ServerFailure(tx, s, eff.Failure)
	}
	if eff.ConnectedChanged {
		var reason error
		if !ss.h.Connected {
			reason = ss.h.Failure
		}
		obs.Connected(tx, s, ss.h.Connected, reason)
	}
	if eff.Failure != nil {
		s.as.failed(tx, s, eff.Failure, eff.Notify)
	}
}

// startTimers starts the timers of the subscriptions sent on the current
// stream (gRFC A57: the channel is READY again).
func (s *Server) startTimers(tx *txn.Tx) {
	c := s.as.cfg.Cache
	for _, url := range s.conn.Types() {
		if k := c.KindOf(tx, url); k != nil {
			var names []string
			if !s.Delta() {
				names = s.names(tx, url)
			}
			c.Sent(tx, s.src, k, s.conn.SentNames(url, names))
		}
	}
}

// log writes the log line of a health event.
func (s *Server) log(tx *txn.Tx, l health.Log, ev health.Event) {
	obs := s.as.cfg.Observer
	err, backoff := xerr.ShownErr(ev.Err), ev.Backoff
	switch l {
	case health.LogKeepalive:
		obs.Log(tx, s, slog.LevelWarn, "xDS server stopped answering keepalive pings", "err", err, "backoff", backoff)
	case health.LogResponseTooLarge:
		obs.Log(tx, s, slog.LevelError, "ADS response too large; reconnecting with backoff", "err", err, "backoff", backoff)
	case health.LogRequestTooLarge:
		obs.Log(tx, s, slog.LevelError, "ADS request too large for the server; reconnecting with backoff", "err", err, "backoff", backoff)
	case health.LogEnded:
		obs.Log(tx, s, slog.LevelDebug, "ADS stream ended after a response; reconnecting", "err", err, "backoff", backoff)
	case health.LogQuietResume:
		obs.Log(tx, s, slog.LevelDebug, "resumed delta stream ended without a response (nothing had changed); the next stream asks for everything", "err", err)
	case health.LogFailed:
		obs.Log(tx, s, slog.LevelWarn, "ADS stream failed before any response", "err", err, "backoff", backoff)
	case health.LogFailedAgain:
		obs.Log(tx, s, slog.LevelDebug, "ADS stream failed before any response", "err", err, "backoff", backoff)
	}
}

// errNotUsed is why a server that nothing uses is closed.
var errNotUsed = errors.New("no watched resource uses the server any more")
