package xdsserver

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"sync"

	"github.com/xdslens/xdslens/xdsclient/xdsresource/serverlistener"

	"github.com/xdslens/xdslens/xdsclient/xdsresource/routeconfig"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/xdslens/xdslens/httpfilter"
	"github.com/xdslens/xdslens/xdsclient"
	"github.com/xdslens/xdslens/xdsclient/xdsresource"
)

// listenerState serves one listening address: it watches its Listener
// and the route configurations the Listener names, keeps its serving mode,
// and matches new connections to filter chains.
type listenerState struct {
	s    *Server
	lis  net.Listener
	addr string       // lis.Addr().String()
	tcp  *net.TCPAddr // lis.Addr()
	name string       // the Listener resource

	mu sync.Mutex // guards the fields below; never held while calling out
	// current is the chain set in use, nil while not serving; pending a
	// newer one waiting for its route configurations.
	current, pending *chainSet
	mode             Mode
	modeErr          error
	rds              map[string]*rdsWatch
	conns            map[*serverConn]struct{} // accepted and not drained
	cancelLDS        func()
	closed           bool
}

// chainSet is the filter chains of one version of the Listener.
type chainSet struct {
	matcher chainMatcher
	// rds are the route configuration names its chains use.
	rds []string
}

// rdsWatch is the watch of one route configuration.
type rdsWatch struct {
	cancel func()
	have   bool // a route configuration or an error has come
	rc     *routeconfig.Config
	err    error
}

func newListenerState(s *Server, lis net.Listener, name string) *listenerState {
	return &listenerState{
		s: s, lis: lis, addr: lis.Addr().String(), tcp: lis.Addr().(*net.TCPAddr), name: name,
		rds: map[string]*rdsWatch{}, conns: map[*serverConn]struct{}{},
	}
}

// effects are calls to make once the lock is released: mode callbacks,
// hooks, drains.
type effects []func()

func (e effects) run() {
	for _, f := range e {
		f()
	}
}

func (ls *listenerState) start() {
	cancel := xdsclient.WatchListener(ls.s.client, ls.name, ldsWatcher{ls})
	ls.mu.Lock()
	closed := ls.closed
	ls.cancelLDS = cancel
	ls.mu.Unlock()
	if closed {
		cancel()
	}
}

// close cancels the watches; the connections are gRPC's to close.
func (ls *listenerState) close() {
	ls.mu.Lock()
	if ls.closed {
		ls.mu.Unlock()
		return
	}
	ls.closed = true
	cancels := []func(){}
	if ls.cancelLDS != nil {
		cancels = append(cancels, ls.cancelLDS)
	}
	for name, w := range ls.rds {
		cancels = append(cancels, w.cancel)
		delete(ls.rds, name)
	}
	ls.mu.Unlock()
	for _, c := range cancels {
		c()
	}
}

type ldsWatcher struct{ ls *listenerState }

func (w ldsWatcher) ResourceChanged(l *xdsresource.Listener, err error) {
	ls := w.ls
	ls.mu.Lock()
	var eff effects
	var cancels []func()
	switch {
	case ls.closed:
	case err != nil:
		eff, cancels = ls.notServing(xdsclient.DataPlaneError(err))
	case l.Server == nil:
		eff, cancels = ls.notServing(status.Errorf(codes.Unavailable, "Listener %q is a client Listener (it has an api_listener), not one for a server", ls.name))
	case !ls.addressMatches(l.Server):
		eff, cancels = ls.notServing(status.Errorf(codes.Unavailable, "Listener %q has the address %s, not the listening address %s",
			ls.name, net.JoinHostPort(l.Server.Address, strconv.Itoa(int(l.Server.Port))), ls.addr))
	default:
		eff, cancels = ls.update(l.Server)
	}
	ls.mu.Unlock()
	runAll(cancels)
	eff.run()
}

// AmbientError leaves the Listener in use (gRFC A88): the server keeps
// serving with what it has.
func (w ldsWatcher) AmbientError(error) {}

func runAll(fs []func()) {
	for _, f := range fs {
		f()
	}
}

// addressMatches reports whether the Listener's address is the listening
// one: the same IP address (in any notation) or host, and port.
func (ls *listenerState) addressMatches(l *serverlistener.Listener) bool {
	if int(l.Port) != ls.tcp.Port {
		return false
	}
	want, ok := netip.AddrFromSlice(ls.tcp.IP)
	if got, err := netip.ParseAddr(l.Address); err == nil && ok {
		return got.Unmap() == want.Unmap()
	}
	host, _, _ := net.SplitHostPort(ls.addr)
	return l.Address == host
}

