package xdsserver

import (
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/xdslens/xdslens/httpfilter"
)

// serverConn is an accepted connection, bound to the filter chain that
// serves it.
type serverConn struct {
	net.Conn // as accepted
	s        *Server
	ls       *listenerState
	// key is what RemoteAddr returns, a pointer made for this connection:
	// gRPC gives it to each RPC in its peer, and the server looks the
	// connection up by it.
	key           *net.TCPAddr
	local, remote netip.AddrPort

	chain atomic.Pointer[chain]
	// info and out are set by the handshake: the connection as filters
	// see it, and the conn gRPC writes HTTP/2 frames to.
	info atomic.Pointer[httpfilter.Conn]
	out  atomic.Pointer[frameConn]

	closeOnce sync.Once
	timerMu   sync.Mutex
	timer     *time.Timer // closes a drained connection at the grace time
	closed    bool

	hooks hookLane
}

// hookLane puts the hooks of one connection in order on the server's
// queue of connection hooks, whichever goroutines report them:
// ConnectionAccepted first (a drain or a close reported while Accept is
// still reporting the connection waits for it), ConnectionClosed last.
// Once the server closes the connection, what the close cuts short (a
// handshake) is not reported.
type hookLane struct {
	mu       sync.Mutex // held while a hook of the connection is queued, but ConnectionAccepted
	accepted bool       // ConnectionAccepted has been queued
	closing  bool       // Close was called
	pending  []func(*Hooks)
}

// report queues hook, to be called with the server's hooks, once
// ConnectionAccepted has been queued; not at all once the connection is
// closing, unless closes says that hook reports the close.
func (sc *serverConn) report(hook func(*Hooks), closes bool) {
	l := &sc.hooks
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closing && !closes {
		return
	}
	if !l.accepted {
		l.pending = append(l.pending, hook)
		return
	}
	if h := sc.s.hooks.Load(); h != nil {
		sc.s.connHooks.Post(func() { hook(h) })
	}
}

// beginClose marks the connection closing: from now on only its close is
// reported.
func (sc *serverConn) beginClose() {
	sc.hooks.mu.Lock()
	sc.hooks.closing = true
	sc.hooks.mu.Unlock()
}

// announce queues ConnectionAccepted, then the hooks reported meanwhile,
// and reports whether the connection was closed meanwhile (drained before
// Accept could hand it over).
func (sc *serverConn) announce() (closed bool) {
	if h := sc.s.hooks.Load(); h != nil && h.ConnectionAccepted != nil {
		info := sc.connInfo()
		sc.s.connHooks.Post(func() { h.ConnectionAccepted(info) })
	}
	l := &sc.hooks
	l.mu.Lock()
	defer l.mu.Unlock()
	l.accepted = true
	if h := sc.s.hooks.Load(); h != nil {
		for _, hook := range l.pending {
			sc.s.connHooks.Post(func() { hook(h) })
		}
	}
	l.pending = nil
	return l.closing
}

func (s *Server) newConn(ls *listenerState, raw net.Conn, c *chain, local, remote netip.AddrPort) *serverConn {
	key := &net.TCPAddr{IP: remote.Addr().AsSlice(), Port: int(remote.Port())}
	if t, ok := raw.RemoteAddr().(*net.TCPAddr); ok {
		k := *t
		key = &k
	}
	sc := &serverConn{Conn: raw, s: s, ls: ls, key: key, local: local, remote: remote}
	sc.chain.Store(c)
	sc.info.Store(httpfilter.NewConn(local, remote, nil))
	s.conns.Store(net.Addr(key), sc)
	return sc
}

// RemoteAddr returns the peer's address, the same pointer every time.
func (sc *serverConn) RemoteAddr() net.Addr { return sc.key }

// Close closes the connection and forgets it.
func (sc *serverConn) Close() error {
	sc.beginClose()
	err := sc.Conn.Close()
	sc.closeOnce.Do(func() {
		sc.s.conns.Delete(net.Addr(sc.key))
		sc.ls.forget(sc)
		sc.timerMu.Lock()
		sc.closed = true
		if sc.timer != nil {
			sc.timer.Stop()
		}
		sc.timerMu.Unlock()
		if out := sc.out.Load(); out != nil {
			out.stop()
		}
		sc.report(func(h *Hooks) {
			if h.ConnectionClosed != nil {
				h.ConnectionClosed(sc.connInfo())
			}
		}, true)
	})
	return err
}

func (sc *serverConn) connInfo() ConnInfo {
	c := sc.chain.Load()
	return ConnInfo{Address: sc.ls.addr, Local: sc.local, Remote: sc.remote, Chain: c.label(), DefaultChain: c.isDefault, TLS: c.fc.Security != nil}
}

// drainFunc returns the call that drains the connection: a graceful
// shutdown in two phases starting now (frameConn), the connection closed
// at the drain grace time if the client has not closed it. A connection
// still in its handshake is closed at once: it has no RPC.
func (sc *serverConn) drainFunc(notServing bool, why error) func() {
	return func() {
		sc.report(func(h *Hooks) {
			if h.ConnectionDrained != nil {
				h.ConnectionDrained(ConnDrainInfo{ConnInfo: sc.connInfo(), NotServing: notServing, Err: why})
			}
		}, false)
		out := sc.out.Load()
		if out == nil {
			sc.Close()
			return
		}
		sc.timerMu.Lock()
		if !sc.closed && sc.timer == nil {
			sc.timer = time.AfterFunc(sc.s.cfg.drainGrace, sc.graceExpired)
		}
		sc.timerMu.Unlock()
		sc.s.bg.Add(1)
		go func() { // a write may wait for a slow client
			defer sc.s.bg.Done()
			out.drain()
		}()
	}
}

// graceExpired closes a drained connection still open at the drain grace
// time, with the RPCs still on it; one that closed first is not reported.
func (sc *serverConn) graceExpired() {
	sc.report(func(h *Hooks) {
		if h.DrainGraceExpired != nil {
			h.DrainGraceExpired(sc.connInfo())
		}
	}, false)
	sc.Close()
}
