package xdsclient

import (
	"bytes"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/xdslens/xdslens/internal/truncate"
	"github.com/xdslens/xdslens/xdsclient/internal/xdstp"
	"github.com/xdslens/xdslens/xdsclient/internal/xerr"
	"github.com/xdslens/xdslens/xdsclient/xdsresource"
)

const resourceWrapperURL = xdsresource.TypeURLPrefix + "envoy.service.discovery.v3.Resource"

// item is one resource of a response on its way into the cache.
type item struct {
	raw     *anypb.Any
	name    string
	rawName []byte // the name read without decoding (xdsresource.NameReader), nil if not
	value   any
	err     error
	held    *entry // set when unchanged: the entry already holding these bytes
	version string // the resource's own version (delta), "" over SotW
	skip    bool   // a delta heartbeat, which carries no resource
}

// unwrap takes one entry of a response's resources: it unwraps the
// envoy.service.discovery.v3.Resource wrapper, checks the type URL and reads
// the name if typ can without decoding.
func unwrap(a *anypb.Any, typ xdsresource.Type, typeURL string) item {
	it := item{raw: a}
	if a.GetTypeUrl() == resourceWrapperURL {
		w := &discoveryv3.Resource{}
		if err := proto.Unmarshal(a.GetValue(), w); err != nil {
			it.err = fmt.Errorf("cannot unmarshal %s: %v", resourceWrapperURL, err)
			return it
		}
		it.name = w.GetName()
		if w.GetResource() == nil {
			it.err = fmt.Errorf("resource wrapper %q carries no resource", w.GetName())
			return it
		}
		it.raw = w.GetResource()
	}
	it.check(typ, typeURL)
	return it
}

// check checks it.raw's type URL and reads its name if typ can without
// decoding.
func (it *item) check(typ xdsresource.Type, typeURL string) {
	if it.raw.GetTypeUrl() != typeURL {
		it.err = fmt.Errorf("resource of type %q in a response of type %q", it.raw.GetTypeUrl(), typeURL)
		return
	}
	// Every resource of the response shares one copy of the type URL.
	it.raw.TypeUrl = typeURL
	if reader, ok := typ.(xdsresource.NameReader); ok {
		if name, ok := reader.ReadName(it.raw.GetValue()); ok {
			if !xdstp.IsCanonical(name) {
				// Named as subscribed: canonical form.
				name = []byte(canonicalReceived(typ, string(name)))
			}
			it.rawName = name
		}
	}
}

// parallelDecodeMin is the number of resources to decode from which a
// response is decoded on several goroutines.
const parallelDecodeMin = 256

// decodeItems decodes the n items that are neither unchanged nor failed.
// Items are independent and xdsresource.Type implementations are safe for
// concurrent use, so a large response is split over up to GOMAXPROCS
// goroutines: decoding is most of the client's work on a full-state update.
func decodeItems(typ xdsresource.Type, opts xdsresource.DecodeOptions, items []item, n int) {
	workers := min(runtime.GOMAXPROCS(0), n/(parallelDecodeMin/2))
	if n < parallelDecodeMin || workers < 2 {
		decodeRange(typ, opts, items)
		return
	}
	var wg sync.WaitGroup
	chunk := (len(items) + workers - 1) / workers
	for lo := chunk; lo < len(items); lo += chunk {
		part := items[lo:min(lo+chunk, len(items))]
		wg.Go(func() { decodeRange(typ, opts, part) })
	}
	decodeRange(typ, opts, items[:chunk])
	wg.Wait()
}

func decodeRange(typ xdsresource.Type, opts xdsresource.DecodeOptions, items []item) {
	for i := range items {
		if it := &items[i]; it.err == nil && it.held == nil {
			decodeItem(typ, opts, it)
		}
	}
}

// decodeItem decodes and validates it.raw, and names it.
func decodeItem(typ xdsresource.Type, opts xdsresource.DecodeOptions, it *item) {
	name, value, err := typ.Decode(opts, it.raw)
	if name != "" {
		it.name = name
	}
	it.name = canonicalReceived(typ, it.name)
	it.value, it.err = value, err
}

// incoming is one response of either protocol as the cache takes it.
type incoming struct {
	typeURL string
	version string // version_info; over delta, system_version_info
	nonce   string
	sotw    []*anypb.Any            // the resources of a SotW response
	delta   []*discoveryv3.Resource // the resources of a delta response
	errs    []*discoveryv3.ResourceError
	removed []string // removed_resources (delta)
	isDelta bool
}

