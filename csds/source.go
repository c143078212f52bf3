package csds

import (
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"

	"github.com/xdslens/xdslens/xdsclient"
)

// client is what a Server reads from one xDS client.
type client interface {
	// Target is the client's pool key, reported as client_scope.
	Target() string
	// Node is the node the client sends to its xDS servers.
	Node() *corev3.Node
	// Dump returns the client's cache entries, sorted by type URL and name.
	Dump() []xdsclient.EntrySnapshot
}

var _ client = (*xdsclient.Client)(nil)

// clientsOf lists the clients of src, at each request.
func clientsOf(src xdsclient.Source) func() []client {
	return func() []client {
		cs := src.Clients()
		out := make([]client, len(cs))
		for i, c := range cs {
			out[i] = c
		}
		return out
	}
}

// ForTarget returns the Source of the one client of p whose target is
// target: a Server over it answers with exactly one ClientConfig while p
// has that client, and none while it has not. One server per target
// serves readers that accept a single ClientConfig, such as grpcdebug
// v1.0.5, from a pool of several clients.
func ForTarget(p *xdsclient.Pool, target string) xdsclient.Source { return targetSource{p, target} }

// targetSource is the clients of a pool of one target.
type targetSource struct {
	p      *xdsclient.Pool
	target string
}

func (s targetSource) Clients() []*xdsclient.Client {
	for _, c := range s.p.Clients() {
		if c.Target() == s.target {
			return []*xdsclient.Client{c}
		}
	}
	return nil
}

func (s targetSource) Observe(added, removed func(*xdsclient.Client)) (stop func()) {
	only := func(f func(*xdsclient.Client)) func(*xdsclient.Client) {
		return func(c *xdsclient.Client) {
			if f != nil && c.Target() == s.target {
				f(c)
			}
		}
	}
	return s.p.Observe(only(added), only(removed))
}
