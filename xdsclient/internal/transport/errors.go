package transport

import (
	"errors"
	"fmt"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/xdslens/xdslens/xdsclient/internal/health"
)

// The causes of a stream's end that its status alone does not make clear.
// Package xdsclient exports them.
var (
	ErrResponseTooLarge = errors.New("xDS response larger than the client accepts")
	ErrRequestTooLarge  = errors.New("xDS request larger than the server accepts")
	ErrKeepaliveTimeout = errors.New("xDS server did not answer a keepalive ping in time")
)

// explain names the failures whose cause a stream's status alone does not
// make clear: a response over the client's size limit is
// ErrResponseTooLarge, a request over the server's ErrRequestTooLarge, a
// keepalive ping left unanswered ErrKeepaliveTimeout, each with the
// setting involved.
func (c *Conn) explain(err error) error {
	switch status.Code(err) {
	case codes.ResourceExhausted:
		local, size, limit, ok := c.sizeRefusal(status.Convert(err).Message())
		switch {
		case !ok:
		case local:
			return fmt.Errorf("%w: the limit is %d bytes (xdsclient.WithMaxResponseSize): %v", ErrResponseTooLarge, c.cfg.MaxResponseSize, err)
		case size > 0:
			return fmt.Errorf("%w: the server refused a request of %d bytes, over its limit of %d (a State of the World request, and the first request of a stream over delta, names every subscribed resource of its type): %v", ErrRequestTooLarge, size, limit, err)
		default:
			return fmt.Errorf("%w: %v", ErrRequestTooLarge, err)
		}
	case codes.Unavailable:
		if strings.Contains(err.Error(), "keepalive ping failed") {
			return fmt.Errorf("%w (keepalive time %v, timeout %v): %v", ErrKeepaliveTimeout, c.cfg.KeepaliveTime, c.cfg.KeepaliveTimeout, err)
		}
	}
	return err
}

// sizeRefusal reads the message of a RESOURCE_EXHAUSTED status that ended
// a stream: ok if it says a message was too large, local if the message is
// a response the client refused (gRPC-Go's own error, which names the
// client's limit), otherwise a request the server refused, of size bytes
// over limit when the message says (gRPC servers in Go and C++ do: "larger
// than max (SIZE vs. LIMIT)"; Java's: "exceeds maximum size LIMIT").
// Requests are never compressed, so a refusal after decompression is the
// client's. A server whose limit is exactly the client's is taken for the
// client.
func (c *Conn) sizeRefusal(msg string) (local bool, size, limit int64, ok bool) {
	if strings.Contains(msg, "after decompression larger than max") {
		return true, 0, 0, true
	}
	const larger = "larger than max"
	if i := strings.Index(msg, larger); i >= 0 {
		if _, err := fmt.Sscanf(msg[i+len(larger):], " (%d vs. %d)", &size, &limit); err == nil {
			return limit == int64(c.cfg.MaxResponseSize), size, limit, true
		}
		return true, 0, 0, true // gRPC-Go's other forms of its own error
	}
	return false, 0, 0, strings.Contains(msg, "exceeds maximum size")
}

// Cause classifies how a stream ended, for gRFC A57 (package health).
func Cause(err error) health.Cause {
	switch {
	case errors.Is(err, ErrKeepaliveTimeout):
		return health.CauseKeepalive
	case errors.Is(err, ErrResponseTooLarge):
		return health.CauseResponseTooLarge
	case errors.Is(err, ErrRequestTooLarge):
		return health.CauseRequestTooLarge
	}
	return health.CauseOther
}
