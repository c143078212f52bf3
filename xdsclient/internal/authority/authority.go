// Package authority is gRFC A71 over gRFC A47's authorities: each
// authority has an ordered list of xDS servers and uses one of them, the
// active one, falling back to the next when the active one fails while a
// resource of the authority is missing, and back to a higher priority
// server once that one delivers again. An authority's entries (a
// cache.Group) are subscribed on every server from the primary down to the
// active one, so that a higher priority server that recovers is noticed
// by its first response.
//
// It also holds the Servers (server.go): each is the Handler of one
// transport.Conn, steps the server's health (gRFC A57, package health) on
// its events and carries out the effects — hooks, timers, fallback, the
// watchers told of a failure — and hands its responses to the cache.
//
// Everything here is guarded by the client's lock; the hooks are called
// through the Observer, which posts them to the lane of the server whose
// event they report.
package authority

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"google.golang.org/grpc/connectivity"

	"github.com/xdslens/xdslens/xdsclient/bootstrap"
	"github.com/xdslens/xdslens/xdsclient/internal/cache"
	"github.com/xdslens/xdslens/xdsclient/internal/lane"
	"github.com/xdslens/xdslens/xdsclient/internal/transport"
	"github.com/xdslens/xdslens/xdsclient/internal/txn"
	"github.com/xdslens/xdslens/xdsclient/internal/xdstp"
	"github.com/xdslens/xdslens/xdsclient/internal/xerr"
	"github.com/xdslens/xdslens/xdsclient/xdsresource"
)

// Config is what the Authorities are made with.
type Config struct {
	Mutex     *txn.Mutex
	Cache     *cache.Cache
	Bootstrap *bootstrap.Config
	// Fallback turns gRFC A71 on; Legacy selects the data error handling
	// that preceded gRFC A88.
	Fallback, Legacy bool
	// Transport is the template of every server's transport.Config (its
	// Server and Delta are set per server); Delta says which servers are
	// spoken to over incremental xDS.
	Transport transport.Config
	Delta     func(*bootstrap.ServerConfig) bool
	// ResourceTimeout is the does-not-exist timer (twice it for a server
	// with resource_timer_is_transient_error).
	ResourceTimeout time.Duration
	// DecodeOptions returns what decoders need to know of a server.
	DecodeOptions func(*bootstrap.ServerConfig) xdsresource.DecodeOptions
	// Context ends every server's connection and lane; Lanes and Deliver
	// make each server's lane.
	Context  context.Context
	Lanes    *lane.Set
	Deliver  func(w *cache.Watcher, payload any, err error, ambient bool)
	Observer Observer
}

// Observer is told of the events of the servers and authorities, to call
// the hooks. Its methods run under the lock and post hook calls to the
// server's lane; they must not call user code.
type Observer interface {
	Connectivity(tx *txn.Tx, s *Server, state connectivity.State)
	Connected(tx *txn.Tx, s *Server, connected bool, reason error)
	StreamStarted(tx *txn.Tx, s *Server, attempt int)
	// StreamEnded: a stream ended (started), or could not be created.
	StreamEnded(tx *txn.Tx, s *Server, started, responded bool, err error, backoff time.Duration)
	ServerFailure(tx *txn.Tx, s *Server, reason error)
	RequestSent(tx *txn.Tx, s *Server, r transport.Request)
	ChannelClosed(tx *txn.Tx, s *Server, reason error)
	// AuthorityServer: a uses a new server (its active one; none, with
	// priority -1, when a is released); prev was the one before. It is
	// reported on the lane of on, the server a leaves (or takes first).
	AuthorityServer(tx *txn.Tx, on *Server, a *Authority, s *Server, prev string, priority int, reason string)
	// Log: a log line about s, written on its lane, before the hooks of
	// the same event.
	Log(tx *txn.Tx, s *Server, level slog.Level, msg string, args ...any)
}

// Authorities are the authorities and servers of one client.
type Authorities struct {
	cfg Config
	s   txn.Guarded[state]
}

type state struct {
	auths   map[string]*Authority // by name
	servers map[string]*Server    // by bootstrap.ServerConfig.Key()
}

// New returns the authorities of a client, none in use yet.
func New(cfg Config) *Authorities { return &Authorities{cfg: cfg} }

// Authority is one xDS authority with its ordered server list and the
// fallback state of gRFC A71: which server it uses now.
type Authority struct {
	name    string
	servers []*bootstrap.ServerConfig
	group   *cache.Group
	s       txn.Guarded[authState]
}

type authState struct {
	chans  []*Server // chans[i] serves servers[i]; nil until used, or if it could not be made
	active int
}

// Name returns the authority's name ("#old" for old-style names).
func (a *Authority) Name() string { return a.name }

// Group returns the authority's cache entries.
func (a *Authority) Group() *cache.Group { return a.group }

// Active returns the server the authority uses, and its priority (0 is
// the primary).
func (a *Authority) Active(tx *txn.Tx) (*Server, int) {
	as := a.s.Of(tx)
	return as.chans[as.active], as.active
}

