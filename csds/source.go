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

// Source lists the clients a Server reports. It is called once per
// request; the order does not matter (the Server sorts by target).
type Source interface {
	Clients() []Client
}

// SourceFunc adapts a func to a Source.
type SourceFunc func() []Client

// Clients returns f().
func (f SourceFunc) Clients() []Client { return f() }

// ForClient returns a Source of the one client c. A Server over it returns
// exactly one ClientConfig, as older grpcdebug builds expect.
func ForClient(c Client) Source {
	return SourceFunc(func() []Client { return []Client{c} })
}

// ForPool returns a Source of every client of p at the time of each request
// (gRFC A71: one ClientConfig per client, scoped by its target). A client
// that p closes while a request reads it is still reported.
func ForPool(p *xdsclient.Pool) Source {
	return SourceFunc(func() []Client {
		cs := p.Clients()
		out := make([]Client, len(cs))
		for i, c := range cs {
			out[i] = c
		}
		return out
	})
}
