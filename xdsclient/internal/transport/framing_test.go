package transport_test

import (
	"testing"
)

// The requests of a State of the World stream, row by row: what each
// request names, which version and nonce it carries, when the node goes
// out, and what a NACK says (the xDS protocol's ACK/NACK rules, gRFC A46
// for a response partly valid).
func TestSotWRequests(t *testing.T) {
	for _, tc := range []struct {
		row   string
		steps []step
	}{
		{"first request of a type: every name, no version, no nonce, the node", []step{
			sub(cdsURL, "a", "b"), accept(),
			want(sotw{typeURL: cdsURL, names: []string{"a", "b"}, node: true}),
		}},
		{"first requests of a stream in the types' rank, the node in the first only", []step{
			sub(cdsURL, "c"), sub(ldsURL, "l"), accept(),
			want(sotw{typeURL: ldsURL, names: []string{"l"}, node: true}),
			want(sotw{typeURL: cdsURL, names: []string{"c"}}),
		}},
		{"ACK: the response's version and nonce", []step{
			sub(cdsURL, "a"), accept(), want(sotw{typeURL: cdsURL, names: []string{"a"}, node: true}),
			respond(cdsURL, "1", "n1", []string{"a"}),
			want(sotw{typeURL: cdsURL, names: []string{"a"}, version: "1", nonce: "n1"}),
		}},
		{"NACK keeps the last version accepted, with the new nonce", []step{
			sub(cdsURL, "a"), accept(), want(sotw{typeURL: cdsURL, names: []string{"a"}, node: true}),
			respond(cdsURL, "1", "n1", []string{"a"}),
			want(sotw{typeURL: cdsURL, names: []string{"a"}, version: "1", nonce: "n1"}),
			answer(0, "cluster a: bad"), respond(cdsURL, "2", "n2", []string{"a"}),
			want(sotw{typeURL: cdsURL, names: []string{"a"}, version: "1", nonce: "n2", nack: "cluster a: bad"}),
			answer(1, ""), respond(cdsURL, "3", "n3", []string{"a"}),
			want(sotw{typeURL: cdsURL, names: []string{"a"}, version: "3", nonce: "n3"}),
		}},
		{"NACK of the first response: no version accepted yet", []step{
			sub(cdsURL, "a"), accept(), want(sotw{typeURL: cdsURL, names: []string{"a"}, node: true}),
			answer(0, "bad"), respond(cdsURL, "1", "n1", []string{"a"}),
			want(sotw{typeURL: cdsURL, names: []string{"a"}, nonce: "n1", nack: "bad"}),
		}},
		{"NACK of a response with a valid resource accepts its version (gRFC A46)", []step{
			sub(cdsURL, "a", "b"), accept(), want(sotw{typeURL: cdsURL, names: []string{"a", "b"}, node: true}),
			answer(1, "cluster b: bad"), respond(cdsURL, "1", "n1", []string{"a", "b"}),
			want(sotw{typeURL: cdsURL, names: []string{"a", "b"}, version: "1", nonce: "n1", nack: "cluster b: bad"}),
		}},
		{"after a stream restart: every name, the version accepted, no nonce, the node again", []step{
			sub(cdsURL, "a", "b"), accept(), want(sotw{typeURL: cdsURL, names: []string{"a", "b"}, node: true}),
			respond(cdsURL, "1", "n1", []string{"a", "b"}),
			want(sotw{typeURL: cdsURL, names: []string{"a", "b"}, version: "1", nonce: "n1"}),
			endStream(unavailable), accept(),
			want(sotw{typeURL: cdsURL, names: []string{"a", "b"}, version: "1", node: true}),
		}},
		{"after a restart that follows a NACK: the version accepted before it", []step{
			sub(cdsURL, "a"), accept(), want(sotw{typeURL: cdsURL, names: []string{"a"}, node: true}),
			respond(cdsURL, "1", "n1", []string{"a"}), want(sotw{typeURL: cdsURL, names: []string{"a"}, version: "1", nonce: "n1"}),
			answer(0, "bad"), respond(cdsURL, "2", "n2", []string{"a"}),
			want(sotw{typeURL: cdsURL, names: []string{"a"}, version: "1", nonce: "n2", nack: "bad"}),
			endStream(unavailable), accept(),
			want(sotw{typeURL: cdsURL, names: []string{"a"}, version: "1", node: true}),
		}},
		{"a name subscribed on an open stream: every name, with the version and nonce", []step{
			sub(cdsURL, "a"), accept(), want(sotw{typeURL: cdsURL, names: []string{"a"}, node: true}),
			respond(cdsURL, "1", "n1", []string{"a"}), want(sotw{typeURL: cdsURL, names: []string{"a"}, version: "1", nonce: "n1"}),
			sub(cdsURL, "b"),
			want(sotw{typeURL: cdsURL, names: []string{"a", "b"}, version: "1", nonce: "n1"}),
		}},
		{"unsubscribing: the request names the others; the last one leaves an empty request", []step{
			sub(cdsURL, "a", "b"), accept(), want(sotw{typeURL: cdsURL, names: []string{"a", "b"}, node: true}),
			unsub(cdsURL, "a"), want(sotw{typeURL: cdsURL, names: []string{"b"}}),
			unsub(cdsURL, "b"), want(sotw{typeURL: cdsURL, names: []string{}}),
		}},
		{"a type whose names all left before the stream: no request for it", []step{
			sub(cdsURL, "a"), sub(ldsURL, "l"), unsub(ldsURL, "l"), accept(),
			want(sotw{typeURL: cdsURL, names: []string{"a"}, node: true}),
			quiet(),
		}},
		{"a response of a type never subscribed is not acknowledged", []step{
			sub(cdsURL, "a"), accept(), want(sotw{typeURL: cdsURL, names: []string{"a"}, node: true}),
			respond(ldsURL, "1", "n1", nil),
			quiet(),
		}},
		{"the names a request subscribes for the first time on its stream", []step{
			sub(cdsURL, "a"), accept(), wantSending(cdsURL, false, "a"), want(sotw{typeURL: cdsURL, names: []string{"a"}, node: true}),
			sub(cdsURL, "b"), wantSending(cdsURL, false, "b"), want(sotw{typeURL: cdsURL, names: []string{"a", "b"}}),
			endStream(unavailable), accept(), wantSending(cdsURL, false, "a", "b"),
		}},
	} {
		t.Run(tc.row, func(t *testing.T) { run(t, false, tc.steps) })
	}
}

