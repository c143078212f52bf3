package authority_test

import (
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
)

// gRFC A57's does-not-exist timers as a server runs them: a timer starts
// once the subscription went out on a stream of a channel seen READY, and
// stops when something is received, when the stream ends, when the
// channel leaves READY, and when the authority leaves the server.
func TestResourceTimers(t *testing.T) {
	const (
		startP = "start c1 on " + primary
		stopP  = "stop c1 on " + primary
		startS = "start c1 on " + secondary
	)
	sent := []step{watch("c1"), wantSwitch(primary, 0), wantTimers(), accept(primary), wantRequest(primary, "c1"), wantTimers(startP)}
	for _, tc := range []struct {
		row   string
		setup setup
		steps []step
	}{
		{"no stream yet: no timer; the subscription sent: it starts", setup{}, sent},
		{"a response carries the resource: it stops", setup{},
			concat(sent, []step{serve(primary, "1", "c1"), wantTimers(stopP)})},
		{"a response without the resource: it runs on", setup{},
			concat(sent, []step{serve(primary, "1"), wantTimers()})},
		{"the stream ends: it stops; the next stream's subscription starts it again", setup{servers: []string{primary}},
			concat(sent, []step{endStream(primary), wantTimers(stopP), accept(primary), wantRequest(primary, "c1"), wantTimers(startP)})},
		{"the channel leaves READY: it stops; READY again: it starts for what was sent", setup{},
			concat(sent, []step{setState(primary, connectivity.Connecting), wantTimers(stopP),
				setState(primary, connectivity.Ready), wantTimers(startP)})},
		{"a subscription sent while the channel is not READY: its timer waits for READY", setup{},
			concat(sent, []step{setState(primary, connectivity.Connecting), wantTimers(stopP),
				watch("c2"), wantRequest(primary, "c1", "c2"), wantTimers(),
				setState(primary, connectivity.Ready), wantTimers(startP, "start c2 on "+primary)})},
		{"fallback: it stops on the failed server and starts on the next once sent there", setup{},
			[]step{watch("c1"), wantSwitch(primary, 0), refuse(primary), wantSwitch(secondary, 1), wantTimers(),
				accept(secondary), wantRequest(secondary, "c1"), wantTimers(startS)}},
		{"it fires: the resource does not exist", setup{timeout: 10 * time.Millisecond},
			[]step{watch("c1"), accept(primary), wantRequest(primary, "c1"),
				wantNote(failed("c1", codes.NotFound).saying("does not exist: not received within 10ms of subscribing"))}},
		{"no stream: it never starts, and never fires", setup{timeout: 10 * time.Millisecond},
			[]step{watch("c1"), quiet()}},
	} {
		t.Run(tc.row, func(t *testing.T) {
			r := newRig(t, tc.setup)
			for _, s := range tc.steps {
				s(r)
			}
		})
	}
}

// Over delta, a new stream resumes with the versions held (delta's
// initial_resource_versions), unless the server failed since; a resumed
// stream that ends with nothing to say is no failure, and the next asks
// for everything (gRFC A57 with delta, package health).
func TestDeltaResumption(t *testing.T) {
	served := []step{watch("c1"), accept(primary), wantRequest(primary, "c1"), serve(primary, "1", "c1"), wantNote(resource("c1", primary))}
	for _, tc := range []struct {
		row   string
		steps []step
	}{
		{"a stream after one that had a response: the versions held", concat(served,
			[]step{endStream(primary), accept(primary), wantResumed(primary, map[string]string{"c1": "1"})})},
		{"a stream after a server failure: no versions", concat(served,
			[]step{endStream(primary), refuse(primary), wantFailure(primary), wantNote(ambient("c1", codes.Unavailable)),
				accept(primary), wantResumed(primary, nil)})},
		{"a resumed stream ends quiet: no failure; the next asks for everything, and its silence is one", concat(served,
			[]step{endStream(primary), accept(primary), wantResumed(primary, map[string]string{"c1": "1"}),
				endStream(primary), accept(primary), wantResumed(primary, nil), quiet(),
				endStream(primary), wantFailure(primary), wantNote(ambient("c1", codes.Unavailable))})},
	} {
		t.Run(tc.row, func(t *testing.T) {
			r := newRig(t, setup{delta: true, servers: []string{primary}})
			for _, s := range tc.steps {
				s(r)
			}
		})
	}
}

// Each authority (gRFC A47) has its own servers and falls back alone: the
// failure of one authority's server is not heard by another's watchers.
func TestAuthoritiesApart(t *testing.T) {
	const (
		other = "other.test:443"
		name  = "xdstp://other.test/envoy.config.cluster.v3.Cluster/c9"
	)
	r := newRig(t, setup{servers: []string{primary},
		authorities: `{"other.test": {"xds_servers": [{"server_uri": "` + other + `", "channel_creds": [{"type": "insecure"}]}]}}`})
	for _, s := range []step{
		watch("c1"), wantSwitch(primary, 0), accept(primary), wantRequest(primary, "c1"),
		serve(primary, "1", "c1"), wantNote(resource("c1", primary)),
		watch(name), wantSwitch(other, 0), refuse(other), wantFailure(other),
		wantNote(failed(name, codes.Unavailable).saying(`servers tried: "other.test:443"`)),
		quiet(), wantActive("c1", primary, 0), wantChannels(primary, 1, 1),
	} {
		s(r)
	}
}
