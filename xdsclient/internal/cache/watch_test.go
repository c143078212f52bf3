package cache_test

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/xdslens/xdslens/xdsclient/internal/cache"
	"github.com/xdslens/xdslens/xdsclient/internal/transport"
	"github.com/xdslens/xdslens/xdsclient/internal/txn"
)

// join adds a watcher named sink to the entry name, as package xdsclient's
// Watch does: the resource held decoded first, down the cause of the
// failure of the server in use ("" if it serves).
func (r *rig) join(name, sink, down string) {
	r.t.Helper()
	tx := r.mu.Lock()
	e := r.entries[name]
	h := r.c.Held(tx, e)
	tx.Unlock()
	var (
		res    any
		resErr error
	)
	if h.Ok() {
		res, resErr = r.c.Decode(h)
	}
	r.locked(func(tx *txn.Tx) { r.c.Watch(tx, e, &cache.Watcher{Sink: sink}, res, resErr, down) })
}

// What a watcher that joins an entry hears (gRFC A88): the resource held,
// then the ambient error in force; or the error that stands for the
// resource; nothing while nothing is known.
func TestWatchJoin(t *testing.T) {
	for _, tc := range []struct {
		row    string
		before []func(testing.TB) *transport.Update
		down   string
		heard  []string
	}{
		{row: "nothing received, server fine: nothing yet"},
		{row: "nothing received, server down: its failure", down: "unreachable",
			heard: []string{"w error Unavailable"}},
		{row: "held: the resource", before: ups(up(sotw, cdsURL, "1", valid("c1"))),
			heard: []string{"w resource"}},
		{row: "held, server down: the resource, then the failure as ambient", before: ups(up(sotw, cdsURL, "1", valid("c1"))), down: "unreachable",
			heard: []string{"w resource", "w ambient Unavailable"}},
		{row: "held, then NACKed: the resource, then the NACK as ambient",
			before: ups(up(sotw, cdsURL, "1", valid("c1")), up(sotw, cdsURL, "2", invalid("c1"))),
			heard:  []string{"w resource", "w ambient InvalidArgument"}},
		{row: "NACKed, nothing held: the NACK", before: ups(up(sotw, cdsURL, "1", invalid("c1"))), down: "unreachable",
			heard: []string{"w error InvalidArgument"}},
		{row: "deleted, held: the resource, then NOT_FOUND as ambient",
			before: ups(up(sotw, cdsURL, "1", valid("c1")), up(sotw, cdsURL, "2")),
			heard:  []string{"w resource", "w ambient NotFound"}},
		{row: "a TP3 error, nothing held: the error",
			before: ups(errs(up(sotw, cdsURL, "1"), tp3("c1", codes.PermissionDenied))),
			heard:  []string{"w error PermissionDenied"}},
	} {
		t.Run(tc.row, func(t *testing.T) {
			r := newRig(t, cache.Features{}, 0, "c1")
			for _, u := range tc.before {
				r.apply(u(t))
			}
			r.heard()
			r.join("c1", "w", tc.down)
			if got := r.heard(); !slices.Equal(got, tc.heard) {
				t.Errorf("the new watcher heard %q, want %q", got, tc.heard)
			}
		})
	}
}