// The requests of an incremental (delta) stream, row by row: the first
// request of a type subscribes every name with the versions held, the
// later ones name what changed, an ACK or NACK is the nonce (and the
// error), and nothing subscribed means no request (never a wildcard).
func TestDeltaRequests(t *testing.T) {
	held := map[string]string{"a": "7", "gone": "1"}
	for _, tc := range []struct {
		row   string
		steps []step
	}{
		{"first request of a type: every name, sorted, the node", []step{
			sub(cdsURL, "b", "a"), accept(),
			wantSending(cdsURL, false, "a", "b"),
			wantDelta(delta{typeURL: cdsURL, sub: []string{"a", "b"}, node: true}),
		}},
		{"first request with versions held: those of the names subscribed, resumed", []step{
			versionsHeld(cdsURL, held), sub(cdsURL, "a", "b"), accept(),
			wantSending(cdsURL, true, "a", "b"),
			wantDelta(delta{typeURL: cdsURL, sub: []string{"a", "b"}, versions: map[string]string{"a": "7"}, node: true}),
		}},
		{"ACK: the nonce alone", []step{
			sub(cdsURL, "a"), accept(), wantDelta(delta{typeURL: cdsURL, sub: []string{"a"}, node: true}),
			respond(cdsURL, "1", "n1", []string{"a"}),
			wantDelta(delta{typeURL: cdsURL, nonce: "n1"}),
		}},
		{"NACK: the nonce and the error", []step{
			sub(cdsURL, "a"), accept(), wantDelta(delta{typeURL: cdsURL, sub: []string{"a"}, node: true}),
			answer(0, "cluster a: bad"), respond(cdsURL, "1", "n1", []string{"a"}),
			wantDelta(delta{typeURL: cdsURL, nonce: "n1", nack: "cluster a: bad"}),
		}},
		{"later requests name only what changed", []step{
			sub(cdsURL, "a"), accept(), wantDelta(delta{typeURL: cdsURL, sub: []string{"a"}, node: true}),
			sub(cdsURL, "b"), wantDelta(delta{typeURL: cdsURL, sub: []string{"b"}}),
			unsub(cdsURL, "a"), wantDelta(delta{typeURL: cdsURL, unsub: []string{"a"}}),
		}},
		{"after a stream restart: every name again, with the versions held, the node again", []step{
			sub(cdsURL, "a", "b"), accept(), wantDelta(delta{typeURL: cdsURL, sub: []string{"a", "b"}, node: true}),
			respond(cdsURL, "7", "n1", []string{"a"}), wantDelta(delta{typeURL: cdsURL, nonce: "n1"}),
			versionsHeld(cdsURL, map[string]string{"a": "7"}),
			endStream(unavailable), accept(),
			wantDelta(delta{typeURL: cdsURL, sub: []string{"a", "b"}, versions: map[string]string{"a": "7"}, node: true}),
		}},
		{"a type with nothing subscribed on a new stream: no request (no wildcard)", []step{
			sub(cdsURL, "a"), sub(ldsURL, "l"), unsub(ldsURL, "l"), accept(),
			wantDelta(delta{typeURL: cdsURL, sub: []string{"a"}, node: true}),
			quiet(),
		}},
		{"unsubscribed, then subscribed again: the unsubscription first, then the subscription", []step{
			sub(cdsURL, "a"), accept(), wantDelta(delta{typeURL: cdsURL, sub: []string{"a"}, node: true}),
			unsub(cdsURL, "a"), sub(cdsURL, "a"),
			wantDelta(delta{typeURL: cdsURL, unsub: []string{"a"}}),
			wantDelta(delta{typeURL: cdsURL, sub: []string{"a"}}),
		}},
		{"a name unsubscribed before it went out on the stream is not unsubscribed", []step{
			sub(cdsURL, "a"), accept(), wantDelta(delta{typeURL: cdsURL, sub: []string{"a"}, node: true}),
			endStream(unavailable), sub(cdsURL, "b"), unsub(cdsURL, "b"), accept(),
			wantDelta(delta{typeURL: cdsURL, sub: []string{"a"}, node: true}),
			quiet(),
		}},
		{"a response of a type never subscribed is not acknowledged", []step{
			sub(cdsURL, "a"), accept(), wantDelta(delta{typeURL: cdsURL, sub: []string{"a"}, node: true}),
			respond(ldsURL, "1", "n1", nil),
			quiet(),
		}},
	} {
		t.Run(tc.row, func(t *testing.T) { run(t, true, tc.steps) })
	}
}
