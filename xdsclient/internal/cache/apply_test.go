package cache_test

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/xdslens/xdslens/internal/xdswatch/demo/controlplane"
	"github.com/xdslens/xdslens/xdsclient/internal/cache"
	"github.com/xdslens/xdslens/xdsclient/internal/lane"
	"github.com/xdslens/xdslens/xdsclient/internal/transport"
	"github.com/xdslens/xdslens/xdsclient/internal/txn"
	"github.com/xdslens/xdslens/xdsclient/xdsresource"
)

// TestApplyKeepsCopies: the resources of a response are slices of the
// buffer it was received in, which the transport reuses; what the cache
// holds and what watchers get must be copies, for a response large
// enough to be decoded on several goroutines as for a small one.
func TestApplyKeepsCopies(t *testing.T) {
	for _, n := range []int{3, 1000} {
		t.Run(strconv.Itoa(n), func(t *testing.T) {
			wire, want, resources := inOneBuffer(t, n)
			got := make(chan *cache.Delivery, n)
			f := newClusters(t, n, func(d cache.Delivery) any { return &d }, func(_ *cache.Watcher, payload any, _ error, _ bool) {
				got <- payload.(*cache.Delivery)
			})
			c, mu, src, k := f.c, f.mu, f.src, f.k
			u := &transport.Update{TypeURL: k.Type.TypeURL(), Version: "1", Resources: resources, Known: true, Subscribed: n}
			a, ok := c.Apply(src, u, func(*txn.Tx) bool { return true })
			if !ok || a.Valid != n || a.NACK != nil {
				t.Fatalf("Apply: %+v, applied %v", a, ok)
			}
			<-a.Wait
			clear(wire) // the transport reads the next response into it
			tx := mu.Lock()
			defer tx.Unlock()
			for i, e := range f.entries {
				if s := e.Snapshot(tx); !bytes.Equal(s.Raw, want[i]) {
					t.Fatalf("%s holds %x after the response's buffer was reused, want %x", e.Name(), s.Raw, want[i])
				}
			}
			for range n {
				d := <-got
				i, _ := strconv.Atoi(d.Name[1:])
				if d.Version != "1" || d.Server != "s" {
					t.Errorf("watcher of %s got version %q from %q, want %q from %q", d.Name, d.Version, d.Server, "1", "s")
				}
				if !bytes.Equal(d.Raw.Value, want[i]) {
					t.Fatalf("watcher of %s got Raw %x after the response's buffer was reused, want %x", d.Name, d.Raw.Value, want[i])
				}
			}
		})
	}
}

// inOneBuffer returns the clusters c0..c(n-1) marshalled (want), and as
// the resources of a response (slices of wire), all in one buffer as in
// the response they came in.
func inOneBuffer(t *testing.T, n int) (wire []byte, want [][]byte, resources []transport.Resource) {
	t.Helper()
	want = make([][]byte, n)
	for i := range n {
		raw, err := proto.Marshal(controlplane.Cluster("c"+strconv.Itoa(i), ""))
		if err != nil {
			t.Fatal(err)
		}
		want[i] = raw
		wire = append(wire, raw...)
	}
	resources = make([]transport.Resource, n)
	for i, rest := 0, wire; i < n; i++ {
		resources[i] = transport.Resource{Value: rest[:len(want[i]):len(want[i])]}
		rest = rest[len(want[i]):]
	}
	return wire, want, resources
}

// misnaming is the Cluster type with a NameReader that reads every
// resource's name as "c0": a Type that breaks NameReader's contract.
type misnaming struct{ xdsresource.Type }

func (misnaming) ReadName([]byte) ([]byte, bool) { return []byte("c0"), true }

// TestApplyNameReadWrong: a resource goes to the entry of the name it
// decodes with, even when the name read before decoding, by which an
// entry was found, is another one.
func TestApplyNameReadWrong(t *testing.T) {
	for _, n := range []int{3, 1000} {
		t.Run(strconv.Itoa(n), func(t *testing.T) {
			f := newEntries(t, misnaming{xdsresource.ClusterType}, n, func(int) func(int, cache.Delivery) any {
				return func(_ int, d cache.Delivery) any { return d.Value }
			}, func(*cache.Watcher, any, error, bool) {})
			resources := make([]transport.Resource, n)
			want := make([][]byte, n)
			for i := range resources {
				raw, err := proto.Marshal(controlplane.Cluster("c"+strconv.Itoa(i), ""))
				if err != nil {
					t.Fatal(err)
				}
				resources[i], want[i] = transport.Resource{Value: raw}, raw
			}
			u := &transport.Update{TypeURL: f.k.Type.TypeURL(), Version: "1", Resources: resources, Known: true, Subscribed: n}
			a, ok := f.c.Apply(f.src, u, func(*txn.Tx) bool { return true })
			if !ok || a.Valid != n || a.Invalid != 0 || a.NACK != nil {
				t.Fatalf("Apply: %+v, applied %v; want %d valid", a, ok, n)
			}
			<-a.Wait
			tx := f.mu.Lock()
			defer tx.Unlock()
			for i, e := range f.entries {
				if s := e.Snapshot(tx); !bytes.Equal(s.Raw, want[i]) {
					t.Fatalf("%s holds %x, want %x", e.Name(), s.Raw, want[i])
				}
			}
		})
	}
}

// unnamed is the Cluster type without its NameReader: a resource is
// decoded before it is known to be a change.
type unnamed struct{ xdsresource.Type }

// keeping is the Cluster type whose decoded value is the bytes it was
// decoded from, as a Type of the user's may keep slices of them.
type keeping struct{ xdsresource.Type }

