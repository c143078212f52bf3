// Package h2test is a raw HTTP/2 client for tests of gRPC servers: it
// speaks frame by frame, as a client that does not keep the rules would,
// one that opens a stream after the server's final GOAWAY in particular.
//
// A test dials a server with [Dial] (or speaks on a connection of its
// own, TLS for one, with [New]), opens streams with [Client.Call]
// (a unary call with an empty message) or [Client.Open] (a stream whose
// request is not ended, ended later by [Client.End]), sends its own PINGs
// with [Client.Ping], and reads what the server sends with [Client.Next]
// or [Client.Want]:
//
//	c := h2test.Dial(t, addr)
//	c.Call(1, "/grpc.testing.TestService/EmptyCall")
//	c.Want("stream 1 served", true, h2test.ServedOn(1))
//	c.Want("a GOAWAY", false, h2test.GoAwayWith(1<<31-1))
//
// A read that waits longer than [xdstest.Timeout] fails the test: the end
// of the connection is the server's doing, never a timeout. The client speaks plaintext
// HTTP/2 (h2c) over TCP from Dial; it fails the test on a write error.
package h2test

import (
	"bytes"
	"net"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/xdslens/xdslens/internal/testing/xdstest"
)

// Client is one HTTP/2 connection to a server, read and written by one
// test goroutine.
type Client struct {
	t    testing.TB
	conn net.Conn
	fr   *http2.Framer
	enc  *hpack.Encoder
	buf  bytes.Buffer
	dec  *hpack.Decoder
}

// Dial connects to addr, sends the client preface and an empty SETTINGS
// frame. The connection closes when the test ends.
func Dial(t testing.TB, addr string) *Client {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatalf("h2test: dial %s: %v", addr, err)
	}
	return New(t, conn)
}

// New speaks HTTP/2 on conn, a connection made by the test (a TLS one
// whose ALPN chose "h2", say): it sends the client preface and an empty
// SETTINGS frame. The connection closes when the test ends.
func New(t testing.TB, conn net.Conn) *Client {
	t.Helper()
	addr := conn.RemoteAddr().String()
	t.Cleanup(func() { conn.Close() })
	c := &Client{t: t, conn: conn, fr: http2.NewFramer(conn, conn)}
	c.enc = hpack.NewEncoder(&c.buf)
	c.dec = hpack.NewDecoder(4096, nil)
	c.fr.ReadMetaHeaders = c.dec
	if _, err := conn.Write([]byte(http2.ClientPreface)); err != nil {
		t.Fatalf("h2test: client preface to %s: %v", addr, err)
	}
	if err := c.fr.WriteSettings(); err != nil {
		t.Fatalf("h2test: SETTINGS to %s: %v", addr, err)
	}
	return c
}

// Call starts a unary call of method on stream id: its headers, then an
// empty message that ends the request.
func (c *Client) Call(id uint32, method string) {
	c.t.Helper()
	c.Open(id, method)
	c.End(id)
}

// Open starts a call of method on stream id: its headers alone. The
// request goes on until End.
func (c *Client) Open(id uint32, method string) {
	c.t.Helper()
	c.buf.Reset()
	for _, f := range [][2]string{{":method", "POST"}, {":scheme", "http"}, {":path", method}, {":authority", "h2test"}, {"content-type", "application/grpc"}, {"te", "trailers"}} {
		c.enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]}) //nolint:errcheck // writes to a buffer
	}
	if err := c.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: c.buf.Bytes(), EndHeaders: true}); err != nil {
		c.t.Fatalf("h2test: HEADERS of stream %d: %v", id, err)
	}
}

// End ends the request of stream id with an empty message: the server
// reads one message, then the request's end.
func (c *Client) End(id uint32) {
	c.t.Helper()
	if err := c.fr.WriteData(id, true, []byte{0, 0, 0, 0, 0}); err != nil {
		c.t.Fatalf("h2test: DATA of stream %d: %v", id, err)
	}
}

// Ping sends a PING with data; the server's acknowledgement is an Event
// with PingAck set.
func (c *Client) Ping(data [8]byte) {
	c.t.Helper()
	if err := c.fr.WritePing(false, data); err != nil {
		c.t.Fatalf("h2test: PING: %v", err)
	}
}

// Event is what the client read that a test looks at; one field is set.
type Event struct {
	// GoAway is a GOAWAY's last stream ID.
	GoAway *uint32
	// Ping is the data of the server's PING, not an acknowledgement;
	// PingAck that of an acknowledgement of the client's PING.
	Ping, PingAck string
	// Stream is the stream whose trailers came, with GRPCCode their
	// grpc-status; or the stream the server reset, with Reset true.
	Stream   uint32
	GRPCCode string
	Reset    bool
	// Err says that the connection ended.
	Err error
}

// Next reads frames until one a test looks at; it acknowledges the
// server's SETTINGS, and its PINGs when ackPings is true. It fails the
// test when nothing comes within xdstest.Timeout.
func (c *Client) Next(ackPings bool) Event {
	c.t.Helper()
	c.conn.SetReadDeadline(time.Now().Add(xdstest.Timeout)) //nolint:errcheck // a deadline on a live conn
	for {
		f, err := c.fr.ReadFrame()
		if ne, ok := err.(net.Error); ok && ne.Timeout() {
			c.t.Fatalf("h2test: nothing from the server in %v", xdstest.Timeout)
		}
		if err != nil {
			return Event{Err: err}
		}
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if !f.IsAck() {
				c.fr.WriteSettingsAck() //nolint:errcheck // a failed write shows in the next read
			}
		case *http2.PingFrame:
			if f.IsAck() {
				return Event{PingAck: string(f.Data[:])}
			}
			if ackPings {
				c.fr.WritePing(true, f.Data) //nolint:errcheck // as above
			}
			return Event{Ping: string(f.Data[:])}
		case *http2.GoAwayFrame:
			last := f.LastStreamID
			return Event{GoAway: &last}
		case *http2.RSTStreamFrame:
			return Event{Stream: f.StreamID, Reset: true}
		case *http2.MetaHeadersFrame:
			if v := f.PseudoValue("status"); v == "" || f.StreamEnded() {
				for _, h := range f.Fields {
					if h.Name == "grpc-status" {
						return Event{Stream: f.StreamID, GRPCCode: h.Value}
					}
				}
			}
		}
	}
}

// Want reads events until one that cond accepts, and fails the test at a
// stream's end or the connection's that cond does not accept.
func (c *Client) Want(what string, ackPings bool, cond func(Event) bool) Event {
	c.t.Helper()
	for {
		e := c.Next(ackPings)
		if cond(e) {
			return e
		}
		if e.Err != nil || e.Stream != 0 {
			c.t.Fatalf("h2test: waiting for %s: got %+v", what, e)
		}
	}
}

// GoAwayWith accepts a GOAWAY whose last stream ID is last.
func GoAwayWith(last uint32) func(Event) bool {
	return func(e Event) bool { return e.GoAway != nil && *e.GoAway == last }
}

// ServedOn accepts the trailers of stream id with grpc-status 0.
func ServedOn(id uint32) func(Event) bool {
	return func(e Event) bool { return e.Stream == id && !e.Reset && e.GRPCCode == "0" }
}

// PingAcked accepts the acknowledgement of the client's PING with data.
func PingAcked(data [8]byte) func(Event) bool {
	return func(e Event) bool { return e.PingAck == string(data[:]) }
}

// Closed accepts the end of the connection.
func Closed(e Event) bool { return e.Err != nil }

// PingWith accepts the server's PING with data.
func PingWith(data string) func(Event) bool {
	return func(e Event) bool { return e.Ping == data }
}