// Get returns the authority that serves name, a canonical resource name,
// making it, and starting its primary server, on first use.
func (as *Authorities) Get(tx *txn.Tx, name string) (*Authority, error) {
	st := as.s.Of(tx)
	key := authorityOf(name)
	if a := st.auths[key]; a != nil {
		return a, nil
	}
	servers, err := as.cfg.Bootstrap.ServersFor(name)
	if err != nil {
		return nil, err
	}
	if !as.cfg.Fallback && len(servers) > 1 {
		servers = servers[:1]
	}
	s, err := as.server(tx, servers[0])
	if err != nil {
		return nil, err
	}
	a := &Authority{name: key, servers: servers}
	a.s.Of(tx).chans = make([]*Server, len(servers))
	a.s.Of(tx).chans[0] = s
	a.group = cache.NewGroup(tx, key, s.src)
	s.s.Of(tx).auths[a] = struct{}{}
	if st.auths == nil {
		st.auths = map[string]*Authority{}
	}
	st.auths[key] = a
	as.cfg.Observer.AuthorityServer(tx, s, a, s, "", 0, "initial")
	return a, nil
}

// Of returns the authority of group g.
func (as *Authorities) Of(tx *txn.Tx, g *cache.Group) *Authority { return as.s.Of(tx).auths[g.Name] }

// All returns the authorities in use, sorted by name.
func (as *Authorities) All(tx *txn.Tx) []*Authority {
	st := as.s.Of(tx)
	out := make([]*Authority, 0, len(st.auths))
	for _, a := range st.auths {
		out = append(out, a)
	}
	slices.SortFunc(out, func(a, b *Authority) int { return strings.Compare(a.name, b.name) })
	return out
}

// Subscribe subscribes e, a new entry of a, on every server of a from the
// primary down to the active one. A resource wanted while the active
// server is down is missing: a may fall back (gRFC A71).
func (as *Authorities) Subscribe(tx *txn.Tx, a *Authority, e *cache.Entry) {
	st := a.s.Of(tx)
	for i := 0; i <= st.active; i++ {
		if s := st.chans[i]; s != nil {
			s.conn.Subscribe(e.Kind().URL, e.Kind().Rank, e.Name())
		}
	}
	if s := st.chans[st.active]; s.s.Of(tx).h.Failed {
		as.fallback(tx, a, s.s.Of(tx).h.Failure)
	}
}

// Unsubscribe unsubscribes e, which leaves the cache; when it was the last
// entry of a, a lets go of its servers (and is forgotten), and each server
// nothing else uses is closed.
func (as *Authorities) Unsubscribe(tx *txn.Tx, a *Authority, e *cache.Entry) {
	st := a.s.Of(tx)
	for i := 0; i <= st.active; i++ {
		if s := st.chans[i]; s != nil {
			s.conn.Unsubscribe(e.Kind().URL, e.Name())
		}
	}
	if a.group.Len(tx) > 0 {
		return
	}
	prev, _ := a.Active(tx)
	as.cfg.Observer.AuthorityServer(tx, prev, a, nil, prev.URI(), -1, "released: no resource of the authority is watched")
	for i, s := range st.chans {
		if s == nil {
			continue
		}
		st.chans[i] = nil
		auths := s.s.Of(tx).auths
		delete(auths, a)
		if len(auths) == 0 {
			s.close(tx, errNotUsed)
		}
	}
	delete(as.s.Of(tx).auths, a.name)
}

// Down returns, for a new watcher of a's entries, the cause of the
// failure of a's server ("" if it serves): the failure and the servers
// tried.
func (as *Authorities) Down(tx *txn.Tx, a *Authority) string {
	s, _ := a.Active(tx)
	if f := s.s.Of(tx).h.Failure; f != nil {
		return as.unreachable(tx, a, f)
	}
	return ""
}

// unreachable is the cause of the error of a's watchers when its server
// failed with reason.
func (as *Authorities) unreachable(tx *txn.Tx, a *Authority, reason error) string {
	return fmt.Sprintf("xDS server unreachable (servers tried: %s): %v", a.serverList(a.s.Of(tx).active), reason)
}

// serverList names the servers of a from the primary to index last.
func (a *Authority) serverList(last int) string {
	var b strings.Builder
	for i := 0; i <= last && i < len(a.servers); i++ {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%q", a.servers[i].ShownURI())
	}
	return b.String()
}

// Close closes every server, when the client closes.
func (as *Authorities) Close(tx *txn.Tx, reason error) {
	for _, s := range as.Servers(tx) {
		s.close(tx, reason)
	}
	*as.s.Of(tx) = state{}
}

// failed handles a failure of server s (gRFC A57). For each authority
// whose active server s is, it falls back to the next server when a
// watched resource was never received (gRFC A71); the watchers of an
// authority that falls back hear nothing, since the next server may serve
// them at once. The watchers of the others are told, if notify is set:
// ambient if the resource is held, through ResourceChanged if not.
// Watchers of authorities served by another server hear nothing: a failed
// retry of a recovering primary is no news to them.
func (as *Authorities) failed(tx *txn.Tx, s *Server, reason error, notify bool) {
	var failing []*Authority
	for _, a := range s.authorities(tx) {
		if active, _ := a.Active(tx); active != s || as.fallback(tx, a, reason) {
			continue
		}
		failing = append(failing, a)
	}
	if !notify {
		return
	}
	for _, a := range failing {
		as.cfg.Cache.Unreachable(tx, a.group, as.unreachable(tx, a, reason))
	}
}

