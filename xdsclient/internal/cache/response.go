package cache

import (
	"bytes"
	"fmt"
	"time"

	rpcstatus "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc/codes"

	"github.com/xdslens/xdslens/xdsclient/internal/transport"
	"github.com/xdslens/xdslens/xdsclient/internal/txn"
	"github.com/xdslens/xdslens/xdsclient/internal/xerr"
)

// Applied is what a response did, counted as gRFC A78 counts: subscribed
// resources that passed or failed validation, plus entries whose name could
// not be determined and TP3 errors, counted as invalid. NACK is the error
// that rejects the response, nil to ACK it; Wait is closed once the
// watchers have taken it.
type Applied struct {
	Valid, Invalid, Errors, Removed int
	NACK                            error
	Wait                            <-chan struct{}
}

// Apply applies u, a response from src: it decodes what changed, updates
// the entries (gRFC A88) and posts their hooks and callbacks, the
// callbacks after the response's own hook, on src's lane. It takes the
// lock itself, and releases it to decode. open, called with the lock held
// before the resources are applied (more than once if they must be decoded
// again), reports false if the response must be dropped (the client or
// the server's channel closed); it is where an authority switches back to
// src (gRFC A71). subscribed is how many names of u's type are subscribed
// on the server: when a full-state response names them all, no absence is
// looked for. ok is false if the response was dropped or is of a type
// never registered.
func (c *Cache) Apply(src *Source, u *transport.Update, subscribed int, open func(tx *txn.Tx) bool) (a Applied, ok bool) {
	tx := c.cfg.Mutex.Lock()
	k := c.s.Of(tx).kinds[u.TypeURL]
	if k == nil {
		c.cfg.Observer.Logged(tx, nil, src, LogUnknownType, u.TypeURL)
		tx.Unlock()
		return a, false
	}
	items := make([]item, len(u.Resources))
	changed := 0
	for i, r := range u.Resources {
		items[i] = take(r, k.Type)
		if !c.match(tx, src, k, &items[i]) {
			changed++
		}
	}
	tx.Unlock()
	decodeItems(k.Type, src.Decode, items, changed)
	for {
		tx = c.cfg.Mutex.Lock()
		if !open(tx) {
			tx.Unlock()
			return a, false
		}
		if !c.stale(tx, src, items) {
			break
		}
		tx.Unlock() // what some entry held changed meanwhile: decode after all
		decodeItems(k.Type, src.Decode, items, 0)
	}
	defer tx.Unlock()
	s := c.s.Of(tx)
	s.gen++
	base := &update{version: u.Version, at: time.Now(), src: src}
	r := response{c: c, tx: tx, src: src, k: k, gen: s.gen, base: base, last: base, delta: u.Delta}
	src.Lane.Hold(tx)
	src.Lane.Grow(tx, changed)
	for i := range items {
		r.resource(i, &items[i])
	}
	for i, re := range u.Errors {
		r.resourceError(i, re.GetResourceName().GetName(), re.GetErrorDetail())
	}
	for _, name := range u.Removed {
		r.removal(name)
	}
	if k.Type.FullState() && !u.Delta && r.seen < subscribed {
		r.absences()
	}
	a = r.Applied
	a.NACK = r.nacks.err()
	c.cfg.Observer.Applied(tx, src, u.TypeURL, u.Version, u.Nonce, u.Delta, a)
	src.Lane.Release(tx)
	a.Wait = src.Lane.Barrier(tx)
	return a, true
}

// match looks it up by the name it has before decoding, and reports
// whether its bytes are those the entry holds from src: then it need not
// be decoded. Bytes validated as sent by another server are validated
// again: what a server may set depends on whether it is trusted (gRFC A81).
func (c *Cache) match(_ *txn.Tx, src *Source, k *Kind, it *item) bool {
	if it.err != nil {
		return true // nothing to decode
	}
	var e *Entry
	switch {
	case it.rawName != nil:
		e = k.table.getBytes(it.rawName)
	case it.name != "":
		e = k.table.get(it.name)
	}
	if e == nil {
		return false
	}
	it.entry, it.looked = e, true
	if r := e.res; r.ok() && r.from.src == src {
		it.was = r.from
		if bytes.Equal(r.raw, it.raw.GetValue()) {
			it.unchanged, it.name = true, e.name
			return true
		}
	}
	return false
}

// stale reports whether an item found unchanged no longer is, because
// what its entry holds changed while the lock was released; such items
// are made to be decoded.
func (c *Cache) stale(_ *txn.Tx, src *Source, items []item) bool {
	found := false
	for i := range items {
		it := &items[i]
		if !it.unchanged {
			continue
		}
		if e := it.entry; e.removed || e.res.from != it.was {
			it.unchanged, it.looked = false, false
			found = true
		}
	}
	return found
}

