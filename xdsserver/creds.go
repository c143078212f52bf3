package xdsserver

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"

	"github.com/xdslens/xdslens/xdsclient/xdsresource/security"

	"google.golang.org/grpc/credentials"

	"github.com/xdslens/xdslens/httpfilter"
)

// serverCreds are the transport credentials of every connection of the
// server: each connection's filter chain says whether it gets TLS (its
// DownstreamTlsContext, with certificates from the bootstrap's
// certificate providers, gRFC A29) or the fallback credentials.
type serverCreds struct{ s *Server }

func (c *serverCreds) ServerHandshake(raw net.Conn) (net.Conn, credentials.AuthInfo, error) {
	sc, ok := raw.(*serverConn)
	if !ok {
		return nil, nil, fmt.Errorf("xdsserver: handshake of a connection (%T) the server did not accept", raw)
	}
	sec := sc.chain.Load().fc.Security
	conn, auth, state, err := c.handshake(sc, sec)
	if err != nil {
		sc.report(func(h *Hooks) {
			if h.HandshakeFailed != nil {
				h.HandshakeFailed(HandshakeInfo{ConnInfo: sc.connInfo(), Side: "server", Err: err})
			}
		}, false)
		return nil, nil, err
	}
	info := httpfilter.NewConn(sc.local, sc.remote, state)
	if ti, ok := auth.(credentials.TLSInfo); ok && sec != nil && info.SPIFFEID != "" {
		ti.SPIFFEID = state.PeerCertificates[0].URIs[0] // the only URI SAN, a SPIFFE ID by certsan.SPIFFEID's rules
		auth = ti
	}
	sc.info.Store(info)
	out := newFrameConn(conn, c.s.cfg.goAwayTimeout, func() {
		c.s.cfg.logger.Warn("xDS-enabled server closed a drained connection: its client opened a stream after the final GOAWAY",
			"address", sc.ls.addr, "peer", sc.remote.String(), "chain", sc.chain.Load().label())
		sc.report(func(h *Hooks) {
			if h.GoAwayIgnored != nil {
				h.GoAwayIgnored(sc.connInfo())
			}
		}, false)
	})
	sc.out.Store(out)
	return out, auth, nil
}

// handshake runs the handshake that sec (nil: the fallback credentials)
// calls for.
func (c *serverCreds) handshake(sc *serverConn, sec *security.Config) (net.Conn, credentials.AuthInfo, *tls.ConnectionState, error) {
	if sec == nil {
		conn, auth, err := c.s.cfg.fallback.ServerHandshake(sc)
		if err != nil {
			return nil, nil, nil, err
		}
		var state *tls.ConnectionState
		if ti, ok := auth.(credentials.TLSInfo); ok {
			state = &ti.State
		}
		return conn, auth, state, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.s.cfg.handshakeLimit)
	defer cancel()
	cfg, err := c.s.tlsConfig(ctx, sec)
	if err != nil {
		return nil, nil, nil, err
	}
	tc := tls.Server(sc, cfg)
	if err := tc.HandshakeContext(ctx); err != nil {
		return nil, nil, nil, fmt.Errorf("TLS handshake: %w", err)
	}
	state := tc.ConnectionState()
	auth := credentials.TLSInfo{
		State:          state,
		CommonAuthInfo: credentials.CommonAuthInfo{SecurityLevel: credentials.PrivacyAndIntegrity},
	}
	return tc, auth, &state, nil
}

// tlsConfig builds the TLS config of a handshake from the current key
// material of sec's certificate provider instances: the identity always;
// the roots when client certificates are checked, required with
// require_client_certificate and otherwise checked when sent (as gRPC
// C-core does).
func (s *Server) tlsConfig(ctx context.Context, sec *security.Config) (*tls.Config, error) {
	id, err := s.certs.Identity(sec.IdentityInstance, sec.IdentityCertName)
	if err != nil {
		return nil, err
	}
	km, err := id.KeyMaterial(ctx)
	if err != nil {
		return nil, fmt.Errorf("identity certificate: %w", err)
	}
	if len(km.Certs) == 0 {
		return nil, fmt.Errorf("identity certificate: certificate provider instance %q has none", sec.IdentityInstance)
	}
	cfg := &tls.Config{Certificates: km.Certs, NextProtos: []string{"h2"}, MinVersion: tls.VersionTLS12}
	if sec.RootInstance == "" {
		return cfg, nil
	}
	roots, err := s.certs.Roots(sec.RootInstance, sec.RootCertName)
	if err != nil {
		return nil, err
	}
	rkm, err := roots.KeyMaterial(ctx)
	if err != nil {
		return nil, fmt.Errorf("root certificates: %w", err)
	}
	if rkm.Roots == nil {
		return nil, fmt.Errorf("root certificates: certificate provider instance %q has none", sec.RootInstance)
	}
	cfg.ClientCAs = rkm.Roots
	cfg.ClientAuth = tls.VerifyClientCertIfGiven
	if sec.RequireClientCert {
		cfg.ClientAuth = tls.RequireAndVerifyClientCert
	}
	return cfg, nil
}

func (c *serverCreds) ClientHandshake(context.Context, string, net.Conn) (net.Conn, credentials.AuthInfo, error) {
	return nil, nil, errors.New("xdsserver: server credentials do not dial")
}

func (c *serverCreds) Info() credentials.ProtocolInfo {
	return credentials.ProtocolInfo{SecurityProtocol: "xds"}
}

func (c *serverCreds) Clone() credentials.TransportCredentials { return &serverCreds{s: c.s} }

func (c *serverCreds) OverrideServerName(string) error { return nil }
