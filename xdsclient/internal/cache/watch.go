package cache

import (
	"fmt"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/xdslens/xdslens/xdsclient/internal/txn"
)

// Held is the resource an entry holds, as Watch's caller decodes it for a
// new watcher with the lock released.
type Held struct {
	e *Entry
	h held
}

// Held returns what e holds.
func (c *Cache) Held(_ *txn.Tx, e *Entry) Held { return Held{e: e, h: e.res} }

// Ok reports whether a resource is held.
func (h Held) Ok() bool { return h.h.ok() }

// Same reports whether h and o are the same update's bytes.
func (h Held) Same(o Held) bool { return h.h.from == o.h.from }

// Decode returns what a watcher gets of h, decoding its bytes again: the
// cache keeps bytes, not decoded values, which watchers keep if they need
// them. It reads only what never changes, so the lock need not be held. It
// returns an error if the bytes no longer decode, which a Type that is
// deterministic, as it must be, never does.
func (c *Cache) Decode(h Held) (any, error) {
	e, src := h.e, h.h.from.src
	raw := &anypb.Any{TypeUrl: e.kg.kind.URL, Value: h.h.raw}
	_, value, err := e.kg.kind.Type.Decode(src.Decode, raw)
	if err != nil {
		return nil, c.resourceErr(codes.Internal, e, src, fmt.Sprintf("held resource no longer decodes: %v", err))
	}
	return c.cfg.Deliver(1)(0, Delivery{Type: e.kg.kind.Type, Name: e.name, Version: h.h.from.version, Value: value, Raw: raw, Server: src.URI, At: h.h.from.at}), nil
}

// NewWatcher returns the record of a new watcher of e whose callbacks go
// to sink, for Watch: the entry's own record (Entry.first) for its first
// watcher, which saves an allocation per watch, else a new one. A record
// is used once: a cancel func may be called again after its watch ended.
func (c *Cache) NewWatcher(_ *txn.Tx, e *Entry, sink any) *Watcher {
	if e.first.entry == nil {
		e.first.Sink, e.first.entry = sink, e
		return &e.first
	}
	return &Watcher{Sink: sink, entry: e}
}

// Watch adds w to e and posts what w hears first (transition's evWatch):
// the resource held, res (or resErr if it did not decode), then the error
// in force. down is the cause of the failure of the server e uses, "" if
// it serves.
func (c *Cache) Watch(tx *txn.Tx, e *Entry, w *Watcher, res any, resErr error, down string) {
	w.entry = e
	e.addWatcher(w)
	src := e.kg.group.Active(tx)
	out, _ := src.outcome(e, event{kind: evWatch, serverDown: down != ""})
	if out.join.resource {
		c.notifyOne(tx, e, w, res, resErr, false)
	}
	var err error
	switch out.join.err {
	case joinEntryError:
		err = e.failureErr()
	case joinServerError:
		err = c.resourceErr(codes.Unavailable, e, src, down)
	}
	if err != nil {
		c.notifyOne(tx, e, w, nil, err, out.join.resource)
	}
}

// Unwatch removes w from its entry, and reports whether the entry has no
// watcher left: the caller then unsubscribes it and Removes it.
func (c *Cache) Unwatch(_ *txn.Tx, w *Watcher) (last bool) {
	e := w.entry
	if e == nil || e.is(flagRemoved) {
		return false
	}
	e.removeWatcher(w)
	return e.watcherCount() == 0
}

// Unreachable tells the watchers of g's entries that their server failed
// (gRFC A57) with cause, the failure and the servers tried: ambient if
// the resource is held, through ResourceChanged if not.
func (c *Cache) Unreachable(tx *txn.Tx, g *Group, cause string) {
	for e := range c.EntriesOf(tx, g) {
		c.apply(tx, e, event{kind: evUnreachable}, details{cause: cause})
	}
}

// Versions returns the versions of the resources of k held from src, by
// name (delta's initial_resource_versions).
func (c *Cache) Versions(_ *txn.Tx, src *Source, k *Kind) map[string]string {
	var out map[string]string
	for e := range k.table.all() {
		if r := e.res; r.ok() && r.from.src == src {
			if out == nil {
				out = map[string]string{}
			}
			out[e.name] = r.from.version
		}
	}
	return out
}

// Names returns the names of the entries of k whose group in reports, in
// no particular order: what a State of the World request of k subscribes
// on a server, whose groups in names.
func (c *Cache) Names(_ *txn.Tx, k *Kind, in func(*Group) bool) []string {
	n := 0
	for _, kg := range k.groups {
		if kg.picked = in(kg.group); kg.picked {
			n += kg.n
		}
	}
	if n == 0 {
		return nil
	}
	out := make([]string, 0, n)
	for e := range k.table.all() {
		if e.kg.picked {
			out = append(out, e.name)
		}
	}
	return out
}