// A server failure (gRFC A57 with A88): the cache is unchanged; the
// watchers of a resource held hear it as ambient, the others through
// ResourceChanged, with the cause; once the resource comes again, those
// that heard an ambient error hear that it is over, and a later watcher
// never hears of it.
func TestUnreachable(t *testing.T) {
	r := newRig(t, cache.Features{}, 0, "c1", "c2")
	r.apply(sotw(t, cdsURL, "1", valid("c1")))
	r.heard()
	r.locked(func(tx *txn.Tx) { r.c.Unreachable(tx, r.g, "xDS server unreachable: gone") })
	if got, want := r.heard(), []string{"c1 ambient Unavailable", "c2 error Unavailable"}; !slices.Equal(got, want) {
		t.Fatalf("watchers heard %q, want %q", got, want)
	}
	for name, want := range map[string]entry{"c1": acked, "c2": requested} {
		if s, cached := r.state(name); s != want.state || cached != want.cached {
			t.Errorf("%s: %v (cached %v) after the failure, want %v (cached %v): the cache is unchanged", name, s, cached, want.state, want.cached)
		}
	}
	r.apply(sotw(t, cdsURL, "2", valid("c1"), valid("c2")))
	if got, want := r.heard(), []string{"c1 cleared", "c2 resource"}; !slices.Equal(got, want) {
		t.Fatalf("watchers heard %q once the server served again, want %q", got, want)
	}
	r.join("c1", "late", "")
	if got, want := r.heard(), []string{"late resource"}; !slices.Equal(got, want) {
		t.Fatalf("a later watcher heard %q, want %q", got, want)
	}
}

// The errors watchers get name the resource, the server and the node, and
// carry what the server said (gRFC A88).
func TestErrorsNameWhatFailed(t *testing.T) {
	r := newRig(t, cache.Features{}, 0, "c1", "c2")
	r.apply(withErrors(sotw(t, cdsURL, "7", invalid("c1")), tp3("c2", codes.PermissionDenied)))
	for name, parts := range map[string][]string{
		"c1": {`cds "c1"`, `xDS server "xds.test:443"`, `node ID "node-1"`, `rejected (NACK) version "7"`, "STATIC"},
		"c2": {`cds "c2"`, `xDS server "xds.test:443"`, `node ID "node-1"`, "control plane reported PermissionDenied: server says PermissionDenied"},
	} {
		var err error
		r.locked(func(tx *txn.Tx) { err = r.entries[name].Err(tx) })
		for _, p := range parts {
			if err == nil || !strings.Contains(err.Error(), p) {
				t.Errorf("%s's error %v, want it to say %q", name, err, p)
			}
		}
	}
	var code codes.Code
	r.locked(func(tx *txn.Tx) { code = status.Code(r.entries["c1"].Err(tx)) })
	if code != codes.InvalidArgument {
		t.Errorf("c1's error has code %v, want INVALID_ARGUMENT", code)
	}
}

// Versions are those of the resources held from a server, by name, each
// its own over delta: what a resumed delta stream sends.
func TestVersions(t *testing.T) {
	r := newRig(t, cache.Features{}, 0, "e1", "e2", "e3")
	r.apply(delta(t, edsURL, "s1", []res{{name: "e1", version: "v1"}, {name: "e2", version: "v2"}}))
	var got map[string]string
	r.locked(func(tx *txn.Tx) { got = r.c.Versions(tx, r.src, r.eds) })
	if want := map[string]string{"e1": "v1", "e2": "v2"}; !maps.Equal(got, want) {
		t.Fatalf("Versions = %v, want %v", got, want)
	}
	r.locked(func(tx *txn.Tx) { got = r.c.Versions(tx, r.c.NewSource(), r.eds) })
	if got != nil {
		t.Fatalf("Versions from a server that sent nothing = %v, want none", got)
	}
}

// Dump lists every entry once, sorted by type URL and name, and leaves
// out an entry removed before its turn.
func TestDump(t *testing.T) {
	r := newRig(t, cache.Features{}, 0, "c2", "e1", "c1", "c3")
	var got []string
	removed := false
	r.c.Dump(func(*txn.Tx) bool { return true }, func(tx *txn.Tx, e *cache.Entry) {
		got = append(got, e.Name())
		if !removed {
			removed = true
			r.c.Remove(tx, r.entries["c3"])
		}
	}, nil)
	if want := []string{"c1", "c2", "e1"}; !slices.Equal(got, want) {
		t.Fatalf("Dump listed %v, want %v (sorted by type URL and name, c3 removed on the way)", got, want)
	}
}