// update takes a new valid Listener: its chain set waits for the route
// configurations it names, then replaces the one in use.
func (ls *listenerState) update(l *serverlistener.Listener) (effects, []func()) {
	cs := &chainSet{}
	add := func(fc *serverlistener.FilterChain, isDefault bool) *chain {
		c := newChain(fc, isDefault)
		if fc.RouteConfigName != "" {
			if !slices.Contains(cs.rds, fc.RouteConfigName) {
				cs.rds = append(cs.rds, fc.RouteConfigName)
			}
		} else {
			name := fmt.Sprintf("the inline route configuration of filter chain %q", fc.Name)
			c.routes.Store(compileTable(c, fc.InlineRouteConfig, name, ls.env(c)))
		}
		return c
	}
	for i := range l.FilterChains {
		cs.matcher.chains = append(cs.matcher.chains, add(&l.FilterChains[i], false))
	}
	if l.DefaultFilterChain != nil {
		cs.matcher.def = add(l.DefaultFilterChain, true)
	}
	for _, name := range cs.rds {
		if ls.rds[name] == nil {
			w := &rdsWatch{}
			ls.rds[name] = w
			// The watch's first callback may come at once, on another
			// goroutine: it waits for the lock.
			w.cancel = xdsclient.WatchRouteConfig(ls.s.client, name, rdsWatcher{ls: ls, name: name, w: w})
		}
	}
	ls.pending = cs
	return ls.maybeActivate()
}

// env is what the HTTP filters of chain c are given.
func (ls *listenerState) env(c *chain) httpfilter.ServerEnv {
	addr, label := ls.addr, c.label()
	s := ls.s
	return httpfilter.ServerEnv{Stdout: s.cfg.stdout, Authz: func(d httpfilter.AuthzDecision) {
		if h := s.hooks.Load(); h != nil && h.AuthzDecision != nil {
			h.AuthzDecision(AuthzInfo{Address: addr, Chain: label, Filter: d.FilterName, Method: d.Method, Allowed: d.Allowed, Policy: d.Policy, Deny: d.Deny})
		}
	}}
}

// maybeActivate puts the pending chain set in use once every route
// configuration it names has come (or failed): connections whose chain is
// the same in it are moved to it, the others drained.
func (ls *listenerState) maybeActivate() (effects, []func()) {
	cs := ls.pending
	if cs == nil {
		return nil, nil
	}
	for _, name := range cs.rds {
		if !ls.rds[name].have {
			return nil, nil
		}
	}
	for _, c := range cs.matcher.all() {
		if name := c.fc.RouteConfigName; name != "" {
			c.routes.Store(ls.tableFor(c, name))
		}
	}
	ls.pending, ls.current = nil, cs
	var eff effects
	change := ListenerChangeInfo{Address: ls.addr, Listener: ls.name, Chains: len(cs.matcher.all())}
	for sc := range ls.conns {
		c := cs.matcher.match(sc.local, sc.remote)
		if c != nil && sameChain(sc.chain.Load().fc, c.fc) {
			sc.chain.Store(c)
			change.Kept++
			continue
		}
		delete(ls.conns, sc)
		change.Drained++
		eff = append(eff, sc.drainFunc(false, errors.New("the Listener changed the connection's filter chain")))
	}
	s := ls.s
	eff = append(eff, func() {
		if h := s.hooks.Load(); h != nil && h.ListenerChanged != nil {
			h.ListenerChanged(change)
		}
	})
	eff = append(eff, ls.setMode(ModeServing, nil)...)
	return eff, ls.unusedRDS()
}

// tableFor compiles route configuration name, as last received, for c.
func (ls *listenerState) tableFor(c *chain, name string) *routeTable {
	w := ls.rds[name]
	what := fmt.Sprintf("RDS resource %q", name)
	if w.err != nil {
		return errorTable(fmt.Errorf("%s: %v", what, status.Convert(xdsclient.DataPlaneError(w.err)).Message()))
	}
	return compileTable(c, w.rc, what, ls.env(c))
}

// unusedRDS ends the route configuration watches that neither the
// current nor the pending chain set needs, and returns their cancels.
func (ls *listenerState) unusedRDS() []func() {
	var cancels []func()
	for name, w := range ls.rds {
		if (ls.current == nil || !slices.Contains(ls.current.rds, name)) && (ls.pending == nil || !slices.Contains(ls.pending.rds, name)) {
			cancels = append(cancels, w.cancel)
			delete(ls.rds, name)
		}
	}
	return cancels
}

// notServing stops serving: no chain set, every connection drained.
func (ls *listenerState) notServing(err error) (effects, []func()) {
	ls.current, ls.pending = nil, nil
	var eff effects
	for sc := range ls.conns {
		delete(ls.conns, sc)
		eff = append(eff, sc.drainFunc(true, fmt.Errorf("the address stopped serving: %w", err)))
	}
	eff = append(eff, ls.setMode(ModeNotServing, err)...)
	return eff, ls.unusedRDS()
}

