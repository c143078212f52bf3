package cache

import (
	"errors"
	"fmt"
	"strings"

	"github.com/xdslens/xdslens/internal/truncate"
)

// The error_detail of a NACK is bounded, so that a response of many invalid
// resources cannot make a request the server refuses (which would end the
// stream, and the client would reconnect to get the same response again):
// it holds the first maxNACKErrors messages, each cut at maxNACKMessage
// bytes, in at most maxNACKBytes, then the count of the others. Each cache
// entry keeps its own full error, which CSDS shows in error_state.
const (
	maxNACKErrors  = 50
	maxNACKMessage = 1 << 10
	maxNACKBytes   = 16 << 10
)

// nackDetail builds the error_detail of a NACK.
type nackDetail struct {
	b     strings.Builder
	n     int // errors
	shown int // errors in b
}

// room reports whether another message would be shown. When it would not,
// the error is counted: callers then skip formatting it.
func (d *nackDetail) room() bool {
	if d.shown < maxNACKErrors && d.b.Len() < maxNACKBytes-maxNACKMessage-2 {
		return true
	}
	d.n++
	return false
}

// add adds msg, cut at maxNACKMessage bytes.
func (d *nackDetail) add(msg string) {
	d.n++
	msg = truncate.String(msg, maxNACKMessage)
	if d.b.Len() > 0 {
		d.b.WriteString("; ")
	}
	d.b.WriteString(msg)
	d.shown++
}

// err returns the NACK's error, nil when nothing was invalid.
func (d *nackDetail) err() error {
	if d.n == 0 {
		return nil
	}
	if more := d.n - d.shown; more > 0 {
		fmt.Fprintf(&d.b, "; and %d more invalid (the error of each subscribed resource is in its cache entry)", more)
	}
	return errors.New(d.b.String())
}
