package xdscreds

import (
	"context"
	"net"

	"github.com/xdslens/xdslens/internal/handshake"
)

// HandshakeWith makes the TLS handshake of ClientHandshake on rawConn
// with info's settings, for tests and benchmarks, which cannot give
// ClientHandshake the attributes of an address (gRPC puts them in its
// context through an internal API).
func HandshakeWith(ctx context.Context, info *handshake.Info, rawConn net.Conn) (net.Conn, error) {
	conn, _, err := clientTLS(ctx, info, rawConn)
	return conn, err
}
