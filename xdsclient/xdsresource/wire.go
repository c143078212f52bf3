package xdsresource

import (
	"iter"
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// wireFields walks the serialized fields of one message m, for a decoder
// that fills the fields it reads most often by hand and leaves every other
// field to the protobuf runtime. Fields are applied in their order on the
// wire, as the runtime applies them: each run of fields left to the
// runtime is merged into m before the next field the caller takes, and
// the last run by done. So m ends as proto.Unmarshal would leave it, as
// long as the caller gives each field it takes the runtime's meaning: the
// last value of a scalar wins, a message field merges into what m holds,
// a oneof member replaces another, a string must be valid UTF-8.
//
// A malformed field or one that the runtime rejects makes the walk fail
// (ok reports false); the caller then decodes the whole message with the
// runtime, whose error is the one to report.
type wireFields struct {
	b     []byte
	m     proto.Message
	depth int // nesting of m: 1 for the resource itself
	off   int // start of the next field
	val   int // start of the current field's value
	tag   int // start of the current field's tag
	run   int // start of the fields left to the runtime, not merged yet
	ok    bool
	// merged is set once the runtime has merged fields into m.
	merged bool
}

// newWireFields returns a walk of b, the serialized fields of m, which is
// nested depth messages deep in the resource (1 for the resource itself).
func newWireFields(b []byte, m proto.Message, depth int) wireFields {
	return wireFields{b: b, m: m, depth: depth, ok: true}
}

// fields yields the number and wire type of each field in turn, until the
// end or until the walk fails. The caller takes the field (varint, bytes,
// str) or leaves it to the runtime (skip).
func (w *wireFields) fields() iter.Seq2[protowire.Number, protowire.Type] {
	return func(yield func(protowire.Number, protowire.Type) bool) {
		for w.ok && w.off < len(w.b) {
			num, typ, n := protowire.ConsumeTag(w.b[w.off:])
			if n < 0 {
				w.ok = false
				return
			}
			w.tag, w.val = w.off, w.off+n
			if !yield(num, typ) {
				return
			}
		}
	}
}

// skip leaves the current field to the runtime.
func (w *wireFields) skip(num protowire.Number, typ protowire.Type) {
	n := protowire.ConsumeFieldValue(num, typ, w.b[w.val:])
	if n < 0 {
		w.ok = false
		return
	}
	w.off = w.val + n
}

// flush merges the fields left to the runtime before the current field.
func (w *wireFields) flush(end int) {
	if w.run < end && w.ok {
		w.merged = true
		o := proto.UnmarshalOptions{Merge: true, RecursionLimit: protowire.DefaultRecursionLimit - (w.depth - 1)}
		if o.Unmarshal(w.b[w.run:end], w.m) != nil {
			w.ok = false
		}
	}
	w.run = end
}

// varint takes the current field, of wire type varint, and returns its
// value.
func (w *wireFields) varint() uint64 {
	w.flush(w.tag)
	v, n := protowire.ConsumeVarint(w.b[w.val:])
	if n < 0 {
		w.ok = false
		return 0
	}
	w.off = w.val + n
	w.run = w.off
	return v
}

// bytes takes the current field, of wire type bytes, and returns its
// value, which shares the walk's memory: a message's fields or a bytes
// field's value.
func (w *wireFields) bytes() []byte {
	w.flush(w.tag)
	v, n := protowire.ConsumeBytes(w.b[w.val:])
	if n < 0 {
		w.ok = false
		return nil
	}
	w.off = w.val + n
	w.run = w.off
	return v
}

// str takes the current field, a proto3 string, whose value must be valid
// UTF-8.
func (w *wireFields) str() []byte {
	v := w.bytes()
	if !utf8.Valid(v) {
		w.ok = false
	}
	return v
}

// done merges what is left to the runtime and reports whether the walk
// went well.
func (w *wireFields) done() bool {
	w.flush(len(w.b))
	return w.ok
}

// mergeWire merges b, the serialized fields of m (nested depth messages
// deep), with the runtime, as it would while decoding the resource.
func mergeWire(b []byte, m proto.Message, depth int) bool {
	w := newWireFields(b, m, depth)
	return w.done()
}
