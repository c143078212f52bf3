package ringhash

import (
	"cmp"
	"math"
	"slices"
	"strconv"

	"github.com/cespare/xxhash/v2"
)

// entry is one point of the ring: the hash of "KEY_N" for the N-th point
// of the endpoint whose hash key is KEY.
type entry struct {
	hash uint64
	key  string // the endpoint's hash key
	idx  int    // the entry's position in the ring
}

// ring is sorted by hash; an RPC takes the first entry whose hash is at
// least its request hash, wrapping around.
type ring struct {
	entries []entry
}

// weighted is an endpoint as the ring sees it.
type weighted struct {
	key    string
	weight uint32
}

// newRing builds the ring of the endpoints eps, which must not be empty,
// as gRFC A42 specifies (Envoy's ring hash): each endpoint's weight is
// normalized by the sum of all, the ring gets enough entries for the
// lightest endpoint to have a whole number of them, at least minSize and
// at most maxSize, and each endpoint gets its share of entries, hashed
// with xxHash64 from "KEY_0", "KEY_1", and so on. Endpoints are taken in
// the order of their keys, so that the same endpoints always build the
// same ring.
func newRing(eps []weighted, minSize, maxSize uint64) *ring {
	eps = slices.Clone(eps)
	slices.SortFunc(eps, func(a, b weighted) int { return cmp.Compare(a.key, b.key) })
	var sum float64
	for _, e := range eps {
		sum += float64(e.weight)
	}
	minNorm := 1.0
	for _, e := range eps {
		minNorm = math.Min(minNorm, float64(e.weight)/sum)
	}
	scale := math.Min(math.Ceil(minNorm*float64(minSize))/minNorm, float64(maxSize))
	r := &ring{entries: make([]entry, 0, int(math.Ceil(scale)))}
	var have, want float64
	for _, e := range eps {
		want += scale * float64(e.weight) / sum
		for i := 0; have < want; i++ {
			r.entries = append(r.entries, entry{hash: xxhash.Sum64String(e.key + "_" + strconv.Itoa(i)), key: e.key})
			have++
		}
	}
	slices.SortStableFunc(r.entries, func(a, b entry) int { return cmp.Compare(a.hash, b.hash) })
	for i := range r.entries {
		r.entries[i].idx = i
	}
	return r
}

// find returns the index of the first entry whose hash is at least h,
// the first entry when h is above them all: O(log n).
func (r *ring) find(h uint64) int {
	i, _ := slices.BinarySearchFunc(r.entries, h, func(e entry, h uint64) int { return cmp.Compare(e.hash, h) })
	if i == len(r.entries) {
		return 0
	}
	return i
}
