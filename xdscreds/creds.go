package xdscreds

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"syscall"

	"google.golang.org/grpc/credentials"

	"github.com/xdslens/xdslens/internal/handshake"
)

// ClientOptions configure the credentials of NewClientCredentials.
type ClientOptions struct {
	// FallbackCreds make the handshake of every address without TLS
	// settings: an endpoint of a cluster without a transport_socket, or an
	// address of a channel that xdslens does not route. Required; often
	// insecure.NewCredentials().
	FallbackCreds credentials.TransportCredentials
}

// NewClientCredentials returns transport credentials for xdslens channels:
// TLS or mutual TLS, as its cluster says (gRFC A29), to each endpoint of a
// cluster whose transport_socket asks for TLS, and opts.FallbackCreds to
// every other address. It fails when opts.FallbackCreds is nil.
func NewClientCredentials(opts ClientOptions) (credentials.TransportCredentials, error) {
	if opts.FallbackCreds == nil {
		return nil, errors.New("xdscreds: ClientOptions.FallbackCreds is nil: the credentials of addresses without TLS settings are required (insecure.NewCredentials() for plaintext)")
	}
	return &clientCreds{fallback: opts.FallbackCreds}, nil
}

// clientCreds are the credentials of NewClientCredentials.
type clientCreds struct {
	fallback credentials.TransportCredentials
}

var _ handshake.Credentials = (*clientCreds)(nil)

// ClientHandshake makes a TLS handshake on rawConn with the settings of
// the cluster whose handshake.Info the address carries, or hands rawConn
// to the fallback credentials when it carries none. A failed TLS
// handshake closes rawConn and returns a *HandshakeError.
func (c *clientCreds) ClientHandshake(ctx context.Context, authority string, rawConn net.Conn) (net.Conn, credentials.AuthInfo, error) {
	info := handshake.Get(credentials.ClientHandshakeInfoFromContext(ctx).Attributes)
	if info == nil {
		return c.fallback.ClientHandshake(ctx, authority, rawConn)
	}
	conn, state, err := clientTLS(ctx, info, rawConn)
	if err != nil {
		rawConn.Close()
		return nil, nil, &HandshakeError{Cluster: info.Cluster, Peer: peerOf(rawConn), Err: err}
	}
	return conn, credentials.TLSInfo{
		State:          state,
		CommonAuthInfo: credentials.CommonAuthInfo{SecurityLevel: credentials.PrivacyAndIntegrity},
		SPIFFEID:       spiffeID(state),
	}, nil
}

// clientTLS makes the handshake with the settings of info. The
// connection returned keeps rawConn's syscall.Conn, for channelz's socket
// options.
func clientTLS(ctx context.Context, info *handshake.Info, rawConn net.Conn) (net.Conn, tls.ConnectionState, error) {
	cfg, err := clientConfig(ctx, info)
	if err != nil {
		return nil, tls.ConnectionState{}, err
	}
	conn := tls.Client(rawConn, cfg)
	if err := conn.HandshakeContext(ctx); err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil && !errors.Is(err, ctxErr) {
			// ctx ended and the connection was closed by another (gRPC
			// closes it at its connect deadline) before the handshake
			// saw ctx end: the error read is of the connection closed,
			// and ctx's end is its cause.
			err = fmt.Errorf("%w (%v)", ctxErr, err)
		}
		return nil, tls.ConnectionState{}, err
	}
	state := conn.ConnectionState()
	if state.NegotiatedProtocol != "h2" {
		conn.Close()
		return nil, tls.ConnectionState{}, fmt.Errorf("the server did not agree to ALPN protocol \"h2\" (it chose %q)", state.NegotiatedProtocol)
	}
	if sc, ok := rawConn.(syscall.Conn); ok {
		return syscallConn{conn, sc}, state, nil
	}
	return conn, state, nil
}

// syscallConn is a TLS connection that gives the syscall.Conn of the
// connection under it.
type syscallConn struct {
	*tls.Conn
	raw syscall.Conn
}

// SyscallConn returns the raw connection of the connection under TLS.
func (c syscallConn) SyscallConn() (syscall.RawConn, error) { return c.raw.SyscallConn() }

// peerOf names the remote end of conn.
func peerOf(conn net.Conn) string {
	if a := conn.RemoteAddr(); a != nil {
		return a.String()
	}
	return "unknown peer"
}

// ServerHandshake fails: these are client credentials.
func (c *clientCreds) ServerHandshake(net.Conn) (net.Conn, credentials.AuthInfo, error) {
	return nil, nil, errors.New("xdscreds: ServerHandshake: these are client credentials, made for channels; they cannot serve connections")
}

// Info reports the protocol of the credentials: "tls".
func (c *clientCreds) Info() credentials.ProtocolInfo {
	return credentials.ProtocolInfo{SecurityProtocol: "tls"}
}

// Clone returns credentials with a clone of the fallback credentials.
func (c *clientCreds) Clone() credentials.TransportCredentials {
	return &clientCreds{fallback: c.fallback.Clone()}
}

// OverrideServerName fails: the server name sent, and the names a peer
// must carry, are the cluster's.
func (c *clientCreds) OverrideServerName(string) error {
	return errors.New("xdscreds: OverrideServerName: the server name comes from each cluster (sni, auto_host_sni) and peers are checked against its match_subject_alt_names")
}

// AppliesClusterSecurity reports true: these credentials apply the TLS
// settings of each cluster (handshake.Credentials).
func (c *clientCreds) AppliesClusterSecurity() bool { return true }

// HandshakeError is the error of a failed TLS handshake with an endpoint
// of a cluster that asks for TLS. It carries no key material.
type HandshakeError struct {
	// Cluster is the cluster's name.
	Cluster string
	// Peer is the endpoint's address.
	Peer string
	// Err says why: key material that could not be had, a peer that does
	// not speak TLS, a certificate chain that does not verify, SANs that
	// match none of the cluster's matchers.
	Err error
}

// Error names the cluster, the peer and the reason.
func (e *HandshakeError) Error() string {
	return fmt.Sprintf("xdscreds: cluster %q: TLS handshake with %s: %v", e.Cluster, e.Peer, e.Err)
}

// Unwrap returns Err.
func (e *HandshakeError) Unwrap() error { return e.Err }
