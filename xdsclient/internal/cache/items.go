package cache

// The resources of a response as Apply reads them before it takes the
// lock: each one's name, its entry found, what its bytes say about that
// entry, and its decoding, in parallel for a large response; and the
// scratch space they live in between responses.

import (
	"bytes"
	"runtime"
	"sync"

	"google.golang.org/protobuf/types/known/anypb"

	"github.com/xdslens/xdslens/xdsclient/internal/transport"
	"github.com/xdslens/xdslens/xdsclient/internal/xdstp"
	"github.com/xdslens/xdslens/xdsclient/xdsresource"
)

// scratch is what Apply works in, kept between responses (Cache.scratch)
// rather than made for each: for a large response, megabytes that would
// otherwise be garbage for the collector every time.
type scratch struct {
	items    []item
	rawNames [][]byte
}

// scratchFor returns scratch space for n resources, zeroed.
func (c *Cache) scratchFor(n int) *scratch {
	sc, _ := c.scratch.Get().(*scratch)
	if sc == nil || cap(sc.items) < n {
		return &scratch{items: make([]item, n), rawNames: make([][]byte, n)}
	}
	sc.items, sc.rawNames = sc.items[:n], sc.rawNames[:n]
	return sc
}

// putScratch keeps sc for the next response, zeroed: it then refers to
// nothing, so that what the response made is not kept alive by it.
func (c *Cache) putScratch(sc *scratch) {
	clear(sc.items)
	clear(sc.rawNames)
	c.scratch.Put(sc)
}

// item is one resource of a response on its way into the cache.
type item struct {
	// data is the resource, a slice of the response received: what is
	// kept of it is copied (kept). raw is it as an Any, for the decoder
	// and for watchers; place is its place among the changed resources
	// (where raw was allocated), -1 if none.
	data  []byte
	kept  []byte
	raw   *anypb.Any
	place int
	name  string // canonical; "" until known
	value any
	err   error
	// decision's entry is the entry found by name before decoding, nil if
	// none; against it the bytes were compared, when it held a resource of
	// the server: was is what it held then (nil if nothing of the server),
	// and unchanged is set if the bytes were the same, so not decoded.
	decision
	was       *update
	looked    bool
	unchanged bool
	decoded   bool
	sameName  bool // the decoded name is the one read before decoding
	// What the response does with it: the decision's event of its entry
	// (ev.kind 0 if none), carried by update u, with res, what watchers get
	// of a change.
	u   *update
	res any
}

// take takes r, one resource of a response, into it, which is zero: its
// name, as the response gives it; it returns rawName, as the type's
// reader reads it without decoding (nil if it cannot, or there is none).
func (it *item) take(r *transport.Resource, reader xdsresource.NameReader) (rawName []byte) {
	it.data, it.name, it.err, it.place = r.Value, r.Name, r.Err, -1
	if r.Err != nil || reader == nil {
		return nil
	}
	if name, ok := reader.ReadName(it.data); ok {
		if !xdstp.IsCanonical(name) {
			// Named as subscribed: canonical form.
			name = []byte(xdstp.Received(string(name)))
		}
		rawName = name
	}
	return rawName
}

// match looks it up by the name it has before decoding (rawName, else its
// name), and finds
// whether its bytes are those the entry holds from src: then it need not
// be decoded. Bytes validated as sent by another server are validated
// again: what a server may set depends on whether it is trusted (gRFC
// A81).
func (it *item) match(src *Source, k *Kind, rawName []byte) {
	if it.err != nil {
		return
	}
	var e *Entry
	switch {
	case rawName != nil:
		e = k.table.getBytes(rawName)
	case it.name != "":
		e = k.table.get(it.name)
	}
	if e == nil {
		return
	}
	it.e, it.looked = e, true
	if r := e.res; r.ok() && r.from.src == src {
		it.was = r.from
		if bytes.Equal(r.raw, it.data) {
			it.unchanged, it.name = true, e.name
		}
	}
}

// stale reports whether an item found unchanged no longer is, because
// what its entry holds changed while the lock was released; such items
// are then decoded.
func stale(items []item) bool {
	found := false
	for i := range items {
		it := &items[i]
		if it.unchanged && (it.e.is(flagRemoved) || it.e.res.from != it.was) {
			it.unchanged, it.looked = false, false
			it.raw = &anypb.Any{}
			found = true
		}
	}
	return found
}

// parallelMin is the number of resources from which a response is looked
// up and decoded on several goroutines.
const parallelMin = 256

// inParallel calls f for the ranges [lo, hi) that make up [0, n): one
// range for fewer than parallelMin items, else one per goroutine, on up
// to GOMAXPROCS goroutines, and returns once every call has.
func inParallel(n int, f func(lo, hi int)) {
	workers := min(runtime.GOMAXPROCS(0), n/(parallelMin/2))
	if n < parallelMin || workers < 2 {
		f(0, n)
		return
	}
	var wg sync.WaitGroup
	chunk := (n + workers - 1) / workers
	for lo := chunk; lo < n; lo += chunk {
		wg.Go(func() { f(lo, min(lo+chunk, n)) })
	}
	f(0, chunk)
	wg.Wait()
}

// decodeItems decodes the items that are neither unchanged nor failed,
// of type URL typeURL, and calls ready for each once decoded. What is
// decoded is a copy of the bytes received (kept), never the response's
// buffer, which the transport reuses: a decoded value may keep slices of
// what it was decoded from (a Type of the user's may). Items are
// independent and xdsresource.Type implementations are safe for
// concurrent use, so a large response is decoded in parallel: decoding is
// most of the client's work on a full-state update. todo bounds how many
// need it: below parallelMin (one resource changed in a large response),
// they are decoded on the caller's goroutine.
func decodeItems(typ xdsresource.Type, opts xdsresource.DecodeOptions, typeURL string, items []item, todo int, ready func(i int, it *item)) {
	run := inParallel
	if todo < parallelMin {
		run = func(n int, f func(lo, hi int)) { f(0, n) }
	}
	run(len(items), func(lo, hi int) {
		for i := lo; i < hi; i++ {
			if it := &items[i]; it.err == nil && !it.unchanged && !it.decoded {
				if it.kept == nil {
					it.kept = bytes.Clone(it.data)
				}
				it.raw.TypeUrl, it.raw.Value = typeURL, it.kept
				it.decode(typ, opts)
				ready(i, it)
			}
		}
	})
}

// decode decodes and validates it.raw, and names it.
func (it *item) decode(typ xdsresource.Type, opts xdsresource.DecodeOptions) {
	name, value, err := typ.Decode(opts, it.raw)
	if name != "" {
		it.name = xdstp.Received(name)
	}
	it.value, it.err, it.decoded = value, err, true
	// The entry found by the name known before decoding is that of the
	// decoded name when the two agree, as they must (see NameReader). An
	// entry's name never changes: it is read without the lock.
	it.sameName = it.looked && it.e.name == it.name
}