func (k keeping) Decode(opts xdsresource.DecodeOptions, raw *anypb.Any) (string, any, error) {
	name, _, err := k.Type.Decode(opts, raw)
	return name, raw.Value, err
}

// TestApplyDecodesCopies: a Type decodes a copy of the bytes received,
// never the response's buffer, which the transport reuses once the
// response is applied: a decoded value that keeps slices of its input
// stays as it was.
func TestApplyDecodesCopies(t *testing.T) {
	for _, n := range []int{3, 1000} {
		t.Run(strconv.Itoa(n), func(t *testing.T) {
			wire, want, resources := inOneBuffer(t, n)
			got := make(chan cache.Delivery, n)
			f := newEntries(t, keeping{xdsresource.ClusterType}, n, func(int) func(int, cache.Delivery) any {
				return func(_ int, d cache.Delivery) any { return d }
			}, func(_ *cache.Watcher, payload any, _ error, _ bool) { got <- payload.(cache.Delivery) })
			u := &transport.Update{TypeURL: f.k.Type.TypeURL(), Version: "1", Resources: resources, Known: true, Subscribed: n}
			a, ok := f.c.Apply(f.src, u, func(*txn.Tx) bool { return true })
			if !ok || a.Valid != n || a.NACK != nil {
				t.Fatalf("Apply: %+v, applied %v", a, ok)
			}
			clear(wire) // the transport reads the next response into it
			<-a.Wait
			for range n {
				d := <-got
				i, _ := strconv.Atoi(d.Name[1:])
				if !bytes.Equal(d.Value.([]byte), want[i]) {
					t.Fatalf("%s decoded from %x, which changed with the response's buffer; want a copy of %x", d.Name, d.Value, want[i])
				}
			}
		})
	}
}

// TestApplyDeliversInPlace: what watchers get of the changed resources of
// a response is made in the places Deliver allocates together, each in
// its own, whether the type reads names before decoding or not.
func TestApplyDeliversInPlace(t *testing.T) {
	for _, typ := range []xdsresource.Type{xdsresource.ClusterType, unnamed{xdsresource.ClusterType}} {
		t.Run(fmt.Sprintf("%T", typ), func(t *testing.T) {
			const n = 1000
			var (
				mu     sync.Mutex
				places []int
			)
			f := newEntries(t, typ, n, func(m int) func(int, cache.Delivery) any {
				if m != n {
					t.Errorf("Deliver for %d resources, want %d", m, n)
				}
				return func(place int, d cache.Delivery) any {
					mu.Lock()
					defer mu.Unlock()
					places = append(places, place)
					return d.Value
				}
			}, func(*cache.Watcher, any, error, bool) {})
			resources := make([]transport.Resource, n)
			for i := range resources {
				raw, err := proto.Marshal(controlplane.Cluster("c"+strconv.Itoa(i), ""))
				if err != nil {
					t.Fatal(err)
				}
				resources[i] = transport.Resource{Value: raw}
			}
			u := &transport.Update{TypeURL: f.k.Type.TypeURL(), Version: "1", Resources: resources, Known: true, Subscribed: n}
			a, ok := f.c.Apply(f.src, u, func(*txn.Tx) bool { return true })
			if !ok || a.Valid != n || a.NACK != nil {
				t.Fatalf("Apply: %+v, applied %v", a, ok)
			}
			<-a.Wait
			mu.Lock()
			defer mu.Unlock()
			slices.Sort(places)
			if len(places) != n || places[0] != 0 || places[n-1] != n-1 || len(slices.Compact(places)) != n {
				t.Errorf("made in places %v, want each of 0 to %d once", places, n-1)
			}
		})
	}
}

// clusters is a cache with one server, src, and n cluster entries, c0 to
// c(n-1), each watched once; deliver makes what watchers get, run is
// their callback.
type clusters struct {
	c       *cache.Cache
	mu      *txn.Mutex
	src     *cache.Source
	k       *cache.Kind
	entries []*cache.Entry
}

func newClusters(tb testing.TB, n int, deliver func(cache.Delivery) any, run func(*cache.Watcher, any, error, bool)) *clusters {
	return newEntries(tb, xdsresource.ClusterType, n, func(int) func(int, cache.Delivery) any {
		return func(_ int, d cache.Delivery) any { return deliver(d) }
	}, run)
}

// newEntries is newClusters for entries of typ, with Config.Deliver
// deliver.
func newEntries(tb testing.TB, typ xdsresource.Type, n int, deliver func(int) func(int, cache.Delivery) any, run func(*cache.Watcher, any, error, bool)) *clusters {
	tb.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var lanes lane.Set
	tb.Cleanup(func() { cancel(); lanes.Wait() })
	f := &clusters{mu: new(txn.Mutex)}
	f.c = cache.New(cache.Config{Mutex: f.mu, NodeID: "n", Observer: quiet{},
		Deliver: deliver})
	f.src = f.c.NewSource()
	f.src.URI, f.src.Timeout = "s", time.Hour
	f.src.Lane = lane.New(&lanes, ctx, run)
	tx := f.mu.Lock()
	defer tx.Unlock()
	k, err := f.c.Register(tx, cache.Describe(typ))
	if err != nil {
		tb.Fatal(err)
	}
	f.k = k
	g := cache.NewGroup(tx, "#old", f.src)
	for i := range n {
		e := f.c.Add(tx, k, "c"+strconv.Itoa(i), g)
		f.c.Watch(tx, e, f.c.NewWatcher(tx, e, nil), nil, nil, "")
		f.entries = append(f.entries, e)
	}
	return f
}