// setMode records the serving mode and returns the calls that report a
// change.
func (ls *listenerState) setMode(m Mode, err error) effects {
	if m == ls.mode && (m == ModeServing || errString(err) == errString(ls.modeErr)) {
		return nil
	}
	prev := ls.mode
	ls.mode, ls.modeErr = m, err
	change := ServingModeChange{Address: ls.addr, Listener: ls.name, Mode: m, Err: err}
	s := ls.s
	return effects{func() {
		if h := s.hooks.Load(); h != nil && h.ServingModeChanged != nil {
			h.ServingModeChanged(change)
		}
		switch {
		case s.cfg.modeCallback != nil:
			s.cfg.modeCallback(change)
		case m == ModeNotServing:
			s.cfg.logger.Warn("xDS-enabled server not serving", "address", change.Address, "listener", change.Listener, "error", err)
		case prev == ModeNotServing:
			s.cfg.logger.Warn("xDS-enabled server serving again", "address", change.Address, "listener", change.Listener)
		}
	}}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

type rdsWatcher struct {
	ls   *listenerState
	name string
	w    *rdsWatch
}

func (r rdsWatcher) ResourceChanged(rc *routeconfig.Config, err error) {
	ls := r.ls
	ls.mu.Lock()
	if ls.closed || ls.rds[r.name] != r.w {
		ls.mu.Unlock()
		return // a watch that was ended
	}
	r.w.have, r.w.rc, r.w.err = true, rc, err
	if err != nil {
		r.w.rc = nil
	}
	// The chains in use take the new route configuration at once.
	if ls.current != nil {
		for _, c := range ls.current.matcher.all() {
			if c.fc.RouteConfigName == r.name {
				c.routes.Store(ls.tableFor(c, r.name))
			}
		}
	}
	eff, cancels := ls.maybeActivate()
	ls.mu.Unlock()
	runAll(cancels)
	eff.run()
}

// AmbientError leaves the route configuration in use (gRFC A88).
func (rdsWatcher) AmbientError(error) {}

// all returns every chain of m, the default one last.
func (m *chainMatcher) all() []*chain {
	if m.def == nil {
		return m.chains
	}
	return append(slices.Clip(m.chains), m.def)
}

// servingListener is the net.Listener gRPC serves: it accepts only while
// the address serves, and matches each connection to a filter chain.
type servingListener struct{ ls *listenerState }

func (l *servingListener) Addr() net.Addr { return l.ls.lis.Addr() }
func (l *servingListener) Close() error   { return l.ls.lis.Close() }

// Accept returns the next connection that a filter chain serves; the
// others are closed at once, before a byte is sent (gRFC A36).
func (l *servingListener) Accept() (net.Conn, error) {
	ls := l.ls
	for {
		raw, err := ls.lis.Accept()
		if err != nil {
			return nil, err
		}
		local, remote := addrPort(raw.LocalAddr()), addrPort(raw.RemoteAddr())
		ls.mu.Lock()
		var c *chain
		if ls.current != nil {
			c = ls.current.matcher.match(local, remote)
		}
		var sc *serverConn
		if c != nil {
			sc = ls.s.newConn(ls, raw, c, local, remote)
			ls.conns[sc] = struct{}{}
		}
		refused := ConnRefusedInfo{Address: ls.addr, Local: local, Remote: remote, NotServing: ls.current == nil}
		switch {
		case c != nil:
		case refused.NotServing && ls.modeErr != nil:
			refused.Err = fmt.Errorf("not serving: %w", ls.modeErr)
		case refused.NotServing:
			refused.Err = errors.New("not serving: no Listener yet")
		default:
			refused.Err = errors.New("no filter chain matches the connection, and the Listener has no default_filter_chain")
		}
		ls.mu.Unlock()
		if sc != nil {
			if closed := sc.announce(); !closed {
				return sc, nil
			}
			continue // drained (the address stopped serving) as it was reported
		}
		raw.Close()
		if h := ls.s.hooks.Load(); h != nil && h.ConnectionRefused != nil {
			ls.s.connHooks.Post(func() { h.ConnectionRefused(refused) })
		}
	}
}

// forget removes a closed connection.
func (ls *listenerState) forget(sc *serverConn) {
	ls.mu.Lock()
	delete(ls.conns, sc)
	ls.mu.Unlock()
}

// addrPort returns a TCP address as a netip.AddrPort, IPv4-mapped
// addresses unmapped; the zero value for another kind.
func addrPort(a net.Addr) netip.AddrPort {
	t, ok := a.(*net.TCPAddr)
	if !ok {
		return netip.AddrPort{}
	}
	ap := t.AddrPort()
	return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
}
