package cache

import (
	"bytes"
	"fmt"
	"iter"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/xdslens/xdslens/xdsclient/internal/transport"
	"github.com/xdslens/xdslens/xdsclient/internal/txn"
	"github.com/xdslens/xdslens/xdsclient/xdsresource"
)

// Apply applies u, a response from src: it decodes what changed, decides
// what the response does to each entry (gRFC A88), and has commit carry
// it out: the entries change and their hooks and callbacks are posted, the
// callbacks after the response's own hook, on src's lane. It takes the
// lock itself, and releases it to decode. open, called with the lock held
// before the resources are applied (more than once if they must be decoded
// again), reports false if the response must be dropped (the client or
// the server's channel closed); it is where an authority switches back to
// src (gRFC A71). ok is false if the response was dropped or is of a type
// never subscribed on the server (then it is not acknowledged).
func (c *Cache) Apply(src *Source, u *transport.Update, open func(tx *txn.Tx) bool) (a Applied, ok bool) {
	tx := c.cfg.Mutex.Lock()
	k := c.s.Of(tx).kinds[u.TypeURL]
	if k == nil || !u.Known {
		c.cfg.Observer.Logged(tx, nil, src, LogUnknownType, u.TypeURL)
		tx.Unlock()
		return a, false
	}
	tx.Unlock()
	// The resources are taken, their names read by the type (the user's
	// code, perhaps), with the lock released; looking them up only reads
	// the cache, with the lock held. Both run on several goroutines for a
	// large response.
	sc := c.scratchFor(len(u.Resources))
	defer c.putScratch(sc)
	items := sc.items
	var rawNames [][]byte
	reader, _ := k.Type.(xdsresource.NameReader)
	if reader != nil {
		rawNames = sc.rawNames
	}
	inParallel(len(items), func(lo, hi int) {
		for i := lo; i < hi; i++ {
			if rawName := items[i].take(&u.Resources[i], reader); rawNames != nil {
				rawNames[i] = rawName
			}
		}
	})
	tx = c.cfg.Mutex.Lock()
	inParallel(len(items), func(lo, hi int) {
		for i := lo; i < hi; i++ {
			var rawName []byte
			if rawNames != nil {
				rawName = rawNames[i]
			}
			items[i].match(src, k, rawName)
		}
	})
	tx.Unlock()
	changed := 0
	for i := range items {
		if it := &items[i]; it.err == nil && !it.unchanged {
			changed++
		}
	}
	// What is decoded goes to the decoder as an Any, and to watchers as
	// what Deliver makes of it, in its place among the changed resources:
	// the Anys are allocated together, as Deliver may do with the rest.
	anys := make([]anypb.Any, changed)
	place := 0
	for i := range items {
		if it := &items[i]; it.err == nil && !it.unchanged {
			it.raw, it.place = &anys[place], place
			place++
		}
	}
	var deliver func(int, Delivery) any
	if changed > 0 {
		deliver = c.cfg.Deliver(changed)
	}
	// A resource found changed is made ready for watchers as it is decoded,
	// on the decoding goroutine: made into what they get.
	at := time.Now()
	ready := func(i int, it *item) {
		if it.err != nil || !it.looked || it.place < 0 {
			return // invalid, or not known to be a change: see resource
		}
		v := u.Version
		if r := &u.Resources[i]; u.Delta && r.Version != v {
			v = r.Version
		}
		it.res = deliver(it.place, Delivery{Type: k.Type, Name: it.name, Version: v, Value: it.value, Raw: it.raw, Server: src.URI, At: at})
	}
	decodeItems(k.Type, src.Decode, u.TypeURL, items, changed, ready)
	for {
		tx = c.cfg.Mutex.Lock()
		if !open(tx) {
			tx.Unlock()
			return a, false
		}
		if !stale(items) {
			break
		}
		tx.Unlock() // what some entry held changed meanwhile: decode after all
		decodeItems(k.Type, src.Decode, u.TypeURL, items, len(items), ready)
	}
	defer tx.Unlock()
	gen := c.nextGen(tx)
	base := &update{version: u.Version, shown: u.ShownVersion, at: at, src: src}
	r := response{c: c, tx: tx, src: src, k: k, gen: gen, base: base, last: base, typeURL: u.TypeURL,
		nonce: u.Nonce, delta: u.Delta, resources: u.Resources, items: items, changed: changed, deliver: deliver}
	for i := range items {
		r.resource(i, &items[i])
	}
	for i, re := range u.Errors {
		r.resourceError(i, re)
	}
	for _, name := range u.Removed {
		r.removal(name)
	}
	if k.FullState && !u.Delta && r.seen < u.Subscribed {
		r.absent = true // when every subscribed entry was seen, none was deleted
	}
	r.decide()
	r.NACK = r.nacks.err()
	return c.commit(&r), true
}

