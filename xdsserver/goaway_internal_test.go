package xdsserver

import (
	"encoding/binary"
	"testing"
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
