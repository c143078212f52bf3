package xdsclient

import (
	"errors"
	"fmt"

	"github.com/xdslens/xdslens/xdsclient/bootstrap"
	"github.com/xdslens/xdslens/xdsclient/internal/xdstp"
	"github.com/xdslens/xdslens/xdsclient/internal/xerr"
	"github.com/xdslens/xdslens/xdsclient/xdsresource"
)

// authority is one xDS authority (gRFC A47) with its ordered server list
// and the fallback state of gRFC A71: which server it uses now. Entries of
// the authority are subscribed on every server from the primary down to
// the active one, so that a higher priority server that recovers is noticed
// by its first response. The authority's entries are those whose auth it
// is (Client.entriesOf). Guarded by Client.mu.
type authority struct {
	c       *Client
	name    string
	servers []*bootstrap.ServerConfig
	chans   []*channel // chans[i] serves servers[i]; nil until used, or if it could not be made
	active  int
	n       int // the authority's cache entries
}

func (a *authority) activeChan() *channel { return a.chans[a.active] }

// indexOf returns ch's priority in a (0 is the primary), or -1.
func (a *authority) indexOf(ch *channel) int {
	for i, x := range a.chans {
		if x == ch {
			return i
		}
	}
	return -1
}

// uses reports whether a subscribes its entries on ch: ch is one of its
// servers from the primary down to the active one.
func (a *authority) uses(ch *channel) bool {
	for i := 0; i <= a.active; i++ {
		if a.chans[i] == ch {
			return true
		}
	}
	return false
}

// hasRequested reports whether some resource of a was never received:
// neither a resource nor an answer about it (an error, a deletion, a
// timeout) came, so another server may have it (gRFC A71: fallback is for
// resources that are missing, not for data errors a server reported).
func (c *Client) hasRequested(a *authority) bool {
	for e := range c.entriesOf(a) {
		if e.state == StateRequested {
			return true
		}
	}
	return false
}

// authority returns the authority that serves name, making it on
// first use.
func (tx *txn) authority(name string) (*authority, error) {
	c := tx.c
	key := authorityOf(name)
	if a := c.authorities[key]; a != nil {
		return a, nil
	}
	servers, err := c.cfg.ServersFor(name)
	if err != nil {
		return nil, err
	}
	if !c.o.fallback && len(servers) > 1 {
		servers = servers[:1]
	}
	a := &authority{c: c, name: key, servers: servers, chans: make([]*channel, len(servers))}
	ch, err := tx.channel(servers[0])
	if err != nil {
		return nil, err
	}
	a.chans[0] = ch
	ch.auths[a] = struct{}{}
	c.authorities[key] = a
	tx.authorityServerChanged(a, "", "initial")
	return a, nil
}

func (tx *txn) authorityServerChanged(a *authority, prev, reason string) {
	c := tx.c
	if f := c.hooks().AuthorityServerChanged; f != nil {
		info := AuthorityServerInfo{Target: c.o.target, Authority: a.name, Server: a.activeChan().uri, Previous: prev, Priority: a.active, Reason: reason}
		tx.hook(func() { f(info) })
	}
}

// addEntry subscribes a new entry on every server of its authority
// down to the active one.
func (a *authority) addEntry(tx *txn, e *entry) {
	a.n++
	for i := 0; i <= a.active; i++ {
		if ch := a.chans[i]; ch != nil {
			ch.subscribe(tx, e)
		}
	}
}

// removeEntry unsubscribes e; when it was the authority's last entry,
// the authority lets go of its servers (and the client forgets it), and
// each server nothing else uses is closed.
func (a *authority) removeEntry(tx *txn, e *entry) {
	a.n--
	for i := 0; i <= a.active; i++ {
		if ch := a.chans[i]; ch != nil {
			ch.unsubscribe(tx, e)
		}
	}
	if a.n > 0 {
		return
	}
	c := a.c
	prev := a.activeChan().uri
	if f := c.hooks().AuthorityServerChanged; f != nil {
		info := AuthorityServerInfo{Target: c.o.target, Authority: a.name, Previous: prev, Priority: -1, Reason: "released: no resource of the authority is watched"}
		tx.hook(func() { f(info) })
	}
	for i, ch := range a.chans {
		if ch == nil {
			continue
		}
		a.chans[i] = nil
		delete(ch.auths, a)
		if len(ch.auths) == 0 {
			tx.closeChannel(ch, errNotUsed)
		}
	}
	delete(c.authorities, a.name)
}

