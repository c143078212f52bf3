package xdsserver_test

import (
	"bytes"
	"log/slog"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/xdslens/xdslens/internal/testing/servertest"
	"github.com/xdslens/xdslens/internal/testing/xdstest"
	"github.com/xdslens/xdslens/internal/xdswatch/demo/serverres"
	"github.com/xdslens/xdslens/xdsserver"
)

// rawClient speaks HTTP/2 to a server frame by frame, as a client that
// does not keep the rules (one that ignores a GOAWAY) would.
type rawClient struct {
	t    *testing.T
	conn net.Conn
	fr   *http2.Framer
	enc  *hpack.Encoder
	buf  bytes.Buffer
	dec  *hpack.Decoder
}

func dialRaw(t *testing.T, addr string) *rawClient {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	c := &rawClient{t: t, conn: conn, fr: http2.NewFramer(conn, conn)}
	c.enc = hpack.NewEncoder(&c.buf)
	c.dec = hpack.NewDecoder(4096, nil)
	c.fr.ReadMetaHeaders = c.dec
	if _, err := conn.Write([]byte(http2.ClientPreface)); err != nil {
		t.Fatal(err)
	}
	if err := c.fr.WriteSettings(); err != nil {
		t.Fatal(err)
	}
	return c
}

// call starts a unary EmptyCall on stream id.
func (c *rawClient) call(id uint32) {
	c.t.Helper()
	c.buf.Reset()
	for _, f := range [][2]string{{":method", "POST"}, {":scheme", "http"}, {":path", emptyCall}, {":authority", "x"}, {"content-type", "application/grpc"}, {"te", "trailers"}} {
		c.enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]}) //nolint:errcheck // writes to a buffer
	}
	if err := c.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: c.buf.Bytes(), EndHeaders: true}); err != nil {
		c.t.Fatal(err)
	}
	if err := c.fr.WriteData(id, true, []byte{0, 0, 0, 0, 0}); err != nil { // an empty message
		c.t.Fatal(err)
	}
}

// event is what the client read that the tests look at.
type event struct {
	goAway   *uint32 // a GOAWAY's last stream ID
	ping     string  // a PING's data, not an acknowledgement
	stream   uint32  // the stream of trailers, with their grpc-status
	grpcCode string
	err      error // the connection ended
}

// next reads frames until one the tests look at; it acknowledges the
// server's SETTINGS, and its PINGs when ackPings is true.
func (c *rawClient) next(ackPings bool) event {
	c.t.Helper()
	c.conn.SetReadDeadline(time.Now().Add(xdstest.Timeout)) //nolint:errcheck // a deadline on a live conn
	for {
		f, err := c.fr.ReadFrame()
		if err != nil {
			return event{err: err}
		}
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if !f.IsAck() {
				c.fr.WriteSettingsAck() //nolint:errcheck // a failed write shows in the next read
			}
		case *http2.PingFrame:
			if f.IsAck() {
				continue
			}
			if ackPings {
				c.fr.WritePing(true, f.Data) //nolint:errcheck // as above
			}
			return event{ping: string(f.Data[:])}
		case *http2.GoAwayFrame:
			last := f.LastStreamID
			return event{goAway: &last}
		case *http2.MetaHeadersFrame:
			if v := f.PseudoValue("status"); v == "" || f.StreamEnded() {
				for _, h := range f.Fields {
					if h.Name == "grpc-status" {
						return event{stream: f.StreamID, grpcCode: h.Value}
					}
				}
			}
		}
	}
}

// want reads until an event that cond accepts, failing at a stream's
// trailers or the end of the connection it does not accept.
func (c *rawClient) want(what string, ackPings bool, cond func(event) bool) event {
	c.t.Helper()
	for {
		e := c.next(ackPings)
		if cond(e) {
			return e
		}
		if e.err != nil || e.stream != 0 {
			c.t.Fatalf("waiting for %s: got %+v", what, e)
		}
	}
}

func goAwayWith(last uint32) func(event) bool {
	return func(e event) bool { return e.goAway != nil && *e.goAway == last }
}

func servedOn(id uint32) func(event) bool {
	return func(e event) bool { return e.stream == id && e.grpcCode == "0" }
}

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
			c := dialRaw(t, s.addr)
			c.call(1)
			c.want("stream 1 served", true, servedOn(1))

			// The chain changes (an RBAC filter): the connection is drained.
			env.Set(serverres.Listener(s.name(), s.host, s.port, nil, plainChain("c1", nil, true)))
			c.want("the first GOAWAY", false, goAwayWith(1<<31-1))
			last := uint32(1)
			if tc.racing {
				c.call(3) // before the PING is read
				last = 3
			}
			c.want("the PING", tc.ack, func(e event) bool { return e.ping == "xdsdrain" })
			// The final GOAWAY, and the racing stream's trailers, in any
			// order.
			for final, served := false, !tc.racing; !final || !served; {
				switch e := c.next(tc.ack); {
				case goAwayWith(last)(e):
					final = true
				case !served && servedOn(3)(e):
					served = true
				case e.err != nil || e.stream != 0:
					t.Fatalf("waiting for the final GOAWAY: got %+v", e)
				}
			}
			c.call(last + 2)
			e := c.want("the connection closed", tc.ack, func(e event) bool { return e.err != nil })
			t.Logf("the connection ended: %v", e.err)
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
