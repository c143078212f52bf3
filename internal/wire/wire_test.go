package wire_test

import (
	"errors"
	"slices"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/xdslens/xdslens/internal/wire"
)

// TestBytesFields walks a message of every wire type: only the bytes
// fields are seen, in order; a truncated message is malformed; an error of
// f stops the walk.
func TestBytesFields(t *testing.T) {
	var b []byte
	ends := map[int]bool{} // where a field ends: a cut there is a valid shorter message
	b = protowire.AppendTag(b, 1, protowire.BytesType)
	b = protowire.AppendString(b, "one")
	ends[len(b)] = true
	b = protowire.AppendTag(b, 2, protowire.VarintType)
	b = protowire.AppendVarint(b, 300)
	ends[len(b)] = true
	b = protowire.AppendTag(b, 3, protowire.Fixed64Type)
	b = protowire.AppendFixed64(b, 7)
	ends[len(b)] = true
	b = protowire.AppendTag(b, 4, protowire.BytesType)
	b = protowire.AppendString(b, "four")
	ends[len(b)] = true
	b = protowire.AppendTag(b, 5, protowire.Fixed32Type)
	b = protowire.AppendFixed32(b, 9)

	var got []string
	err := wire.BytesFields(b, func(num protowire.Number, v []byte) error {
		got = append(got, string(rune('0'+num))+"="+string(v))
		return nil
	})
	if want := []string{"1=one", "4=four"}; err != nil || !slices.Equal(got, want) {
		t.Errorf("fields %q, %v; want %q", got, err, want)
	}

	for cut := 1; cut < len(b); cut++ {
		if ends[cut] {
			continue
		}
		if err := wire.BytesFields(b[:cut], func(protowire.Number, []byte) error { return nil }); !errors.Is(err, wire.ErrMalformed) {
			t.Errorf("message cut at %d of %d bytes: %v, want ErrMalformed", cut, len(b), err)
		}
	}

	stop := errors.New("stop")
	calls := 0
	if err := wire.BytesFields(b, func(protowire.Number, []byte) error { calls++; return stop }); err != stop || calls != 1 {
		t.Errorf("f's error: %v after %d calls, want it after 1", err, calls)
	}
}