// errNotUsed is why a channel that nothing uses is closed.
var errNotUsed = errors.New("no watched resource uses the server any more")

// maybeFallback moves a, whose active server failed with reason, to
// its next server if gRFC A71 says so: a resource of a was never received.
// A server whose channel cannot be made is skipped (logged), as is one
// already failing; it reports whether a now uses a server that is not known
// to fail. When it does, a's watchers need not hear of the failure.
func (tx *txn) maybeFallback(a *authority, reason error) bool {
	c := tx.c
	if a.active+1 >= len(a.servers) || !c.hasRequested(a) {
		return false
	}
	prev := a.activeChan()
	for i := a.active + 1; i < len(a.servers); i++ {
		next, err := tx.channel(a.servers[i])
		if err != nil {
			c.logger.Warn("xDS fallback server unusable; trying the next one", "authority", a.name, "server", a.servers[i].URI, "priority", i, "err", xerr.ShownErr(err))
			continue
		}
		a.chans[i] = next
		next.auths[a] = struct{}{}
		for e := range c.entriesOf(a) {
			prev.stopTimer(tx, e)
			next.subscribe(tx, e)
		}
		a.active = i
		c.logger.Warn("xDS fallback: using a lower priority server", "authority", a.name, "from", prev.uri, "to", next.uri, "reason", xerr.ShownErr(reason))
		tx.authorityServerChanged(a, prev.uri, fmt.Sprintf("fallback: %q failed (%s) while resources were missing", prev.uri, xerr.ShownErr(reason)))
		if !next.h.Failed {
			return true
		}
		// The fallback server is down already (it serves another
		// authority): on to the next.
		prev, reason = next, next.h.Failure
	}
	return false
}

// switchBack makes the higher priority server at index i active again
// after it delivered a resource: lower priority servers are unsubscribed
// and, when nothing else uses them, closed (gRFC A71).
func (tx *txn) switchBack(a *authority, i int) {
	c := tx.c
	prev := a.activeChan().uri
	to := a.chans[i]
	for e := range c.entriesOf(a) {
		a.activeChan().stopTimer(tx, e)
	}
	for j := i + 1; j <= a.active; j++ {
		low := a.chans[j]
		if low == nil {
			continue
		}
		for e := range c.entriesOf(a) {
			low.unsubscribe(tx, e)
		}
		delete(low.auths, a)
		a.chans[j] = nil
		if len(low.auths) == 0 {
			tx.closeChannel(low, fmt.Errorf("switched back to %q", to.uri))
		}
	}
	a.active = i
	for e := range c.entriesOf(a) {
		to.maybeStartTimer(tx, e)
	}
	c.logger.Info("xDS fallback over: back to a higher priority server", "authority", a.name, "from", prev, "to", to.uri)
	tx.authorityServerChanged(a, prev, fmt.Sprintf("%q delivered a resource again", to.uri))
}

// canonicalName returns the canonical form of a resource name (see package
// xdstp) and checks that the type segment of an xdstp:// name names typ.
// Old-style names are returned as they are.
func canonicalName(typ xdsresource.Type, name string) (string, error) {
	if !xdstp.Is(name) {
		return name, nil
	}
	n, err := xdstp.Parse(name)
	if err != nil {
		return "", err
	}
	if n.Type != xdsresource.TypeName(typ) {
		return "", fmt.Errorf("resource name %q names type %q, watched as %q", name, n.Type, xdsresource.TypeName(typ))
	}
	return n.String(), nil
}

// canonicalReceived is canonicalName for a name a server sent: a name that
// is already canonical costs no allocation, and one that cannot be
// canonicalised is kept as it is (no watch can match it).
func canonicalReceived(typ xdsresource.Type, name string) string {
	if xdstp.IsCanonical(name) {
		return name
	}
	if n, err := canonicalName(typ, name); err == nil {
		return n
	}
	return name
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
