package xdsclient

import (
	"errors"
	"fmt"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/xdslens/xdslens/xdsclient/internal/xerr"
)

// DataPlaneError turns an error that a watcher received into one fit for a
// data-plane RPC (gRFC A54, A88): the code becomes UNAVAILABLE, because the
// codes the client uses for data errors (NOT_FOUND, INVALID_ARGUMENT,
// PERMISSION_DENIED) are reserved for applications. The message is kept and
// names the original code. A nil error stays nil.
func DataPlaneError(err error) error {
	if err == nil {
		return nil
	}
	st, ok := status.FromError(err)
	if !ok {
		return status.Error(codes.Unavailable, err.Error())
	}
	if st.Code() == codes.Unavailable {
		return st.Err()
	}
	return status.Errorf(codes.Unavailable, "xDS %s: %s", st.Code(), st.Message())
}

// ErrResponseTooLarge is the cause of a stream failure when the server sent
// a DiscoveryResponse over the client's size limit (WithMaxResponseSize).
// Watchers get it inside an UNAVAILABLE status; hooks (StreamEnded) with
// errors.Is.
var ErrResponseTooLarge = errors.New("xDS response larger than the client accepts")

// ErrRequestTooLarge is the cause of a stream failure when the server
// refused a DiscoveryRequest as larger than it accepts (gRPC servers take
// 4 MiB by default): a State of the World request names every subscribed
// resource of its type, so very many long names can make one. The client
// reconnects with backoff, since the same request would be refused again.
// Watchers get it inside an UNAVAILABLE status when no response had come
// on the stream; hooks (StreamEnded) with errors.Is.
var ErrRequestTooLarge = errors.New("xDS request larger than the server accepts")

// ErrKeepaliveTimeout is the cause of a server failure when the server left
// an HTTP/2 keepalive ping unanswered (WithKeepalive): the connection is
// gone though nothing closed it, which gRFC A57 counts as a connectivity
// failure even on a stream that had responses.
var ErrKeepaliveTimeout = errors.New("xDS server did not answer a keepalive ping in time")

// ErrClosed is returned (inside a status) to watchers of a client that is
// closed.
var ErrClosed = errors.New("xdsclient: client is closed")

// resourceErrorf builds the status error given to watchers of one
// resource: it names the resource, the server and the node, as gRFC A88
// asks.
func (c *Client) resourceErrorf(code codes.Code, e *entry, server, format string, args ...any) error {
	return xerr.Resource(code, xerr.ShortName(e.kind.typ), e.name, server, c.nodeID, fmt.Sprintf(format, args...))
}

// explainStreamError names the failures whose cause a stream's status
// alone does not make clear: a response over the client's size limit is
// ErrResponseTooLarge, a request over the server's ErrRequestTooLarge, a
// keepalive ping left unanswered ErrKeepaliveTimeout, each with the
// setting involved.
func (c *Client) explainStreamError(err error) error {
	switch status.Code(err) {
	case codes.ResourceExhausted:
		local, size, limit, ok := c.sizeRefusal(status.Convert(err).Message())
		switch {
		case !ok:
		case local:
			return fmt.Errorf("%w: the limit is %d bytes (xdsclient.WithMaxResponseSize): %v", ErrResponseTooLarge, c.o.maxResponseSize, err)
		case size > 0:
			return fmt.Errorf("%w: the server refused a request of %d bytes, over its limit of %d (a State of the World request, and the first request of a stream over delta, names every subscribed resource of its type): %v", ErrRequestTooLarge, size, limit, err)
		default:
			return fmt.Errorf("%w: %v", ErrRequestTooLarge, err)
		}
	case codes.Unavailable:
		if strings.Contains(err.Error(), "keepalive ping failed") {
			return fmt.Errorf("%w (keepalive time %v, timeout %v): %v", ErrKeepaliveTimeout, c.o.keepaliveTime, c.o.keepaliveWait, err)
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
func (c *Client) sizeRefusal(msg string) (local bool, size, limit int64, ok bool) {
	if strings.Contains(msg, "after decompression larger than max") {
		return true, 0, 0, true
	}
	const larger = "larger than max"
	if i := strings.Index(msg, larger); i >= 0 {
		if _, err := fmt.Sscanf(msg[i+len(larger):], " (%d vs. %d)", &size, &limit); err == nil {
			return limit == int64(c.o.maxResponseSize), size, limit, true
		}
		return true, 0, 0, true // gRPC-Go's other forms of its own error
	}
	return false, 0, 0, strings.Contains(msg, "exceeds maximum size")
}
