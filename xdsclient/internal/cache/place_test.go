package cache_test

import (
	"bytes"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/xdslens/xdslens/internal/xdswatch/demo/controlplane"
	"github.com/xdslens/xdslens/xdsclient/internal/cache"
	"github.com/xdslens/xdslens/xdsclient/internal/transport"
	"github.com/xdslens/xdslens/xdsclient/internal/txn"
	"github.com/xdslens/xdslens/xdsclient/xdsresource"
)

// counting is the Cluster type whose NameReader counts the names it reads.
type counting struct {
	xdsresource.Type
	reads *atomic.Int64
}

func (c counting) ReadName(b []byte) ([]byte, bool) {
	c.reads.Add(1)
	return c.Type.(xdsresource.NameReader).ReadName(b)
}

// placed is a cache of n watched clusters c0..c(n-1) of the counting type,
// and what its watchers were given.
type placed struct {
	*clusters
	t     *testing.T
	reads atomic.Int64
	heard chan string // the names whose watchers were given a resource
}

func newPlaced(t *testing.T, n int) *placed {
	p := &placed{t: t, heard: make(chan string, 4*n)}
	p.clusters = newEntries(t, counting{xdsresource.ClusterType, &p.reads}, n, func(int) func(int, cache.Delivery) any {
		return func(_ int, d cache.Delivery) any { return d.Name }
	}, func(_ *cache.Watcher, payload any, _ error, _ bool) {
		if name, ok := payload.(string); ok {
			p.heard <- name
		}
	})
	return p
}

