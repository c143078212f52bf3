package xdsserver

import (
	"encoding/binary"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// frameConn is the conn gRPC reads and writes HTTP/2 frames on. It follows
// the frames both ways so that a drained connection can be told to go away
// as gRPC C-core does it, though grpc-go's public server API has no way
// to drain one connection: a graceful shutdown in two phases.
//
//  1. Between two of gRPC's frames, a GOAWAY whose last stream ID is the
//     largest (the client starts no new stream; the RPCs it has, and those
//     it started before reading the GOAWAY, are served under the old
//     chain), and a PING.
//  2. Once the client acknowledges that PING, which it sends after reading
//     the GOAWAY, or after the GOAWAY timeout if it does not: a second
//     GOAWAY naming the last stream the client had opened. A stream the
//     client opens after that broke the GOAWAY (RFC 9113, 6.8); grpc-go
//     would serve it, under a chain that is no longer the Listener's, so
//     the connection is closed before gRPC reads that stream's headers.
type frameConn struct {
	net.Conn // the handshake's conn (TLS, or the accepted one)

	// timeout is how long phase 1 waits for the PING's acknowledgement;
	// onBroken is called once when the client opens a stream after phase
	// 2.
	timeout  time.Duration
	onBroken func()

	// want is the phase wanted, written the phase written (drainPhase
	// values): set first, then written between two frames.
	want, written atomic.Uint32

	mu    sync.Mutex // held while writing
	out   frameTracker
	timer *time.Timer // phase 1's wait for the acknowledgement

	rmu sync.Mutex // held while a read is looked at
	in  readTracker
	// broken is set once the client opened a stream after phase 2: reads
	// fail from then on.
	broken bool
}

// drainPhase is how far a connection's graceful shutdown went.
type drainPhase uint8

const (
	phaseNone drainPhase = iota
	phase1               // GOAWAY with the largest stream ID, and a PING
	phase2               // GOAWAY with the last stream ID the client opened
)

// DefaultGoAwayTimeout is how long a drained connection's client has to
// acknowledge the PING sent with the first GOAWAY before the server takes
// no new stream on it, as in gRPC C-core (20 seconds).
const DefaultGoAwayTimeout = 20 * time.Second

// errGoAwayBroken ends the reads of a connection whose client opened a
// stream after the final GOAWAY.
var errGoAwayBroken = errors.New("xdsserver: the client opened a stream after the final GOAWAY of a drained connection")

// newFrameConn follows the frames of conn, the handshake's conn.
func newFrameConn(conn net.Conn, timeout time.Duration, onBroken func()) *frameConn {
	return &frameConn{Conn: conn, timeout: timeout, onBroken: onBroken, in: readTracker{preface: len(clientPreface)}}
}

// drain starts the graceful shutdown: phase 1 is written now, or by the
// write that ends the frame gRPC is writing.
func (f *frameConn) drain() { f.advance(phase1) }

// advance wants phase p written, once every phase before it is.
func (f *frameConn) advance(p drainPhase) {
	for {
		w := f.want.Load()
		if w >= uint32(p) || f.want.CompareAndSwap(w, uint32(p)) {
			break
		}
	}
	f.flush()
}

func (f *frameConn) Write(p []byte) (int, error) {
	f.mu.Lock()
	n, err := f.Conn.Write(p)
	f.out.consume(p[:n])
	f.writeGoAwayLocked()
	f.mu.Unlock()
	// A phase wanted while the lock was held is written now, if the
	// writes end on a frame boundary.
	f.flush()
	return n, err
}

// flush writes the GOAWAY wanted when the writes so far end on a frame
// boundary; otherwise the write that ends the frame will. Whoever holds
// the lock when a phase is wanted looks again once it lets go: a Write,
// or a flush, which writes phase 1 and then finds phase 2 wanted while it
// wrote (the PING acknowledged, or its timer fired, meanwhile).
func (f *frameConn) flush() {
	for f.written.Load() < f.want.Load() {
		if !f.mu.TryLock() {
			return // the holder of the lock looks again when it is done
		}
		wrote := f.writeGoAwayLocked()
		f.mu.Unlock()
		if !wrote {
			return // within a frame: the write that ends it writes the GOAWAY
		}
	}
}

// writeGoAwayLocked writes the phases wanted and not yet written. It
// returns false when one is wanted but gRPC's writes stopped within a
// frame.
func (f *frameConn) writeGoAwayLocked() bool {
	want, written := drainPhase(f.want.Load()), drainPhase(f.written.Load())
	if written >= want {
		return true
	}
	if !f.out.atBoundary() {
		return false
	}
	var b []byte
	if written < phase1 {
		b = append(goAwayFrame(1<<31-1), drainPing...)
		f.timer = time.AfterFunc(f.timeout, f.enterPhase2)
	}
	if want == phase2 {
		f.rmu.Lock()
		last := f.in.last
		f.rmu.Unlock()
		b = append(b, goAwayFrame(last)...)
		f.timer.Stop()
	}
	f.written.Store(uint32(want))
	f.Conn.Write(b) //nolint:errcheck // a failed write is a failed connection, which gRPC sees on its next write
	return true
}

// enterPhase2 ends phase 1 when the client did not acknowledge its PING
// in time: the last stream is the one it opened last.
func (f *frameConn) enterPhase2() {
	f.rmu.Lock()
	f.in.enterPhase2()
	f.rmu.Unlock()
	f.advance(phase2)
}

// stop stops phase 1's timer; the connection is closing.
func (f *frameConn) stop() {
	f.mu.Lock()
	if f.timer != nil {
		f.timer.Stop()
	}
	f.mu.Unlock()
}

func (f *frameConn) Close() error {
	f.stop()
	return f.Conn.Close()
}

// Read reads what gRPC reads, and looks at its frames: a stream opened
// after phase 2 is not handed to gRPC, and the connection fails.
func (f *frameConn) Read(p []byte) (int, error) {
	f.rmu.Lock()
	broken := f.broken
	f.rmu.Unlock()
	if broken {
		return 0, errGoAwayBroken
	}
	n, err := f.Conn.Read(p)
	f.rmu.Lock()
	keep, acked := f.in.consume(p[:n], f.written.Load() >= uint32(phase1))
	f.broken = keep < n
	broken = f.broken
	f.rmu.Unlock()
	if acked {
		f.advance(phase2)
	}
	switch {
	case !broken:
		return n, err
	case keep == 0:
		f.onBroken()
		return 0, errGoAwayBroken
	}
	f.onBroken()
	return keep, nil
}

// clientPreface starts every HTTP/2 connection a client opens (RFC 9113,
// 3.4), before its first frame.
const clientPreface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"

// HTTP/2 frame types and flags (RFC 9113, 6).
const (
	frameHeaders = 0x1
	framePing    = 0x6
	flagAck      = 0x1
)

// drainPing is the PING of phase 1, whose acknowledgement says that the
// client has read the GOAWAY before it.
var drainPing = func() []byte {
	b := make([]byte, 9+8)
	b[2] = 8
	b[3] = framePing
	copy(b[9:], drainPingData)
	return b
}()

const drainPingData = "xdsdrain"

// goAwayFrame is an HTTP/2 GOAWAY (RFC 9113, 6.8), NO_ERROR, naming last as
// the last stream ID the server may act on.
func goAwayFrame(last uint32) []byte {
	debug := []byte("xds: server configuration changed")
	b := make([]byte, 9+8+len(debug))
	n := 8 + len(debug)
	b[0], b[1], b[2] = byte(n>>16), byte(n>>8), byte(n)
	b[3] = 0x7 // GOAWAY; flags 0, stream 0
	binary.BigEndian.PutUint32(b[9:], last)
	binary.BigEndian.PutUint32(b[13:], 0) // NO_ERROR
	copy(b[17:], debug)
	return b
}

// frameTracker follows the HTTP/2 frames of a byte stream: the 9-byte
// header of each, then its payload.
type frameTracker struct {
	header  [9]byte
	nHeader int // bytes of the current header seen
	payload int // payload bytes still to come
}

func (t *frameTracker) consume(p []byte) {
	for len(p) > 0 {
		if t.payload > 0 {
			n := min(t.payload, len(p))
			t.payload -= n
			p = p[n:]
			continue
		}
		n := copy(t.header[t.nHeader:], p)
		t.nHeader += n
		p = p[n:]
		if t.nHeader == len(t.header) {
			t.payload = int(t.header[0])<<16 | int(t.header[1])<<8 | int(t.header[2])
			t.nHeader = 0
		}
	}
}

func (t *frameTracker) atBoundary() bool { return t.nHeader == 0 && t.payload == 0 }

// readTracker follows the frames a client sends: the streams it opens and
// the acknowledgement of phase 1's PING.
type readTracker struct {
	preface   int // bytes of the client preface still to come
	header    [9]byte
	nHeader   int    // bytes of the current frame's header seen
	payload   int    // bytes of its payload still to come
	ping      []byte // the payload of a PING acknowledgement, as it comes
	isAck     bool   // the current frame acknowledges a PING
	maxStream uint32 // the largest stream a HEADERS frame opened
	// phase2 is set once the client may open no more stream: last is then
	// the last stream it opened.
	phase2 bool
	last   uint32
}

func (t *readTracker) enterPhase2() {
	if !t.phase2 {
		t.phase2, t.last = true, t.maxStream
	}
}

// consume follows p, read from the client; pinged says whether phase 1's
// PING was sent. It returns how many bytes of p gRPC may read: fewer than
// len(p) when a frame in p opens a stream after phase 2, those before
// that frame's header. acked reports that p acknowledged the PING, which
// starts phase 2 at once: a frame after the acknowledgement in p is
// looked at in phase 2.
func (t *readTracker) consume(p []byte, pinged bool) (keep int, acked bool) {
	off := 0
	for off < len(p) {
		switch {
		case t.preface > 0:
			n := min(t.preface, len(p)-off)
			t.preface -= n
			off += n
		case t.payload > 0:
			n := min(t.payload, len(p)-off)
			if t.isAck {
				t.ping = append(t.ping, p[off:off+n]...)
			}
			t.payload -= n
			off += n
			if t.payload == 0 && t.isAck {
				if pinged && string(t.ping) == drainPingData && !t.phase2 {
					acked = true
					t.enterPhase2()
				}
				t.isAck, t.ping = false, t.ping[:0]
			}
		default:
			start := off - t.nHeader // where the frame began, < 0 in an earlier read
			n := copy(t.header[t.nHeader:], p[off:])
			t.nHeader += n
			off += n
			if t.nHeader < len(t.header) {
				continue
			}
			t.nHeader = 0
			h := t.header
			t.payload = int(h[0])<<16 | int(h[1])<<8 | int(h[2])
			stream := binary.BigEndian.Uint32(h[5:]) &^ (1 << 31)
			switch {
			case h[3] == frameHeaders && stream > t.maxStream:
				if t.phase2 {
					return max(start, 0), acked
				}
				t.maxStream = stream
			case h[3] == framePing && h[4]&flagAck != 0 && stream == 0 && t.payload == len(drainPingData):
				t.isAck = true
			}
		}
	}
	return len(p), acked
}
