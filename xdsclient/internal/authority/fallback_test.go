package authority_test

import (
	"testing"

	"google.golang.org/grpc/codes"
)

// gRFC A71, row by row, over in-memory servers: when an authority falls
// back to its next server (its active one fails while a resource it
// watches was never received), when it switches back (a higher priority
// server delivers again), what its watchers hear, and what becomes of the
// servers it leaves.
func TestFallback(t *testing.T) {
	// falling is the start of the rows in which the primary fails before
	// any response while c1 is missing.
	falling := []step{watch("c1"), wantSwitch(primary, 0), refuse(primary), wantFailure(primary)}
	// fellBack is the end of falling once the secondary serves c1.
	fellBack := concat(falling, []step{wantSwitch(secondary, 1), accept(secondary), wantRequest(secondary, "c1"),
		serve(secondary, "1", "c1"), wantNote(resource("c1", secondary))})
	// cached is the start of the rows in which the primary served c1 and
	// then failed.
	cached := []step{watch("c1"), wantSwitch(primary, 0), accept(primary), wantRequest(primary, "c1"),
		serve(primary, "1", "c1"), wantNote(resource("c1", primary)),
		endStream(primary), refuse(primary), wantFailure(primary)}
	for _, tc := range []struct {
		row   string
		setup setup
		steps []step
	}{
		{"the primary fails while a resource is missing: the next server is used; watchers hear nothing",
			setup{}, concat(falling,
				[]step{wantSwitch(secondary, 1), wantActive("c1", secondary, 1), accept(secondary), wantRequest(secondary, "c1"), quiet()})},
		{"the fallback server's resources go to the watchers", setup{}, fellBack},
		{"the primary delivers again: back to it; the fallback unsubscribed, its channel closed",
			setup{}, concat(fellBack, []step{accept(primary), wantRequest(primary, "c1"), serve(primary, "2", "c1"),
				wantSwitch(primary, 0), wantActive("c1", primary, 0), wantNote(resource("c1", primary)),
				wantChannels(secondary, 1, 0), wantChannels(primary, 1, 1)})},
		{"the primary answers with no resource: no switch back",
			setup{}, concat(fellBack, []step{accept(primary), wantRequest(primary, "c1"), serve(primary, "2"),
				noSwitch(), wantActive("c1", secondary, 1), wantChannels(secondary, 1, 1), quiet()})},
		{"while on the fallback, a new resource is asked of the primary too, so that its return is seen",
			setup{}, concat(fellBack, []step{watch("c2"), wantRequest(secondary, "c1", "c2"),
				accept(primary), wantRequest(primary, "c1", "c2")})},
		{"every resource cached: no fallback; watchers hear the failure as ambient",
			setup{}, concat(cached, []step{noSwitch(), wantNote(ambient("c1", codes.Unavailable)), wantChannels(secondary, 0, 0)})},
		{"a resource missing beside one cached: fallback, every resource asked of the next server; watchers hear nothing",
			setup{}, []step{watch("c1"), wantSwitch(primary, 0), accept(primary), wantRequest(primary, "c1"),
				serve(primary, "1", "c1"), wantNote(resource("c1", primary)),
				watch("c2"), wantRequest(primary, "c1", "c2"), endStream(primary), refuse(primary), wantFailure(primary),
				wantSwitch(secondary, 1), accept(secondary), wantRequest(secondary, "c1", "c2"), quiet()}},
		{"a resource the server rejected is not missing: no fallback",
			setup{}, []step{watch("c1"), wantSwitch(primary, 0), accept(primary), wantRequest(primary, "c1"),
				serveInvalid(primary, "1", "c1"), wantNote(failed("c1", codes.InvalidArgument)),
				endStream(primary), refuse(primary), wantFailure(primary), noSwitch(), wantNote(failed("c1", codes.Unavailable))}},
		{"a resource watched once the server failed with everything cached: fallback then",
			setup{}, concat(cached, []step{wantNote(ambient("c1", codes.Unavailable)), noSwitch(),
				watch("c2"), wantSwitch(secondary, 1), accept(secondary), wantRequest(secondary, "c1", "c2"), quiet()})},
		{"fallback off: the primary alone; watchers hear its failure",
			setup{noFallback: true}, concat(falling, []step{noSwitch(),
				wantNote(failed("c1", codes.Unavailable).saying(`(servers tried: "primary.test:443"): ADS stream failed before any response`)), wantChannels(secondary, 0, 0)})},
		{"a single server: nowhere to fall back to; watchers hear its failure",
			setup{servers: []string{primary}}, concat(falling, []step{noSwitch(), wantNote(failed("c1", codes.Unavailable))})},
		{"a fallback server whose channel cannot be made is skipped",
			setup{}, concat([]step{refuseDials(secondary)}, falling, []step{wantSwitch(third, 2), wantLog("unusable"),
				accept(third), wantRequest(third, "c1")})},
		{"every server fails: the last one's failure reaches the watchers, naming every server tried",
			setup{}, concat(falling, []step{wantSwitch(secondary, 1), refuse(secondary), wantFailure(secondary),
				wantSwitch(third, 2), refuse(third), wantFailure(third), noSwitch(),
				wantNote(failed("c1", codes.Unavailable).saying(`servers tried: "primary.test:443", "secondary.test:443", "third.test:443"`))})},
		{"the last watch cancelled: the authority lets its servers go, their channels closed",
			setup{}, concat(fellBack, []step{cancelWatch("c1"), wantSwitch("", -1),
				wantChannels(primary, 1, 0), wantChannels(secondary, 1, 0)})},
	} {
		t.Run(tc.row, func(t *testing.T) {
			r := newRig(t, tc.setup)
			for _, s := range tc.steps {
				s(r)
			}
		})
	}
}

// concat joins the steps of a row.
func concat(parts ...[]step) []step {
	var out []step
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}
