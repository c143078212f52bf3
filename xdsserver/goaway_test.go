package xdsserver_test

import (
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/xdslens/xdslens/internal/testing/h2test"
	"github.com/xdslens/xdslens/internal/testing/servertest"
	"github.com/xdslens/xdslens/internal/testing/xdstest"
	"github.com/xdslens/xdslens/internal/xdswatch/demo/serverres"
	"github.com/xdslens/xdslens/xdsserver"
)

// A drained connection's client that opens a stream after the final
// GOAWAY (once it acknowledged the PING sent with the first, or when it
// let the GOAWAY timeout pass) has its connection closed before gRPC
// reads that stream: no RPC starts under the chain the Listener no longer
// has. A stream it opened before reading the GOAWAY is served.
func TestGoAwayIgnored(t *testing.T) {
	for _, tc := range []struct {
		name   string
		ack    bool // the client acknowledges the PING
		racing bool // the client opens a stream before reading the GOAWAY
	}{
		{name: "after the acknowledgement", ack: true},
		{name: "after the timeout", ack: false},
		{name: "a stream opened before the GOAWAY was read", ack: true, racing: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := servertest.NewEnv(t, servertest.Options{})
			var log syncLog
			s := serve(t, env.Pool(), xdsserver.WithGoAwayTimeout(50*time.Millisecond), xdsserver.WithLogger(slog.New(slog.NewTextHandler(&log, nil))))
			env.Set(serverres.Listener(s.name(), s.host, s.port, nil, plainChain("c1", nil, false)))
			waitMode(t, s, xdsserver.ModeServing, "")
			c := h2test.Dial(t, s.addr)
			c.Call(1, emptyCall)
			c.Want("stream 1 served", true, h2test.ServedOn(1))

			// The chain changes (an RBAC filter): the connection is drained.
			env.Set(serverres.Listener(s.name(), s.host, s.port, nil, plainChain("c1", nil, true)))
			c.Want("the first GOAWAY", false, h2test.GoAwayWith(1<<31-1))
			last := uint32(1)
			if tc.racing {
				c.Call(3, emptyCall) // before the PING is read
				last = 3
			}
			c.Want("the PING", tc.ack, h2test.PingWith("xdsdrain"))
			// The final GOAWAY, and the racing stream's trailers, in any
			// order.
			for final, served := false, !tc.racing; !final || !served; {
				switch e := c.Next(tc.ack); {
				case h2test.GoAwayWith(last)(e):
					final = true
				case !served && h2test.ServedOn(3)(e):
					served = true
				case e.Err != nil || e.Stream != 0:
					t.Fatalf("waiting for the final GOAWAY: got %+v", e)
				}
			}
			c.Call(last+2, emptyCall)
			e := c.Want("the connection closed", tc.ack, h2test.Closed)
			t.Logf("the connection ended: %v", e.Err)
			s.ev.wait(t, "the connection closed", func(e *events) bool { return len(e.closed) == 1 })
			s.ev.mu.Lock()
			ignored := slices.Clone(s.ev.ignored)
			s.ev.mu.Unlock()
			if len(ignored) != 1 || ignored[0].Chain != "c1" {
				t.Errorf("GoAwayIgnored reported %+v, want once, for the connection of chain c1", ignored)
			}
			if !strings.Contains(log.String(), "opened a stream after the final GOAWAY") {
				t.Errorf("log %q, want a warning for the client that broke the GOAWAY", log.String())
			}
		})
	}
}

// syncLog is a log output that tests read while the server writes it.
type syncLog = xdstest.SyncBuffer
