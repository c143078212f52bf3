package cache

import (
	"runtime"
	"sync"

	"google.golang.org/protobuf/types/known/anypb"

	"github.com/xdslens/xdslens/xdsclient/internal/transport"
	"github.com/xdslens/xdslens/xdsclient/internal/xdstp"
	"github.com/xdslens/xdslens/xdsclient/xdsresource"
)

// item is one resource of a response on its way into the cache.
type item struct {
	raw     *anypb.Any
	name    string // canonical; "" until known
	rawName []byte // the name read without decoding, nil if not
	version string // the resource's own version (delta)
	value   any
	err     error
	// entry is the entry found by name before decoding, nil if none;
	// against it the bytes were compared, when it held a resource of the
	// server: was is what it held then (nil if nothing of the server), and
	// unchanged is set if the bytes were the same, so not decoded.
	entry     *Entry
	was       *update
	looked    bool
	unchanged bool
	decoded   bool
}

// take takes r, one resource of a response of type typ: its name, as the
// response gives it or as typ reads it without decoding.
func take(r transport.Resource, typ xdsresource.Type) item {
	it := item{raw: r.Any, version: r.Version, err: r.Err}
	if r.Name != "" {
		it.name = canonicalReceived(typ, r.Name)
	}
	if r.Err != nil {
		return it
	}
	if reader, ok := typ.(xdsresource.NameReader); ok {
		if name, ok := reader.ReadName(it.raw.GetValue()); ok {
			if !xdstp.IsCanonical(name) {
				// Named as subscribed: canonical form.
				name = []byte(canonicalReceived(typ, string(name)))
			}
			it.rawName = name
		}
	}
	return it
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
		if it := &items[i]; it.err == nil && !it.unchanged && !it.decoded {
			it.decode(typ, opts)
		}
	}
}

// decode decodes and validates it.raw, and names it.
func (it *item) decode(typ xdsresource.Type, opts xdsresource.DecodeOptions) {
	name, value, err := typ.Decode(opts, it.raw)
	if name != "" {
		it.name = name
	}
	it.name = canonicalReceived(typ, it.name)
	it.value, it.err, it.decoded = value, err, true
}