// handleResponse applies one DiscoveryResponse (applyResponse).
func (ch *channel) handleResponse(id uint64, resp *discoveryv3.DiscoveryResponse) {
	ch.applyResponse(id, &incoming{typeURL: resp.GetTypeUrl(), version: resp.GetVersionInfo(), nonce: resp.GetNonce(),
		sotw: resp.GetResources(), errs: resp.GetResourceErrors()})
}

// applyResponse applies one response: it decodes what changed, updates the
// cache entries (gRFC A88), and queues the ACK or NACK. Resources whose
// bytes equal the held ones are recognised by name (when the type can read
// it without decoding, or the delta response names them) and not decoded
// again.
func (ch *channel) applyResponse(id uint64, r *incoming) {
	c := ch.c
	typeURL := r.typeURL
	tx := c.lock()
	typ := c.types[typeURL]
	tx.unlock()
	var items []item
	if r.isDelta {
		items = make([]item, len(r.delta))
		for i, res := range r.delta {
			items[i] = unwrapDelta(res, typ, typeURL)
		}
	} else {
		items = make([]item, len(r.sotw))
		for i, a := range r.sotw {
			items[i] = unwrap(a, typ, typeURL)
		}
	}

	tx = c.lock()
	ts := ch.types[typeURL]
	if c.closed || typ == nil || ts == nil {
		tx.unlock()
		if !c.closed {
			c.logger.Warn("xDS response of a type that was never subscribed; ignored", "server", ch.uri, "type", truncate.String(typeURL, xerr.MaxShown))
		}
		return
	}
	table := c.tableOf(typeURL)
	changed := 0
	for i := range items {
		it := &items[i]
		if it.err != nil || it.skip {
			continue
		}
		// Bytes validated as sent by another server are validated again:
		// what a server may set depends on whether it is trusted (gRFC A81).
		if e := heldFor(table, it); e != nil && e.res.ok() && e.res.from.ch == ch && bytes.Equal(e.res.raw, it.raw.GetValue()) {
			it.held = e
			it.name = e.name
			continue
		}
		changed++
	}
	opts := ch.decodeOptions()
	tx.unlock()

	decodeItems(typ, opts, items, changed)

	now := time.Now()
	version := r.version
	tx = c.lock()
	defer tx.unlock()
	if c.closed {
		return
	}
	if ch.closed {
		return
	}
	if len(items)+len(r.errs) > 0 {
		// A higher priority server that delivers again is used again (A71).
		for _, a := range ch.sortedAuths() {
			if i := a.indexOf(ch); i >= 0 && i < a.active {
				tx.switchBack(a, i)
			}
		}
	}
	c.respGen++
	gen := c.respGen
	table = c.tableOf(typeURL)
	u := &update{version: version, at: now, ch: ch}
	var nacks nackDetail
	valid, invalid, tp3, seen, removed := 0, 0, 0, 0, 0
	// The watcher callbacks of the response are held back until its hooks
	// are queued (ResponseReceived last), so that observers hear of the
	// update before watchers act on it. Room for a callback per changed
	// resource, so that the queue is allocated once.
	c.holdWatchers = true
	c.held = slices.Grow(c.held, changed)
	for i := range items {
		it := &items[i]
		if it.skip {
			continue
		}
		if h := it.held; h != nil && (h.removed || !h.res.ok() || h.res.from.ch != ch || !bytes.Equal(h.res.raw, it.raw.GetValue())) {
			// What h held changed while the lock was released: decode after all.
			it.held = nil
			decodeItem(typ, opts, it)
		}
		if it.name == "" {
			invalid++
			if nacks.room() {
				nacks.add(fmt.Sprintf("resources[%d]: %v", i, it.err))
			}
			continue
		}
		e := it.held
		if e == nil {
			e = table.get(it.name)
		}
		if e == nil || e.active() != ch {
			continue // not subscribed, or not from the server in use: ignored, not counted
		}
		if e.seenGen == gen {
			invalid++
			if nacks.room() {
				nacks.add(fmt.Sprintf("%s %q: appears more than once in the response", xerr.ShortName(typ), it.name))
			}
			continue
		}
		e.seenGen = gen
		seen++
		ru := u
		if r.isDelta {
			ru = u.forResource(it.version)
			u = ru // consecutive resources of one version share an update
		}
		if it.err != nil {
			invalid++
			if nacks.room() {
				nacks.add(it.err.Error())
			}
			tx.applyInvalid(e, it.raw.GetValue(), it.err, ru.version, now)
			continue
		}
		valid++
		// A type without a NameReader is decoded in full; its unchanged
		// resources are recognised here. The same bytes from another server
		// are a change: the value may differ (gRFC A81), and the server does.
		unchanged := it.held != nil || (e.res.ok() && e.res.from.ch == ch && bytes.Equal(e.res.raw, it.raw.GetValue()))
		var res *Resource
		if !unchanged {
			res = newResource(typ, it.name, it.value, it.raw, ru)
		}
		tx.applyValid(e, res, it.raw.GetValue(), unchanged, ru)
	}
	if !c.o.legacy {
		for i, re := range r.errs {
			name := canonicalReceived(typ, re.GetResourceName().GetName())
			st := re.GetErrorDetail()
			switch {
			case name == "":
				invalid++
				if nacks.room() {
					nacks.add(fmt.Sprintf("resource_errors[%d]: empty resource_name", i))
				}
				continue
			case st == nil || st.GetCode() == int32(codes.OK):
				invalid++
				if nacks.room() {
					nacks.add(fmt.Sprintf("resource_errors[%d] for %q: error_detail missing or OK", i, name))
				}
				continue
			}
			e := table.get(name)
			if e == nil || e.active() != ch {
				continue
			}
			if e.seenGen == gen {
				invalid++
				if nacks.room() {
					nacks.add(fmt.Sprintf("%s %q: appears in both resources and resource_errors", xerr.ShortName(typ), name))
				}
				continue
			}
			e.seenGen = gen
			seen++
			invalid++
			tp3++
			tx.applyReceivedError(e, codes.Code(st.GetCode()), st.GetMessage(), version, now)
		}
	}
	if len(r.removed) > 0 {
		removed, invalid = tx.applyRemovals(ch, typ, r.removed, gen, version, now, &nacks, invalid)
	}
	// When every subscribed entry was seen, none was deleted: the scan is
	// skipped. Over delta a deletion is never an absence.
	if typ.FullState() && !r.isDelta && seen < ts.n {
		for e := range table.all() {
			// A name never received, already deleted, or carrying a TP3
			// error (which the server sends once and the client keeps) is
			// not deleted by its absence.
			if e.active() != ch || e.seenGen == gen || !e.res.ok() || e.state == StateDoesNotExist || e.state == StateReceivedError {
				continue
			}
			tx.applyDeletion(e, version, now)
		}
	}

	var nack error
	if nack = nacks.err(); nack != nil {
		if valid > 0 {
			ts.version = version // gRFC A46: the valid resources were accepted
		}
	} else {
		ts.version = version
	}
	if ch.h.Stream == id {
		ts.nonce = r.nonce
		ts.nack = nack
		ts.dirty = true
		signal(ch.wake)
	}
	if f := c.hooks().ResponseReceived; f != nil {
		info := ResponseInfo{Target: c.o.target, Server: ch.uri, TypeURL: typeURL, Version: version, Nonce: r.nonce,
			Valid: valid, Invalid: invalid, Errors: tp3, Removed: removed, NACK: nack, Delta: r.isDelta}
		tx.hook(func() { f(info) })
	}
	tx.releaseWatchers()
}

