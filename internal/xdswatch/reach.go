package xdswatch

import (
	"fmt"
	"io"
	"sync"

	"github.com/xdslens/xdslens/xdsclient"
)

// unreached notes the xDS servers that failed before the client could send
// them a request. A57 starts a resource's does-not-exist timer only once a
// request for it is sent, so against such a server nothing times out and
// the watches show nothing but its failures: people are told why, once per
// server.
type unreached struct {
	w io.Writer

	mu      sync.Mutex      // guards reached and told
	reached map[string]bool // servers a request was sent to
	told    map[string]bool // servers already noted
}

// noteUnreached prints on w, once for each server of client that fails
// before any request was sent to it, that it was not reached and that the
// resources wait for it. The returned func stops it.
func noteUnreached(client *xdsclient.Client, w io.Writer) (remove func()) {
	u := &unreached{w: w, reached: map[string]bool{}, told: map[string]bool{}}
	failed := func(i xdsclient.StreamEndInfo) {
		if !i.ResponseReceived {
			u.failed(i.Server)
		}
	}
	return client.AddHooks(&xdsclient.Hooks{
		RequestSent:       func(i xdsclient.RequestInfo) { u.sent(i.Server) },
		StreamStartFailed: failed,
		StreamEnded:       failed,
		ServerFailure:     func(i xdsclient.ServerFailureInfo) { u.failed(i.Server) },
	})
}

// sent records a request written to server.
func (u *unreached) sent(server string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.reached[server] = true
}

// failed records a failure of server, and prints the note the first time
// server fails without having been reached.
func (u *unreached) failed(server string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.reached[server] || u.told[server] {
		return
	}
	u.told[server] = true
	fmt.Fprintf(u.w, "xdswatch: xDS server %s not reached yet (no request could be sent to it): the resources it is to serve wait for it "+
		"and none times out meanwhile, since a does-not-exist timer (--resource-timeout) starts only once a request is sent (gRFC A57); "+
		"the client keeps trying with backoff, and falls back to the next server of the bootstrap if there is one\n", server)
}
