// Package wire reads messages in the protobuf wire format field by field,
// without decoding them: the transport reads a response's envelope this
// way and the redaction check walks resources for secrets.
package wire

import (
	"errors"

	"google.golang.org/protobuf/encoding/protowire"
)

// ErrMalformed is the error of a message that is not valid wire format.
var ErrMalformed = errors.New("malformed message")

// BytesFields calls f with the number and value of each field of message b
// whose wire type is bytes (strings, bytes, messages), in the order they
// appear. Fields of other wire types are skipped. It stops at the first
// error f returns, and returns ErrMalformed when b is not valid wire
// format. The values share b's memory.
func BytesFields(b []byte, f func(num protowire.Number, v []byte) error) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return ErrMalformed
		}
		b = b[n:]
		if typ != protowire.BytesType {
			if n = protowire.ConsumeFieldValue(num, typ, b); n < 0 {
				return ErrMalformed
			}
			b = b[n:]
			continue
		}
		v, n := protowire.ConsumeBytes(b)
		if n < 0 {
			return ErrMalformed
		}
		b = b[n:]
		if err := f(num, v); err != nil {
			return err
		}
	}
	return nil
}
