package xdsserver

import (
	"bytes"
	"encoding/binary"
	"io"
	"net"
	"testing"
	"time"

	"github.com/xdslens/xdslens/internal/testing/xdstest"
)

// frame is an HTTP/2 frame of type typ with flags, on stream, carrying
// payload.
func frame(typ, flags byte, stream uint32, payload string) []byte {
	b := make([]byte, 9, 9+len(payload))
	b[0], b[1], b[2] = byte(len(payload)>>16), byte(len(payload)>>8), byte(len(payload))
	b[3], b[4] = typ, flags
	binary.BigEndian.PutUint32(b[5:], stream)
	return append(b, payload...)
}

// TestReadTracker: the client's frames are followed across reads of any
// size; after the acknowledgement of phase 1's PING, the frame that opens
// a stream is kept from gRPC, and what came before it is not.
func TestReadTracker(t *testing.T) {
	var stream []byte
	stream = append(stream, clientPreface...)
	stream = append(stream, frame(0x4, 0, 0, "")...)                     // SETTINGS
	stream = append(stream, frame(frameHeaders, 0x4, 1, "hdrs")...)      // opens stream 1
	stream = append(stream, frame(framePing, flagAck, 0, "other!!!")...) // another PING's acknowledgement
	stream = append(stream, frame(framePing, flagAck, 0, drainPingData)...)
	stream = append(stream, frame(frameHeaders, 0x5, 1, "trls")...) // more headers of stream 1
	broken := len(stream)
	stream = append(stream, frame(frameHeaders, 0x4, 3, "hdrs")...) // opens stream 3: broken
	for _, size := range []int{len(stream), 1, 5, 9, 13} {
		var tr readTracker
		tr.preface = len(clientPreface)
		given, sawAck := 0, false
		for off := 0; off < len(stream); off += size {
			chunk := stream[off:min(off+size, len(stream))]
			keep, acked := tr.consume(chunk, true)
			sawAck = sawAck || acked
			given += keep
			if keep < len(chunk) {
				break
			}
		}
		if !sawAck || tr.last != 1 {
			t.Errorf("reads of %d bytes: acknowledged %v, last stream %d; want true, 1", size, sawAck, tr.last)
		}
		// gRPC gets what came before the broken frame, or part of its
		// header when a read ended inside it: never the whole header.
		if given > broken+8 || given < broken-size {
			t.Errorf("reads of %d bytes: %d bytes given to gRPC, want those before byte %d (and at most 8 of the header after)", size, given, broken)
		}
	}
	// Without the PING sent, an acknowledgement of its data is not one.
	var tr readTracker
	if keep, acked := tr.consume(append(frame(framePing, flagAck, 0, drainPingData), frame(frameHeaders, 0x4, 1, "h")...), false); acked || keep != 9+8+10 {
		t.Errorf("an acknowledgement of a PING never sent: acked %v, %d bytes kept", acked, keep)
	}
}

// TestFinalGoAwayWantedWhileWriting: the PING of phase 1 is acknowledged
// while phase 1 is still being written, so that the acknowledgement finds
// the lock held and leaves phase 2 to the writer; the writer writes it
// once phase 1 is out, with no write of gRPC's to come.
func TestFinalGoAwayWantedWhileWriting(t *testing.T) {
	server, client := net.Pipe()
	defer client.Close()
	f := newFrameConn(server, time.Hour, func() {})
	defer f.Close()
	drained := make(chan struct{})
	go func() { defer close(drained); f.drain() }()
	// net.Pipe's writes wait for reads: once a byte of phase 1 is read,
	// drain holds the lock, writing the rest.
	phase1 := append(goAwayFrame(1<<31-1), drainPing...)
	got := make([]byte, len(phase1))
	if _, err := io.ReadFull(client, got[:1]); err != nil {
		t.Fatal(err)
	}
	f.advance(phase2) // as the read of the acknowledgement does
	if _, err := io.ReadFull(client, got[1:]); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, phase1) {
		t.Fatalf("phase 1 = %x, want %x", got, phase1)
	}
	client.SetReadDeadline(time.Now().Add(xdstest.Timeout))
	final := make([]byte, len(goAwayFrame(0)))
	if _, err := io.ReadFull(client, final); err != nil {
		t.Fatalf("no final GOAWAY after phase 1: %v", err)
	}
	if !bytes.Equal(final, goAwayFrame(0)) {
		t.Fatalf("final GOAWAY = %x, want %x", final, goAwayFrame(0))
	}
	<-drained
}