// response is one response being applied, with the lock held: what
// happens to which entry is decided here (decide), and carried out by
// commit.
type response struct {
	Applied
	c   *Cache
	tx  *txn.Tx
	src *Source
	k   *Kind
	gen uint32
	// base is the response's update; last the update of the last resource
	// applied, which the next one shares if it has the same version
	// (delta).
	base, last     *update
	typeURL, nonce string
	delta          bool
	resources      []transport.Resource // the response's: items[i] is resources[i]
	items          []item
	changed        int                             // items decoded
	deliver        func(place int, d Delivery) any // what watchers get of the items that changed
	others         []pending                       // events other than those of items
	absent         bool                            // the full state may have left out subscribed entries (absences)
	nacks          nackDetail
	seen           int // entries the response named in resources or resource_errors
}

// entry returns the entry named name that the response applies to: one
// that uses the server, named once in the response (a second naming is
// invalid, NACKed with why). hint is the entry of that name found before
// decoding, if any. ok is false when there is none.
func (r *response) entry(hint *Entry, name, twice string) (_ *Entry, ok bool) {
	e := hint
	if e == nil {
		e = r.k.table.get(name)
	}
	if e == nil || e.kg.group.Active(r.tx) != r.src {
		return nil, false // not subscribed, or not from the server in use: ignored, not counted
	}
	if e.seenGen == r.gen {
		r.invalid(fmt.Sprintf("%s %q: %s", r.k.Short, name, twice))
		return nil, false
	}
	e.seenGen = r.gen
	return e, true
}

// invalid counts an invalid resource, whose msg goes into the NACK.
func (r *response) invalid(msg string) {
	r.Invalid++
	if r.nacks.room() {
		r.nacks.add(msg)
	}
}

// resource finds the event of it, the resource at index i: valid, with
// the bytes held (unchanged) or not, or invalid (a NACK).
func (r *response) resource(i int, it *item) {
	if it.name == "" {
		r.Invalid++
		if r.nacks.room() {
			r.nacks.add(fmt.Sprintf("resources[%d]: %v", i, it.err))
		}
		return
	}
	var hint *Entry
	if it.unchanged || it.sameName {
		hint = it.e
	}
	e, ok := r.entry(hint, it.name, "appears more than once in the response")
	if !ok {
		return
	}
	r.seen++
	it.u = r.base
	if v := &r.resources[i]; r.delta && r.base.version != v.Version {
		if r.last.version != v.Version {
			r.last = &update{version: v.Version, shown: v.ShownVersion, at: r.base.at, src: r.src}
		}
		it.u = r.last // consecutive resources of one version share an update
	}
	if it.err != nil {
		r.Invalid++
		if r.nacks.room() {
			r.nacks.add(it.err.Error())
		}
		f := e.failure()
		same := f != nil && f.raw != nil && string(f.raw) == string(it.data)
		if same {
			it.kept = f.raw
		} else if it.kept == nil {
			it.kept = bytes.Clone(it.data)
		}
		it.e, it.ev, it.s = e, event{kind: evInvalid, sameBytes: same}, e.current()
		return
	}
	r.Valid++
	// Compared before decoding against what e held then, if e was found
	// by name; else (a Type that cannot read a name without decoding)
	// compared now. The same bytes from another server are a change: the
	// value may differ (gRFC A81), and the server does.
	unchanged := it.unchanged
	if !it.looked || e != it.e || e.res.from != it.was {
		unchanged = e.res.ok() && e.res.from.src == r.src && bytes.Equal(e.res.raw, it.data)
	}
	if unchanged && e.settled() {
		// Most resources of a full state, done here rather than decided
		// and carried out one by one: what transition and carryOut would
		// do (TestSettledUnchanged).
		e.res.from = it.u
		it.e, it.kept, it.res = e, nil, nil
		return
	}
	it.e, it.ev, it.s = e, event{kind: evValid, unchanged: unchanged}, e.current()
	switch {
	case unchanged:
		it.kept, it.res = nil, nil // made while decoding, but not a change after all
	case it.res == nil: // not made while decoding
		if it.kept == nil {
			it.kept = bytes.Clone(it.data)
		}
		if it.raw == nil {
			it.raw = &anypb.Any{TypeUrl: r.k.URL}
		}
		it.raw.Value = it.kept
		if r.deliver == nil {
			r.deliver = r.c.cfg.Deliver(0)
		}
		it.res = r.deliver(it.place, Delivery{Type: r.k.Type, Name: it.name, Version: it.u.version, Value: it.value, Raw: it.raw, Server: r.src.URI, At: it.u.at})
	}
}