// response is one response being applied.
type response struct {
	Applied
	c   *Cache
	tx  *txn.Tx
	src *Source
	k   *Kind
	gen uint64
	// base is the response's update; last the update of the last resource
	// applied, which the next one shares if it has the same version
	// (delta).
	base, last *update
	delta      bool
	nacks      nackDetail
	seen       int // entries the response named in resources or resource_errors
}

// entry returns the entry named name that the response applies to: one
// that uses the server, named once in the response (a second naming is
// invalid, NACKed with why). ok is false when there is none.
func (r *response) entry(e *Entry, name, twice string) (_ *Entry, ok bool) {
	if e == nil || e.name != name {
		e = r.k.table.get(name)
	}
	if e == nil || e.group.Active(r.tx) != r.src {
		return nil, false // not subscribed, or not from the server in use: ignored, not counted
	}
	if e.seenGen == r.gen {
		r.invalid(fmt.Sprintf("%s %q: %s", xerr.ShortName(r.k.Type), name, twice))
		return nil, false
	}
	e.seenGen = r.gen
	return e, true
}

func (r *response) invalid(msg string) {
	r.Invalid++
	if r.nacks.room() {
		r.nacks.add(msg)
	}
}

// resource applies the resource at index i.
func (r *response) resource(i int, it *item) {
	if it.name == "" {
		r.Invalid++
		if r.nacks.room() {
			r.nacks.add(fmt.Sprintf("resources[%d]: %v", i, it.err))
		}
		return
	}
	var hint *Entry
	if it.looked {
		hint = it.entry
	}
	e, ok := r.entry(hint, it.name, "appears more than once in the response")
	if !ok {
		return
	}
	r.seen++
	u := r.base
	if r.delta {
		u = r.last.forResource(it.version)
		r.last = u
	}
	c, tx := r.c, r.tx
	if it.err != nil {
		r.Invalid++
		if r.nacks.room() {
			r.nacks.add(it.err.Error())
		}
		c.applyInvalid(tx, e, it.raw.GetValue(), it.err, u)
		return
	}
	r.Valid++
	// Compared before decoding against what e held then, if e was found
	// by name; else (a Type that cannot read a name without decoding)
	// compared now. The same bytes from another server are a change: the
	// value may differ (gRFC A81), and the server does.
	unchanged := it.unchanged
	if !it.looked || e != it.entry || e.res.from != it.was {
		unchanged = e.res.ok() && e.res.from.src == r.src && bytes.Equal(e.res.raw, it.raw.GetValue())
	}
	var res any
	if !unchanged {
		res = c.cfg.Deliver(Delivery{Type: r.k.Type, Name: it.name, Version: u.version, Value: it.value, Raw: it.raw, Server: r.src.URI, At: u.at})
	}
	c.apply(tx, e, event{kind: evValid, unchanged: unchanged}, details{res: res, raw: it.raw.GetValue(), u: u})
}

// resourceError applies the TP3 error at index i (unless in legacy mode,
// which does not use them).
func (r *response) resourceError(i int, name string, st *rpcstatus.Status) {
	if r.src.Features.Legacy {
		return
	}
	name = canonicalReceived(r.k.Type, name)
	switch {
	case name == "":
		r.invalid(fmt.Sprintf("resource_errors[%d]: empty resource_name", i))
		return
	case st == nil || st.GetCode() == int32(codes.OK):
		r.invalid(fmt.Sprintf("resource_errors[%d] for %q: error_detail missing or OK", i, name))
		return
	}
	e, ok := r.entry(nil, name, "appears in both resources and resource_errors")
	if !ok {
		return
	}
	r.seen++
	r.Invalid++
	r.Errors++
	r.c.applyReceivedError(r.tx, e, codes.Code(st.GetCode()), st.GetMessage(), r.base)
}

// removal applies a name of a delta response's removed_resources: a
// deletion, of any type.
func (r *response) removal(name string) {
	e, ok := r.entry(nil, canonicalReceived(r.k.Type, name), "appears in both resources and removed_resources")
	if !ok {
		return
	}
	r.Removed++
	r.c.applyRemoval(r.tx, e, r.base)
}

// absences applies the absence of every entry that uses the server and
// that the full-state response left out: the deletion of a resource held
// (transition decides). When every subscribed entry was seen, none was
// deleted: Apply skips the scan.
func (r *response) absences() {
	for e := range r.k.table.all() {
		if e.seenGen != r.gen && e.group.Active(r.tx) == r.src {
			r.c.applyAbsence(r.tx, e, r.base)
		}
	}
}