// authorities returns the authorities using s, sorted by name.
func (s *Server) authorities(tx *txn.Tx) []*Authority {
	auths := s.s.Of(tx).auths
	out := make([]*Authority, 0, len(auths))
	for a := range auths {
		out = append(out, a)
	}
	slices.SortFunc(out, func(a, b *Authority) int { return strings.Compare(a.name, b.name) })
	return out
}

// fallback moves a, whose active server failed with reason, to its next
// server if gRFC A71 says so: a resource of a was never received. A server
// whose channel cannot be made is skipped (logged), as is one already
// failing; it reports whether a now uses a server that is not known to
// fail. When it does, a's watchers need not hear of the failure.
func (as *Authorities) fallback(tx *txn.Tx, a *Authority, reason error) bool {
	st := a.s.Of(tx)
	if st.active+1 >= len(a.servers) || !a.group.Missing(tx) {
		return false
	}
	prev := st.chans[st.active]
	for i := st.active + 1; i < len(a.servers); i++ {
		next, err := as.server(tx, a.servers[i])
		if err != nil {
			as.cfg.Observer.Log(tx, prev, slog.LevelWarn, "xDS fallback server unusable; trying the next one", "authority", xerr.Bound(a.name), "fallback", a.servers[i].ShownURI(), "priority", i, "err", xerr.ShownErr(err))
			continue
		}
		st.chans[i] = next
		next.s.Of(tx).auths[a] = struct{}{}
		for e := range as.cfg.Cache.EntriesOf(tx, a.group) {
			next.conn.Subscribe(e.Kind().URL, e.Kind().Rank, e.Name())
		}
		as.cfg.Observer.Log(tx, prev, slog.LevelWarn, "xDS fallback: using a lower priority server", "authority", xerr.Bound(a.name), "from", prev.URI(), "to", next.URI(), "reason", xerr.ShownErr(reason))
		as.cfg.Observer.AuthorityServer(tx, prev, a, next, prev.URI(), i, fmt.Sprintf("fallback: %q failed (%s) while resources were missing", prev.URI(), xerr.ShownErr(reason)))
		as.use(tx, a, i, prev)
		if h := next.s.Of(tx).h; !h.Failed {
			return true
		} else {
			// The fallback server is down already (it serves another
			// authority): on to the next.
			prev, reason = next, h.Failure
		}
	}
	return false
}

// use makes the server at index i a's active one, where prev was: the
// entries' timers move to it, and its lane runs their callbacks from now
// on, after what prev's lane had been given (the switch's own hook and log
// lines included).
func (as *Authorities) use(tx *txn.Tx, a *Authority, i int, prev *Server) {
	st := a.s.Of(tx)
	to := st.chans[i]
	st.active = i
	to.src.Lane.Fence(tx, prev.src.Lane)
	as.cfg.Cache.SetActive(tx, a.group, to.src)
	if h := to.s.Of(tx).h; h.TimersRun() {
		to.startTimers(tx)
	}
}

// switchBackTo makes s active again for every authority that uses a lower
// priority server, after s delivered a resource: the lower priority
// servers are unsubscribed and, when nothing else uses them, closed
// (gRFC A71).
func (as *Authorities) switchBackTo(tx *txn.Tx, s *Server) {
	for _, a := range s.authorities(tx) {
		st := a.s.Of(tx)
		i := slices.Index(st.chans, s)
		if i < 0 || i >= st.active {
			continue
		}
		prev := st.chans[st.active]
		for j := i + 1; j <= st.active; j++ {
			low := st.chans[j]
			if low == nil {
				continue
			}
			for e := range as.cfg.Cache.EntriesOf(tx, a.group) {
				low.conn.Unsubscribe(e.Kind().URL, e.Name())
			}
			auths := low.s.Of(tx).auths
			delete(auths, a)
			st.chans[j] = nil
			if len(auths) == 0 {
				low.close(tx, fmt.Errorf("switched back to %q", s.URI()))
			}
		}
		as.cfg.Observer.Log(tx, prev, slog.LevelInfo, "xDS fallback over: back to a higher priority server", "authority", xerr.Bound(a.name), "from", prev.URI(), "to", s.URI())
		as.cfg.Observer.AuthorityServer(tx, prev, a, s, prev.URI(), i, fmt.Sprintf("%q delivered a resource again", s.URI()))
		as.use(tx, a, i, prev)
	}
}

// authorityOf returns the xDS authority of a canonical resource name: the
// decoded authority of an xdstp:// name, or "#old" for an old-style name.
func authorityOf(name string) string {
	if !xdstp.Is(name) {
		return "#old"
	}
	auth, err := xdstp.Authority(name)
	if err != nil {
		return name
	}
	return auth
}