// resourceError finds the event of re, the TP3 error at index i (unless
// in legacy mode, which does not use them).
func (r *response) resourceError(i int, re transport.ResourceError) {
	if r.src.Features.Legacy {
		return
	}
	switch {
	case re.Name == "":
		r.invalid(fmt.Sprintf("resource_errors[%d]: empty resource_name", i))
		return
	case re.Code == codes.OK:
		r.invalid(fmt.Sprintf("resource_errors[%d] for %q: error_detail missing or OK", i, re.Name))
		return
	}
	e, ok := r.entry(nil, re.Name, "appears in both resources and resource_errors")
	if !ok {
		return
	}
	r.seen++
	r.Invalid++
	r.Errors++
	r.others = append(r.others, pending{decision{e: e, ev: event{kind: evServerError, code: re.Code}, s: e.current()}, details{u: r.base, msg: re.Message}})
}

// removal decides what a name of a delta response's removed_resources
// does: a deletion, of any type.
func (r *response) removal(name string) {
	e, ok := r.entry(nil, name, "appears in both resources and removed_resources")
	if !ok {
		return
	}
	r.Removed++
	r.others = append(r.others, pending{decision{e: e, ev: event{kind: evDeletion, explicit: true}, s: e.current()}, details{u: r.base}})
}

// decide asks transition what each event of the response does to its
// entry, under the server's features. Each entry has one event at most,
// and carrying one out changes no other entry, so every event is decided
// before any is carried out, from the entry's state as read when its
// event was found (nothing changes it meanwhile): deciding reads no entry. An absence is kept only if it changes
// something: most absent entries hold nothing (subscriptions the server
// has yet to serve), and their absence is then nothing.
func (r *response) decide() {
	for x := range r.events() {
		var changes bool
		x.out, changes = r.src.outcomeOf(x.s, x.ev)
		if x.ev.absence() && changes {
			r.others = append(r.others, pending{*x, details{u: r.base}})
		}
	}
}

// events yields the events of the response: those of the resources, the
// TP3 errors and the removals, then an absence for each entry that uses
// the server and that a full state left out. The absences are yielded,
// not collected: each in the same place, which decide copies when it
// keeps one.
func (r *response) events() iter.Seq[*decision] {
	return func(yield func(*decision) bool) {
		for i := range r.items {
			if x := &r.items[i].decision; x.ev.kind != 0 && !yield(x) {
				return
			}
		}
		for i := range len(r.others) {
			if !yield(&r.others[i].decision) {
				return
			}
		}
		if !r.absent {
			return
		}
		var x decision
		for e := range r.k.table.all() {
			if e.seenGen != r.gen && e.kg.group.Active(r.tx) == r.src {
				x = decision{e: e, ev: event{kind: evDeletion}, s: e.current()}
				if !yield(&x) {
					return
				}
			}
		}
	}
}
