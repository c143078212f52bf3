package xdsserver

import (
	"net/netip"

	"github.com/xdslens/xdslens/internal/hookset"
)

// Mode is the serving mode of one listening address (gRFC A36).
type Mode uint8

// Serving modes.
const (
	// ModeStarting: no Listener has been heard of yet; connections are
	// closed as they come.
	ModeStarting Mode = iota
	// ModeServing: the Listener is valid; connections are served by its
	// filter chains.
	ModeServing
	// ModeNotServing: the Listener cannot be used (it does not exist, was
	// rejected, was deleted, or its address is not the listening one);
	// connections are closed as they come, and those open are drained.
	ModeNotServing
)

// String returns "STARTING", "SERVING" or "NOT_SERVING".
func (m Mode) String() string {
	switch m {
	case ModeStarting:
		return "STARTING"
	case ModeServing:
		return "SERVING"
	case ModeNotServing:
		return "NOT_SERVING"
	}
	return "UNKNOWN"
}

// ServingModeChange is a change of the serving mode of one listening
// address.
type ServingModeChange struct {
	// Address is the listening address, "host:port" as Serve's listener
	// gives it.
	Address string
	// Listener is the name of the Listener resource the address is
	// served by.
	Listener string
	Mode     Mode
	// Err says why the address is not serving; nil when serving.
	Err error
}

// Hooks report what an xDS-enabled server does, in the style of
// xdsclient.Hooks: each field is an optional func called when its event
// happens, and a nil field costs nothing. ServingModeChanged and
// ListenerChanged run on the goroutine of the xDS watch, AuthzDecision on
// the RPC's; they must be cheap and must not block. The hooks of
// connections (ConnectionAccepted, ConnectionRefused, HandshakeFailed,
// ConnectionDrained, GoAwayIgnored, DrainGraceExpired, ConnectionClosed)
// run one at a time, in the order
// they were reported, on a goroutine of the server's own, a little after
// the event: not on Serve's or a transport's goroutines, which stopping
// the server waits for, so that a connection hook may block without
// holding back Accept, or stop the server. Stop and GracefulStop return
// once the connection hooks reported before have run, unless one was
// running when they were called (it may be the one that stops the
// server): then they run just after. The fields of their Info values may
// be added to in later versions.
//
// The hooks of one connection come in order, whichever goroutines report
// them: ConnectionAccepted first, then HandshakeFailed or
// ConnectionDrained (and GoAwayIgnored or DrainGraceExpired), then
// ConnectionClosed, and nothing after it; a
// handshake cut short because the server closed the connection is not
// reported as failed. Hooks given to WithHooks and AddHooks are called in
// the order they were given.
type Hooks struct {
	// ServingModeChanged is called with ModeStarting when Serve starts
	// serving an address, then whenever the address changes its serving
	// mode or stays not serving for a new reason, and with ModeNotServing
	// when Serve returns (ErrStopped after Stop).
	ServingModeChanged func(ServingModeChange)
	// ListenerChanged is called when a listening address starts using a
	// new version of its Listener (after its route configurations came),
	// with what became of the connections open.
	ListenerChanged func(ListenerChangeInfo)
	// ConnectionAccepted is called when a new connection is matched to a
	// filter chain, before its handshake.
	ConnectionAccepted func(ConnInfo)
	// ConnectionRefused is called when a new connection is closed at once:
	// the address is not serving, or no filter chain matches it.
	ConnectionRefused func(ConnRefusedInfo)
	// ConnectionClosed is called when an accepted connection closes.
	ConnectionClosed func(ConnInfo)
	// ConnectionDrained is called when a connection is told to go away
	// (HTTP/2 GOAWAY) because its filter chain changed or the address
	// stopped serving; it closes when its RPCs are done, or at the drain
	// grace time.
	ConnectionDrained func(ConnDrainInfo)
	// HandshakeFailed is called when the TLS (or fallback credentials')
	// handshake of a connection fails.
	HandshakeFailed func(HandshakeInfo)
	// GoAwayIgnored is called when the client of a drained connection
	// opens a stream after the final GOAWAY: the connection is closed
	// before gRPC reads that stream (its ConnectionClosed follows).
	GoAwayIgnored func(ConnInfo)
	// DrainGraceExpired is called when a drained connection is still open
	// at the drain grace time (WithDrainGraceTime): the server closes it,
	// and the RPCs still on it fail (its ConnectionClosed follows).
	DrainGraceExpired func(ConnInfo)
	// AuthzDecision is called with every decision of an authorization
	// filter (RBAC), on the RPC's goroutine.
	AuthzDecision func(AuthzInfo)
}