// cluster returns cluster ci, its connect timeout set to seconds.
func cluster(t *testing.T, i, seconds int) []byte {
	t.Helper()
	c := controlplane.Cluster("c"+strconv.Itoa(i), "")
	c.ConnectTimeout = durationpb.New(time.Duration(seconds) * time.Second)
	b, err := proto.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// apply applies a full state of the given resources; it returns how many
// names were read, and which watchers were given a resource, sorted.
func (p *placed) apply(version string, resources [][]byte) (cache.Applied, int64, []string) {
	p.t.Helper()
	u := &transport.Update{TypeURL: p.k.Type.TypeURL(), Version: version, Known: true, Subscribed: len(p.entries)}
	for _, b := range resources {
		// A copy per response, as the transport reads each into its own
		// buffer.
		u.Resources = append(u.Resources, transport.Resource{Value: bytes.Clone(b)})
	}
	before := p.reads.Load()
	a, ok := p.c.Apply(p.src, u, func(*txn.Tx) bool { return true })
	if !ok {
		p.t.Fatalf("version %s: not applied", version)
	}
	<-a.Wait
	var heard []string
	for len(p.heard) > 0 {
		heard = append(heard, <-p.heard)
	}
	slices.Sort(heard)
	return a, p.reads.Load() - before, heard
}

// holds fails unless every entry holds the resource given for it in want,
// by name.
func (p *placed) holds(want map[string][]byte) {
	p.t.Helper()
	tx := p.mu.Lock()
	defer tx.Unlock()
	for _, e := range p.entries {
		if s := e.Snapshot(tx); !bytes.Equal(s.Raw, want[e.Name()]) {
			p.t.Fatalf("%s holds %x, want %x", e.Name(), s.Raw, want[e.Name()])
		}
	}
}

// TestApplyByPlace: a server's full states come in the same order each
// time; once most of a response was unchanged, the next one's resources
// are compared with the entry their place held, and names are read only
// of those that differ. Whatever the order, each resource reaches the
// entry of its name, a change is a change, and a resource named twice is
// NACKed.
func TestApplyByPlace(t *testing.T) {
	const n = 400
	p := newPlaced(t, n)
	state := make([][]byte, n)
	byName := map[string][]byte{}
	for i := range state {
		state[i] = cluster(t, i, 5)
		byName["c"+strconv.Itoa(i)] = state[i]
	}
	step := func(version string, resources [][]byte, wantReads int64, wantHeard []string) {
		t.Helper()
		a, reads, heard := p.apply(version, resources)
		if a.NACK != nil || a.Valid != n {
			t.Fatalf("version %s: %d valid, NACK %v; want %d valid", version, a.Valid, a.NACK, n)
		}
		if reads != wantReads {
			t.Errorf("version %s: %d names read, want %d", version, reads, wantReads)
		}
		if !slices.Equal(heard, wantHeard) {
			t.Errorf("version %s: watchers of %v given a resource, want %v", version, heard, wantHeard)
		}
		p.holds(byName)
	}
	all := make([]string, n)
	for i := range all {
		all[i] = "c" + strconv.Itoa(i)
	}
	slices.Sort(all)

	step("1", state, n, all) // all new: names read
	step("2", state, n, nil) // the last one was all new: names read
	step("3", state, 0, nil) // the last one was unchanged: by place
	state[7] = cluster(t, 7, 6)
	byName["c7"] = state[7]
	step("4", state, 1, []string{"c7"}) // one change: its name alone read

	// The same resources in the reverse order: every place differs.
	reversed := slices.Clone(state)
	slices.Reverse(reversed)
	step("5", reversed, n, nil)
	step("6", reversed, 0, nil)
	// Two resources swap places and one of them changes.
	reversed[0], reversed[1] = reversed[1], reversed[0]
	reversed[0] = cluster(t, n-2, 7)
	byName["c"+strconv.Itoa(n-2)] = reversed[0]
	step("7", reversed, 2, []string{"c" + strconv.Itoa(n-2)})

	// A resource named twice, where another one's place was: NACKed.
	twice := slices.Clone(reversed)
	twice[3] = twice[2]
	a, _, heard := p.apply("8", twice)
	if a.NACK == nil || !strings.Contains(a.NACK.Error(), "more than once") {
		t.Fatalf("a resource named twice: NACK %v, want one that says so", a.NACK)
	}
	if len(heard) != 0 {
		t.Fatalf("a resource named twice: watchers of %v given a resource", heard)
	}
}

// TestApplyByPlaceAfterRemoval: an entry that leaves the cache drops the
// placement, which keeps no removed entry: the next response reads every
// name, and an entry made again for a name gets its resource.
func TestApplyByPlaceAfterRemoval(t *testing.T) {
	const n = 300
	p := newPlaced(t, n-1)
	// One more entry, whose watcher is kept, to remove it.
	tx := p.mu.Lock()
	last := p.c.Add(tx, p.k, "c"+strconv.Itoa(n-1), p.entries[0].Group())
	w := p.c.NewWatcher(tx, last, nil)
	p.c.Watch(tx, last, w, nil, nil, "")
	p.entries = append(p.entries, last)
	tx.Unlock()
	state := make([][]byte, n)
	for i := range state {
		state[i] = cluster(t, i, 5)
	}
	for v := range 3 {
		p.apply(strconv.Itoa(v+1), state)
	}
	if _, reads, _ := p.apply("4", state); reads != 0 {
		t.Fatalf("unchanged: %d names read, want 0", reads)
	}
	tx = p.mu.Lock()
	if !p.c.Unwatch(tx, w) {
		t.Fatal("Unwatch of the only watcher: not the last")
	}
	p.c.Remove(tx, last)
	again := p.c.Add(tx, p.k, last.Name(), p.entries[0].Group())
	p.c.Watch(tx, again, p.c.NewWatcher(tx, again, nil), nil, nil, "")
	p.entries[n-1] = again
	tx.Unlock()
	_, reads, heard := p.apply("5", state)
	if reads != n {
		t.Errorf("after a removal: %d names read, want %d", reads, n)
	}
	if want := []string{last.Name()}; !slices.Equal(heard, want) {
		t.Errorf("after a removal: watchers of %v given a resource, want %v", heard, want)
	}
	tx = p.mu.Lock()
	defer tx.Unlock()
	if s := again.Snapshot(tx); !bytes.Equal(s.Raw, state[n-1]) {
		t.Fatalf("%s made again holds %x, want %x", again.Name(), s.Raw, state[n-1])
	}
}
