package xdsclient

import (
	"errors"
	"fmt"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
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

// ErrKeepaliveTimeout is the cause of a server failure when the server left
// an HTTP/2 keepalive ping unanswered (WithKeepalive): the connection is
// gone though nothing closed it, which gRFC A57 counts as a connectivity
// failure even on a stream that had responses.
var ErrKeepaliveTimeout = errors.New("xDS server did not answer a keepalive ping in time")

// ErrClosed is returned (inside a status) to watchers of a client that is
// closed.
var ErrClosed = errors.New("xdsclient: client is closed")

// resourceErrorf builds the status error given to watchers of one resource:
// it names the resource, the server and the node, as gRFC A88 asks.
func (c *Client) resourceErrorf(code codes.Code, e *entry, server, format string, args ...any) error {
	cause := fmt.Sprintf(format, args...)
	return status.Errorf(code, "%s %q from xDS server %q (node ID %q): %s", shortName(e.kind.typ), e.name, server, c.nodeID, cause)
}

func shortName(t interface {
	ShortName() string
	TypeURL() string
}) string {
	if s := t.ShortName(); s != "" {
		return s
	}
	return t.TypeURL()
}
