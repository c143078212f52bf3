package dataplane

import (
	"context"
	"encoding/base64"
	"strings"

	"google.golang.org/grpc/metadata"
)

// outgoingCarrier is the propagation.TextMapCarrier of an attempt's
// outgoing metadata: what a propagator sets goes with the request. A
// binary header's value ("-bin" keys, such as grpc-trace-bin) comes
// base64-encoded, as text propagators give it, and is sent as its bytes.
type outgoingCarrier struct{ ctx context.Context }

// Get is never used when injecting.
func (c *outgoingCarrier) Get(key string) string {
	md, _ := metadata.FromOutgoingContext(c.ctx)
	if v := md.Get(key); len(v) > 0 {
		return v[0]
	}
	return ""
}

// Set adds key and value to the outgoing metadata.
func (c *outgoingCarrier) Set(key, value string) {
	if strings.HasSuffix(key, "-bin") {
		b, err := base64.StdEncoding.DecodeString(value)
		if err != nil {
			return // not what a binary header carries: leave it out
		}
		value = string(b)
	}
	c.ctx = metadata.AppendToOutgoingContext(c.ctx, key, value)
}

// Keys returns the keys of the outgoing metadata.
func (c *outgoingCarrier) Keys() []string {
	md, _ := metadata.FromOutgoingContext(c.ctx)
	keys := make([]string, 0, len(md))
	for k := range md {
		keys = append(keys, k)
	}
	return keys
}
