package cache_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/xdslens/xdslens/xdsclient/internal/cache"
	"github.com/xdslens/xdslens/xdsclient/internal/transport"
)

// entry is an entry's state as a row wants it.
type entry struct {
	state  cache.State
	cached bool
}

var (
	acked      = entry{cache.StateACKed, true}
	requested  = entry{cache.StateRequested, false}
	nackedHeld = entry{cache.StateNACKed, true}
	nacked     = entry{cache.StateNACKed, false}
	goneHeld   = entry{cache.StateDoesNotExist, true}
	gone       = entry{cache.StateDoesNotExist, false}
	errHeld    = entry{cache.StateReceivedError, true}
	serverErr  = entry{cache.StateReceivedError, false}
	onlyValid  = cache.Applied{Valid: 1}
	oneInvalid = cache.Applied{Invalid: 1}
)

// What a response does to the entries, end to end through Apply: which
// events it has (a resource valid or not, its bytes those held, a TP3
// error, an absence from a full state, a delta removal), what the entries
// become, what their watchers hear (gRFC A88: an error about a resource
// held is ambient unless fail_on_data_errors drops it; AmbientError(nil)
// once its cause is over), and how the response is counted and answered
// (gRFC A78's valid and invalid, the NACK).
func TestApplyRules(t *testing.T) {
	fode := cache.Features{FailOnDataErrors: true}
	legacy := cache.Features{Legacy: true}
	for _, tc := range []struct {
		row    string
		f      cache.Features
		before []func(t testing.TB) *transport.Update
		u      func(t testing.TB) *transport.Update
		want   map[string]entry
		heard  []string
		counts cache.Applied
		nack   string // a part of the NACK's message; "" for an ACK
	}{
		{row: "a valid resource: ACKED, watchers get it",
			u:    up(sotw, cdsURL, "1", valid("c1")),
			want: map[string]entry{"c1": acked}, heard: []string{"c1 resource"}, counts: onlyValid},
		{row: "an invalid resource never held: NACKED, watchers get the error",
			u:    up(sotw, cdsURL, "1", invalid("c1")),
			want: map[string]entry{"c1": nacked}, heard: []string{"c1 error InvalidArgument"}, counts: oneInvalid, nack: `unsupported cluster type STATIC`},
		{row: "an invalid resource held: NACKED, kept; the error is ambient",
			before: ups(up(sotw, cdsURL, "1", valid("c1"))), u: up(sotw, cdsURL, "2", invalid("c1")),
			want: map[string]entry{"c1": nackedHeld}, heard: []string{"c1 ambient InvalidArgument"}, counts: oneInvalid, nack: "STATIC"},
		{row: "fail_on_data_errors: an invalid resource held is dropped; the error is not ambient", f: fode,
			before: ups(up(sotw, cdsURL, "1", valid("c1"))), u: up(sotw, cdsURL, "2", invalid("c1")),
			want: map[string]entry{"c1": nacked}, heard: []string{"c1 error InvalidArgument"}, counts: oneInvalid, nack: "STATIC"},
		{row: "the same invalid bytes again: NACKed again, nobody told",
			before: ups(up(sotw, cdsURL, "1", valid("c1")), up(sotw, cdsURL, "2", invalid("c1"))), u: up(sotw, cdsURL, "3", invalid("c1")),
			want: map[string]entry{"c1": nackedHeld}, counts: oneInvalid, nack: "STATIC"},
		{row: "the held bytes again after a NACK: ACKED, and the NACK is over for who heard it",
			before: ups(up(sotw, cdsURL, "1", valid("c1")), up(sotw, cdsURL, "2", invalid("c1"))), u: up(sotw, cdsURL, "3", valid("c1")),
			want: map[string]entry{"c1": acked}, heard: []string{"c1 cleared"}, counts: onlyValid},
		{row: "the held bytes again, nothing wrong: nobody told",
			before: ups(up(sotw, cdsURL, "1", valid("c1"))), u: up(sotw, cdsURL, "2", valid("c1")),
			want: map[string]entry{"c1": acked}, counts: onlyValid},
		{row: "one valid, one invalid: each its own; the NACK names the invalid one only",
			u:    up(sotw, cdsURL, "1", valid("c1"), invalid("c2")),
			want: map[string]entry{"c1": acked, "c2": nacked}, heard: []string{"c1 resource", "c2 error InvalidArgument"},
			counts: cache.Applied{Valid: 1, Invalid: 1}, nack: `"c2"`},
		{row: "a resource named twice in a response: the second is invalid",
			u:    up(sotw, cdsURL, "1", valid("c1"), valid("c1")),
			want: map[string]entry{"c1": acked}, heard: []string{"c1 resource"}, counts: cache.Applied{Valid: 1, Invalid: 1}, nack: "appears more than once"},
		{row: "a resource not subscribed: ignored, not counted",
			u:    up(sotw, cdsURL, "1", valid("c1"), valid("zz")),
			want: map[string]entry{"c1": acked}, heard: []string{"c1 resource"}, counts: onlyValid},
		{row: "a cluster absent from a full state: it does not exist; held, so ambient (gRFC A88)",
			before: ups(up(sotw, cdsURL, "1", valid("c1"), valid("c2"))), u: up(sotw, cdsURL, "2", valid("c2")),
			want: map[string]entry{"c1": goneHeld, "c2": acked}, heard: []string{"c1 ambient NotFound"}, counts: onlyValid},
		{row: "fail_on_data_errors: a cluster absent from a full state is dropped", f: fode,
			before: ups(up(sotw, cdsURL, "1", valid("c1"), valid("c2"))), u: up(sotw, cdsURL, "2", valid("c2")),
			want: map[string]entry{"c1": gone, "c2": acked}, heard: []string{"c1 error NotFound"}, counts: onlyValid},
		{row: "a cluster never received absent from a full state: nothing",
			u:    up(sotw, cdsURL, "1", valid("c2")),
			want: map[string]entry{"c1": requested, "c2": acked}, heard: []string{"c2 resource"}, counts: onlyValid},
		{row: "endpoints absent from a response: nothing (not a full state)",
			before: ups(up(sotw, edsURL, "1", valid("e1"), valid("e2"))), u: up(sotw, edsURL, "2", valid("e2")),
			want: map[string]entry{"e1": acked, "e2": acked}, counts: onlyValid},
		{row: "legacy: a cluster absent from a full state is dropped, NOT_FOUND", f: legacy,
			before: ups(up(sotw, cdsURL, "1", valid("c1"), valid("c2"))), u: up(sotw, cdsURL, "2", valid("c2")),
			want: map[string]entry{"c1": gone, "c2": acked}, heard: []string{"c1 error NotFound"}, counts: onlyValid},
		{row: "legacy, ignore_resource_deletion: the deletion is ignored, kept, nobody told (gRFC A53)", f: cache.Features{Legacy: true, IgnoreDeletion: true},
			before: ups(up(sotw, cdsURL, "1", valid("c1"), valid("c2"))), u: up(sotw, cdsURL, "2", valid("c2")),
			want: map[string]entry{"c1": acked, "c2": acked}, counts: onlyValid},
		{row: "legacy: a NACK of a resource held is ambient, fail_on_data_errors unused", f: cache.Features{Legacy: true, FailOnDataErrors: true},
			before: ups(up(sotw, cdsURL, "1", valid("c1"))), u: up(sotw, cdsURL, "2", invalid("c1")),
			want: map[string]entry{"c1": nackedHeld}, heard: []string{"c1 ambient InvalidArgument"}, counts: oneInvalid, nack: "STATIC"},
		{row: "TP3 NOT_FOUND of a resource held: RECEIVED_ERROR, kept, ambient; counted invalid, ACKed",
			before: ups(up(sotw, cdsURL, "1", valid("c1"))), u: errs(up(sotw, cdsURL, "2"), tp3("c1", codes.NotFound)),
			want: map[string]entry{"c1": errHeld}, heard: []string{"c1 ambient NotFound"}, counts: cache.Applied{Invalid: 1, Errors: 1}},
		{row: "TP3 NOT_FOUND of a resource held, fail_on_data_errors: dropped", f: fode,
			before: ups(up(sotw, cdsURL, "1", valid("c1"))), u: errs(up(sotw, cdsURL, "2"), tp3("c1", codes.NotFound)),
			want: map[string]entry{"c1": serverErr}, heard: []string{"c1 error NotFound"}, counts: cache.Applied{Invalid: 1, Errors: 1}},
		{row: "TP3 UNAVAILABLE of a resource held, fail_on_data_errors: transient, kept", f: fode,
			before: ups(up(sotw, cdsURL, "1", valid("c1"))), u: errs(up(sotw, cdsURL, "2"), tp3("c1", codes.Unavailable)),
			want: map[string]entry{"c1": errHeld}, heard: []string{"c1 ambient Unavailable"}, counts: cache.Applied{Invalid: 1, Errors: 1}},
		{row: "TP3 error of a resource never received: RECEIVED_ERROR, watchers get it",
			u:    errs(up(sotw, cdsURL, "1"), tp3("c1", codes.PermissionDenied)),
			want: map[string]entry{"c1": serverErr}, heard: []string{"c1 error PermissionDenied"}, counts: cache.Applied{Invalid: 1, Errors: 1}},
		{row: "a TP3 error with no name, or no code: invalid, NACKed",
			u:      errs(up(sotw, cdsURL, "1"), tp3("", codes.NotFound), tp3("c1", codes.OK)),
			want:   map[string]entry{"c1": requested},
			counts: cache.Applied{Invalid: 2}, nack: `resource_errors[0]: empty resource_name; resource_errors[1] for "c1": error_detail missing or OK`},
		{row: "a resource both sent and in error: the error is invalid",
			u:    errs(up(sotw, cdsURL, "1", valid("c1")), tp3("c1", codes.NotFound)),
			want: map[string]entry{"c1": acked}, heard: []string{"c1 resource"}, counts: cache.Applied{Valid: 1, Invalid: 1}, nack: "appears in both resources and resource_errors"},
		{row: "legacy: TP3 errors are not used", f: legacy,
			before: ups(up(sotw, cdsURL, "1", valid("c1"))), u: errs(up(sotw, cdsURL, "2", valid("c1")), tp3("c1", codes.NotFound)),
			want: map[string]entry{"c1": acked}, counts: onlyValid},
		{row: "delta: a removal of a resource held: it does not exist, held, ambient",
			before: ups(dup("1", []res{valid("e1")})), u: dup("2", nil, "e1"),
			want: map[string]entry{"e1": goneHeld}, heard: []string{"e1 ambient NotFound"}, counts: cache.Applied{Removed: 1}},
		{row: "delta: a removal of a name never received: it does not exist at once",
			u:    dup("1", nil, "e1"),
			want: map[string]entry{"e1": gone}, heard: []string{"e1 error NotFound"}, counts: cache.Applied{Removed: 1}},
		{row: "delta: absent from a response is no deletion",
			before: ups(dup("1", []res{valid("e1"), valid("e2")})), u: dup("2", []res{valid("e2")}),
			want: map[string]entry{"e1": acked, "e2": acked}, counts: onlyValid},
		{row: "delta: a resource both sent and removed: the removal is invalid",
			u:    dup("1", []res{valid("e1")}, "e1"),
			want: map[string]entry{"e1": acked}, heard: []string{"e1 resource"}, counts: cache.Applied{Valid: 1, Invalid: 1}, nack: "appears in both resources and removed_resources"},
		{row: "a resource of another type: invalid, NACKed, no entry touched",
			u: func(t testing.TB) *transport.Update {
				u := sotw(t, cdsURL, "1")
				u.Resources = []transport.Resource{{Err: fmt.Errorf("resource of type %q in a response of type %q", edsURL, cdsURL)}}
				return u
			},
			want: map[string]entry{"c1": requested}, counts: oneInvalid, nack: "resources[0]: resource of type"},
		{row: "many invalid resources: the NACK names the first fifty, then counts the others",
			u: func(t testing.TB) *transport.Update {
				u := sotw(t, cdsURL, "1")
				for i := range 60 {
					u.Resources = append(u.Resources, transport.Resource{Err: fmt.Errorf("bad %d", i)})
				}
				return u
			},
			want: map[string]entry{"c1": requested}, counts: cache.Applied{Invalid: 60}, nack: "bad 49; and 10 more invalid"},
	} {
		t.Run(tc.row, func(t *testing.T) {
			var names []string
			for name := range tc.want {
				names = append(names, name)
			}
			slices.Sort(names)
			r := newRig(t, tc.f, 0, names...)
			for _, u := range tc.before {
				r.apply(u(t))
			}
			r.heard()
			a := r.apply(tc.u(t))
			for name, want := range tc.want {
				if s, cached := r.state(name); s != want.state || cached != want.cached {
					t.Errorf("%s: %v (cached %v), want %v (cached %v)", name, s, cached, want.state, want.cached)
				}
			}
			if got := r.heard(); !slices.Equal(got, tc.heard) {
				t.Errorf("watchers heard %q, want %q", got, tc.heard)
			}
			nack := a.NACK
			a.NACK, a.Wait = nil, nil
			if a != tc.counts {
				t.Errorf("counted %+v, want %+v", a, tc.counts)
			}
			switch {
			case tc.nack == "" && nack != nil:
				t.Errorf("NACK %v, want an ACK", nack)
			case tc.nack != "" && (nack == nil || !strings.Contains(nack.Error(), tc.nack)):
				t.Errorf("NACK %v, want one with %q", nack, tc.nack)
			}
		})
	}
}

// up is a row's update: f's, made when the row runs.
func up(f func(testing.TB, string, string, ...res) *transport.Update, typeURL, version string, rs ...res) func(testing.TB) *transport.Update {
	return func(t testing.TB) *transport.Update { return f(t, typeURL, version, rs...) }
}

// dup is a row's delta update of endpoints.
func dup(version string, rs []res, removed ...string) func(testing.TB) *transport.Update {
	return func(t testing.TB) *transport.Update { return delta(t, edsURL, version, rs, removed...) }
}

// errs is u with TP3 errors.
func errs(u func(testing.TB) *transport.Update, e ...transport.ResourceError) func(testing.TB) *transport.Update {
	return func(t testing.TB) *transport.Update { return withErrors(u(t), e...) }
}

// ups lists a row's updates.
func ups(u ...func(testing.TB) *transport.Update) []func(testing.TB) *transport.Update { return u }
