package xdsclient

import (
	"errors"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/xdslens/xdslens/xdsclient/internal/transport"
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
var ErrResponseTooLarge = transport.ErrResponseTooLarge

// ErrRequestTooLarge is the cause of a stream failure when the server
// refused a DiscoveryRequest as larger than it accepts (gRPC servers take
// 4 MiB by default): a State of the World request names every subscribed
// resource of its type, so very many long names can make one. The client
// reconnects with backoff, since the same request would be refused again.
// Watchers get it inside an UNAVAILABLE status when no response had come
// on the stream; hooks (StreamEnded) with errors.Is.
var ErrRequestTooLarge = transport.ErrRequestTooLarge

// ErrKeepaliveTimeout is the cause of a server failure when the server left
// an HTTP/2 keepalive ping unanswered (WithKeepalive): the connection is
// gone though nothing closed it, which gRFC A57 counts as a connectivity
// failure even on a stream that had responses.
var ErrKeepaliveTimeout = transport.ErrKeepaliveTimeout

// ErrClosed is returned (inside a status) to watchers of a client that is
// closed.
var ErrClosed = errors.New("xdsclient: client is closed")