// ListenerChangeInfo describes a new version of a Listener in use.
type ListenerChangeInfo struct {
	Address, Listener string
	// Chains is the number of filter chains, the default one included.
	Chains int
	// Kept is the number of open connections whose chain did not change,
	// which go on; Drained those told to go away.
	Kept, Drained int
}

// ConnInfo describes a connection of a listening address.
type ConnInfo struct {
	// Address is the listening address.
	Address string
	// Local and Remote are the connection's addresses.
	Local, Remote netip.AddrPort
	// Chain is the name of the filter chain serving it ("" when unnamed);
	// DefaultChain says it is the Listener's default_filter_chain.
	Chain        string
	DefaultChain bool
	// TLS says whether the chain applies TLS.
	TLS bool
}

// ConnRefusedInfo describes a connection closed as it came.
type ConnRefusedInfo struct {
	Address       string
	Local, Remote netip.AddrPort
	// NotServing is true when the address was not serving; otherwise no
	// filter chain matched the connection.
	NotServing bool
	// Err says why.
	Err error
}

// ConnDrainInfo describes a connection told to go away.
type ConnDrainInfo struct {
	ConnInfo
	// NotServing is true when the address stopped serving; otherwise the
	// Listener changed the connection's chain.
	NotServing bool
	// Err says why.
	Err error
}

// HandshakeInfo describes a failed handshake. It carries no key material:
// Err is the handshake's error, as crypto/tls gives it.
type HandshakeInfo struct {
	ConnInfo
	// Side is "server": the handshake of the server's side of the
	// connection.
	Side string
	Err  error
}

// AuthzInfo describes a decision of an authorization filter.
type AuthzInfo struct {
	// Address and Chain name where the RPC came in.
	Address, Chain string
	// Filter is the filter's instance name; Method the RPC's full method
	// name.
	Filter, Method string
	// Allowed says whether the RPC went on; Policy is the policy that
	// matched ("" when none did); Deny is true when the rules' action is
	// DENY.
	Allowed bool
	Policy  string
	Deny    bool
}

// compose returns hooks whose every func calls the funcs of hs that set
// it, in order (package hookset), so that each event costs one nil check.
func compose(hs []*Hooks) *Hooks {
	return &Hooks{
		ServingModeChanged: hookset.Join(hs, func(h *Hooks) func(ServingModeChange) { return h.ServingModeChanged }),
		ListenerChanged:    hookset.Join(hs, func(h *Hooks) func(ListenerChangeInfo) { return h.ListenerChanged }),
		ConnectionAccepted: hookset.Join(hs, func(h *Hooks) func(ConnInfo) { return h.ConnectionAccepted }),
		ConnectionRefused:  hookset.Join(hs, func(h *Hooks) func(ConnRefusedInfo) { return h.ConnectionRefused }),
		ConnectionClosed:   hookset.Join(hs, func(h *Hooks) func(ConnInfo) { return h.ConnectionClosed }),
		GoAwayIgnored:      hookset.Join(hs, func(h *Hooks) func(ConnInfo) { return h.GoAwayIgnored }),
		DrainGraceExpired:  hookset.Join(hs, func(h *Hooks) func(ConnInfo) { return h.DrainGraceExpired }),
		ConnectionDrained:  hookset.Join(hs, func(h *Hooks) func(ConnDrainInfo) { return h.ConnectionDrained }),
		HandshakeFailed:    hookset.Join(hs, func(h *Hooks) func(HandshakeInfo) { return h.HandshakeFailed }),
		AuthzDecision:      hookset.Join(hs, func(h *Hooks) func(AuthzInfo) { return h.AuthzDecision }),
	}
}
