package compare_test

import (
	"testing"
	"time"

	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"

	"github.com/xdslens/xdslens/internal/testing/h2test"
	"github.com/xdslens/xdslens/internal/testing/servertest"
	"github.com/xdslens/xdslens/internal/testing/xdstest"
	"github.com/xdslens/xdslens/internal/xdswatch/demo/serverres"
	"github.com/xdslens/xdslens/xdsserver"
)

const streamingInputCall = "/grpc.testing.TestService/StreamingInputCall"

// drainPings are the data of the PING each server sends with its first
// GOAWAY, xdslens's first.
var drainPings = [2]string{"xdsdrain", "\x01\x06\x01\x08\x00\x03\x03\x09"}

// A connection drained by a Listener change, on both servers, whose
// client ignores the GOAWAYs. Both drain in two phases: a GOAWAY with the
// largest stream ID and a PING, then, once the client acknowledges the
// PING, a final GOAWAY naming the last stream the client opened. A stream
// opened between the two (stream 5) is served on both, and so is a
// stream that was open before the drain (stream 3), while the
// connection lives.
//
// A deliberate difference: the stream the client opens after the final
// GOAWAY (stream 7). grpc-go (internal/transport's operateHeaders in
// v1.85) reads it and drops it without a word, no answer and no
// RST_STREAM, and serves the streams still open; the connection ends
// when they are done. gRPC C-core skips such a stream likewise. xdslens,
// which sees the connection's bytes below grpc-go's transport and cannot
// drop one stream there, closes the connection before grpc-go reads the
// stream's headers, cutting the streams still open (stream 3), and
// reports it through its GoAwayIgnored hook. No RPC starts on either
// under the chain the Listener no longer has.
func TestSideBySideGoAwayIgnored(t *testing.T) {
	t.Parallel()
	ignored := make(chan xdsserver.ConnInfo, 2)
	hooks := &xdsserver.Hooks{GoAwayIgnored: func(c xdsserver.ConnInfo) { ignored <- c }}
	p := newServedPairWith(t, servertest.Options{}, serverOptions{ours: []xdsserver.Option{xdsserver.WithHooks(hooks)}})
	listener := func(routes string) listenerFunc {
		return func(_ int, name, addr string) *listenerv3.Listener {
			host, port := servertest.HostPort(t, addr)
			return serverres.Listener(name, host, port, nil,
				serverres.Chain("plain", nil, serverres.InlineHCM(serverres.Routes(routes, serverres.Serve("/"))), nil))
		}
	}
	p.set(listener("r1"))
	p.waitModes(t, "SERVING", xdstest.Timeout)
	var clients [2]*h2test.Client
	for side := range clients {
		c := h2test.Dial(t, p.addrs[side])
		c.Call(1, emptyCall)
		c.Want(sideNames[side]+": stream 1 served", true, h2test.ServedOn(1))
		c.Open(3, streamingInputCall) // its request goes on until End(3)
		clients[side] = c
	}

	// The route configuration changes: the connections are drained. The
	// steps go side by side, for grpc-go's final GOAWAY comes 5s after
	// the first without an acknowledgement.
	p.set(listener("r2"))
	for side, c := range clients {
		c.Want(sideNames[side]+": the first GOAWAY", false, h2test.GoAwayWith(1<<31-1))
	}
	for _, c := range clients {
		c.Call(5, emptyCall) // between the first GOAWAY and the final one
	}
	for side, c := range clients {
		c.Want(sideNames[side]+": the PING", true, h2test.PingWith(drainPings[side]))
	}
	for side, c := range clients {
		for final, served := false, false; !final || !served; {
			switch e := c.Next(true); {
			case h2test.GoAwayWith(5)(e):
				final = true
			case !served && h2test.ServedOn(5)(e):
				served = true
			case e.Err != nil || e.Stream != 0:
				t.Fatalf("%s: waiting for the final GOAWAY (last stream 5) and stream 5 served: got %+v", sideNames[side], e)
			}
		}
	}

	// The client ignores the final GOAWAY.
	for _, c := range clients {
		c.Call(7, emptyCall)
	}
	// xdslens: the connection closes, stream 3 unanswered.
	clients[ours].Want("xdslens: the connection closed", true, h2test.Closed)
	select {
	case c := <-ignored:
		if c.Chain != "plain" || c.Address != p.addrs[ours] {
			t.Errorf("xdslens's GoAwayIgnored reported %+v, want the connection of chain plain on %s", c, p.addrs[ours])
		}
	case <-time.After(xdstest.Timeout):
		t.Fatal("xdslens's GoAwayIgnored was not called")
	}
	// grpc-go: stream 7 dropped; a PING of the client's is acknowledged
	// with no word of it, and stream 3 is served when its request ends.
	probe := [8]byte{'p', 'r', 'o', 'b', 'e'}
	clients[theirs].Ping(probe)
	clients[theirs].Want("grpc-go: the client's PING acknowledged, stream 7 unanswered", true, h2test.PingAcked(probe))
	clients[theirs].End(3)
	clients[theirs].Want("grpc-go: stream 3 served", true, h2test.ServedOn(3))
	clients[theirs].Want("grpc-go: the connection closed once stream 3 is done", true, h2test.Closed)

	if len(ignored) != 0 {
		t.Errorf("xdslens's GoAwayIgnored called again: %+v", <-ignored)
	}
}
