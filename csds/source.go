package csds

import (
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"

	"github.com/xdslens/xdslens/xdsclient"
)

// Client is what a Server reads from one xDS client. *xdsclient.Client
// implements it.
type Client interface {
	// Target is the client's pool key, reported as client_scope.
	Target() string
	// Node is the node the client sends to its xDS servers.
	Node() *corev3.Node
	// Dump returns the client's cache entries, sorted by type URL and name.
	Dump() []xdsclient.EntrySnapshot
}

var _ Client = (*xdsclient.Client)(nil)

// Source is what a Server reports, given to NewServer as it is, the same
// way telemetry.New takes a client or a pool:
//
//   - a *xdsclient.Client: that one client (exactly one ClientConfig, as
//     grpcdebug v1.0.5 requires; ForTarget does the same for one target
//     of a pool);
//   - a *xdsclient.Pool: every client of the pool at the time of each
//     request (gRFC A71: one ClientConfig per client, scoped by its target);
//   - a SourceFunc: the clients it lists, called once per request.
type Source interface {
	*xdsclient.Client | *xdsclient.Pool | SourceFunc
}

// SourceFunc lists the clients a Server reports. It is called once per
// request; the order does not matter (the Server sorts by target).
type SourceFunc func() []Client

// Clients returns f().
func (f SourceFunc) Clients() []Client { return f() }

// sourceFunc turns src into the func a Server calls per request.
func sourceFunc[S Source](src S) SourceFunc {
	switch s := any(src).(type) {
	case *xdsclient.Client:
		return ForClient(s)
	case *xdsclient.Pool:
		return ForPool(s)
	case SourceFunc:
		return s
	}
	panic("unreachable: Source has three types")
}

// ForClient returns a SourceFunc of the one client c, for a Client that is
// not an *xdsclient.Client.
func ForClient(c Client) SourceFunc {
	return SourceFunc(func() []Client { return []Client{c} })
}

// ForPool returns a SourceFunc of every client of p at the time of each
// request. A client that p closes while a request reads it is still
// reported.
func ForPool(p *xdsclient.Pool) SourceFunc {
	return SourceFunc(func() []Client {
		cs := p.Clients()
		out := make([]Client, len(cs))
		for i, c := range cs {
			out[i] = c
		}
		return out
	})
}

// ForTarget returns a SourceFunc of the one client of p whose target is
// target, at the time of each request: a response holds exactly one
// ClientConfig while p has that client, and none while it has not. One
// server per target serves readers that accept a single ClientConfig, such
// as grpcdebug v1.0.5, from a pool of several clients.
func ForTarget(p *xdsclient.Pool, target string) SourceFunc {
	return SourceFunc(func() []Client {
		for _, c := range p.Clients() {
			if c.Target() == target {
				return []Client{c}
			}
		}
		return nil
	})
}