// The error_detail of a NACK is bounded, so that a response of many invalid
// resources cannot make a request the server refuses (which would end the
// stream, and the client would reconnect to get the same response again):
// it holds the first maxNACKErrors messages, each cut at maxNACKMessage
// bytes, in at most maxNACKBytes, then the count of the others. Each cache
// entry keeps its own full error, which CSDS shows in error_state.
const (
	maxNACKErrors  = 50
	maxNACKMessage = 1 << 10
	maxNACKBytes   = 16 << 10
)

// nackDetail builds the error_detail of a NACK.
type nackDetail struct {
	b     strings.Builder
	n     int // errors
	shown int // errors in b
}

// room reports whether another message would be shown. When it would not,
// the error is counted: callers then skip formatting it.
func (d *nackDetail) room() bool {
	if d.shown < maxNACKErrors && d.b.Len() < maxNACKBytes-maxNACKMessage-2 {
		return true
	}
	d.n++
	return false
}

// add adds msg, cut at maxNACKMessage bytes.
func (d *nackDetail) add(msg string) {
	d.n++
	msg = truncate.String(msg, maxNACKMessage)
	if d.b.Len() > 0 {
		d.b.WriteString("; ")
	}
	d.b.WriteString(msg)
	d.shown++
}

// err returns the NACK's error, nil when nothing was invalid.
func (d *nackDetail) err() error {
	if d.n == 0 {
		return nil
	}
	if more := d.n - d.shown; more > 0 {
		fmt.Fprintf(&d.b, "; and %d more invalid (the error of each subscribed resource is in its cache entry)", more)
	}
	return errors.New(d.b.String())
}
