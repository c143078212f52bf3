package ringhash

import (
	"context"
	"errors"
	"math"
	"testing"

	"github.com/cespare/xxhash/v2"

	"google.golang.org/grpc/balancer"
	"google.golang.org/grpc/connectivity"

	"github.com/xdslens/xdslens/internal/testing/testmain"
	"github.com/xdslens/xdslens/xdsgrpc/internal/callctx"
)

// TestMain ends the test binary without the race detector's pause at exit.
func TestMain(m *testing.M) { testmain.Run(m) }

// TestRingSizeAndShares checks the ring of gRFC A42: at least minSize
// entries (enough for the lightest endpoint to get a whole number), at
// most maxSize, and each endpoint's share of entries proportional to its
// weight.
func TestRingSizeAndShares(t *testing.T) {
	for _, tc := range []struct {
		name             string
		eps              []weighted
		minSize, maxSize uint64
		wantSize         int
	}{
		{"equal", []weighted{{"a", 1}, {"b", 1}, {"c", 1}}, 1024, 4096, 1026},
		{"weighted 1:3", []weighted{{"a", 1}, {"b", 3}}, 1024, 4096, 1024},
		{"lightest whole", []weighted{{"a", 1}, {"b", 1000}}, 1024, 4096, 2002},
		{"capped", []weighted{{"a", 1}, {"b", 10000}}, 1024, 4096, 4096},
		{"one", []weighted{{"a", 7}}, 10, 100, 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRing(tc.eps, tc.minSize, tc.maxSize)
			if len(r.entries) != tc.wantSize {
				t.Errorf("ring of %d entries, want %d", len(r.entries), tc.wantSize)
			}
			var sum float64
			for _, e := range tc.eps {
				sum += float64(e.weight)
			}
			count := map[string]int{}
			for i, e := range r.entries {
				count[e.key]++
				if e.idx != i || i > 0 && r.entries[i-1].hash > e.hash {
					t.Fatalf("entry %d out of order", i)
				}
			}
			for _, e := range tc.eps {
				want := float64(len(r.entries)) * float64(e.weight) / sum
				if math.Abs(float64(count[e.key])-want) > 1 {
					t.Errorf("%s has %d entries, want about %.1f", e.key, count[e.key], want)
				}
			}
		})
	}
}

// TestRingDeterministic checks that the ring depends on the endpoints, not
// on the order they come in, and that the entries of an endpoint are the
// xxHash64 of "KEY_N": the same on every channel.
func TestRingDeterministic(t *testing.T) {
	a := newRing([]weighted{{"10.0.0.1:80", 1}, {"10.0.0.2:80", 2}}, 64, 64)
	b := newRing([]weighted{{"10.0.0.2:80", 2}, {"10.0.0.1:80", 1}}, 64, 64)
	for i := range a.entries {
		if a.entries[i] != b.entries[i] {
			t.Fatalf("entry %d differs: %+v and %+v", i, a.entries[i], b.entries[i])
		}
	}
	r := newRing([]weighted{{"x", 1}}, 2, 2)
	if r.entries[0].hash > r.entries[1].hash || (r.entries[0].hash != xxhash.Sum64String("x_0") && r.entries[0].hash != xxhash.Sum64String("x_1")) {
		t.Errorf("entries of x are %+v, want the hashes of x_0 and x_1", r.entries)
	}
}

// TestFind checks that a hash goes to the first entry at or above it, and
// past the last to the first.
func TestFind(t *testing.T) {
	r := &ring{entries: []entry{{hash: 10, idx: 0}, {hash: 20, idx: 1}, {hash: 30, idx: 2}}}
	for h, want := range map[uint64]int{0: 0, 10: 0, 11: 1, 20: 1, 25: 2, 30: 2, 31: 0, math.MaxUint64: 0} {
		if got := r.find(h); got != want {
			t.Errorf("find(%d) = %d, want %d", h, got, want)
		}
	}
}

// namedPicker answers every pick with its name in the error, or waits.
type namedPicker struct {
	name string
	wait bool
}

func (p namedPicker) Pick(balancer.PickInfo) (balancer.PickResult, error) {
	if p.wait {
		return balancer.PickResult{}, balancer.ErrNoSubConnAvailable
	}
	return balancer.PickResult{}, errors.New(p.name)
}

// TestPickSkipsFailing checks gRFC A61's walk: from the entry of the
// hash, endpoints in TRANSIENT_FAILURE are skipped and the first READY,
// CONNECTING or IDLE one picks; when all fail, the owner of the hash does.
func TestPickSkipsFailing(t *testing.T) {
	r := &ring{entries: []entry{{hash: 10, key: "a", idx: 0}, {hash: 20, key: "b", idx: 1}, {hash: 30, key: "c", idx: 2}}}
	mk := func(states ...connectivity.State) *picker {
		p := &picker{ring: r}
		for i, s := range states {
			p.byEntry = append(p.byEntry, endpointPick{state: s, picker: namedPicker{name: r.entries[i].key}})
		}
		return p
	}
	pick := func(p *picker, h uint64) string {
		ctx := callctx.With(context.Background(), &callctx.Call{Decided: true, Hash: h, HasHash: true})
		_, err := p.Pick(balancer.PickInfo{Ctx: ctx})
		return err.Error()
	}
	tf, ready, idle := connectivity.TransientFailure, connectivity.Ready, connectivity.Idle
	if got := pick(mk(ready, ready, ready), 15); got != "b" {
		t.Errorf("hash 15 picked %s, want b", got)
	}
	if got := pick(mk(ready, tf, idle), 15); got != "c" {
		t.Errorf("hash 15 with b failing picked %s, want c (IDLE)", got)
	}
	if got := pick(mk(ready, tf, tf), 15); got != "a" {
		t.Errorf("hash 15 with b and c failing picked %s, want a (wrapping)", got)
	}
	if got := pick(mk(tf, tf, tf), 15); got != "b" {
		t.Errorf("hash 15 with all failing picked %s, want b's error", got)
	}
}
