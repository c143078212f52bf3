package httpfilter

import (
	"context"
	"crypto/tls"
	"io"
	"net/netip"

	"github.com/xdslens/xdslens/internal/certsan"
)

// ServerFilter is a Filter that xDS-enabled servers run.
type ServerFilter interface {
	Filter
	// BuildServerInterceptor returns what runs the filter for the RPCs of
	// one route: cfg is the filter's config (from ParseConfig), override
	// the most specific override for the route (from ParseOverride; nil
	// when the route and its virtual host have none). A nil interceptor
	// means the filter has nothing to do for these RPCs. It is called
	// whenever the route's configuration changes, never per RPC.
	BuildServerInterceptor(cfg, override Config, env ServerEnv) (ServerInterceptor, error)
}

// ServerInterceptor runs a server filter for the RPCs of one route. It is
// called concurrently, once per RPC, before the RPC's handler, in the
// order of the filters.
type ServerInterceptor interface {
	// Intercept returns the context that the next filter and the handler
	// get (ctx itself when the filter adds nothing), or an error, a gRPC
	// status, that ends the RPC at once: no later filter and no handler
	// runs.
	Intercept(ctx context.Context, call ServerCall) (context.Context, error)
}

// ServerEnv is what a server gives a filter it builds, besides its
// configs.
type ServerEnv struct {
	// FilterName is the filter's instance name in http_filters.
	FilterName string
	// Stdout is where the filter writes what gRPC writes to standard
	// output (gRFC A59's stdout audit logger); os.Stdout when nil.
	Stdout io.Writer
	// Authz, when not nil, is called with every authorization decision
	// the filter makes, on the RPC's goroutine: it must be cheap.
	Authz func(AuthzDecision)
}

// AuthzDecision is one decision of an authorization filter such as RBAC.
type AuthzDecision struct {
	// FilterName is the filter's instance name.
	FilterName string
	// Method is the RPC's full method name.
	Method string
	// Allowed says whether the RPC may go on.
	Allowed bool
	// Policy is the name of the policy that matched, "" when none did (an
	// ALLOW rule set that matched nothing denies the RPC).
	Policy string
	// Deny is true when the rules' action is DENY, false for ALLOW.
	Deny bool
}

// ServerCall is one RPC as server filters see it, passed by value so that
// running a filter allocates nothing. Its headers are the incoming
// metadata of the context given with it (":authority" among them, as
// grpc-go servers give it).
type ServerCall struct {
	// Method is the full method name, "/pkg.Service/Method".
	Method string
	// Conn is the connection the RPC came on.
	Conn *Conn
}

// Conn describes one connection of a server, as its filters see it. It is
// made once per connection (NewConn), shared by the connection's RPCs, and
// must not be modified.
type Conn struct {
	// Local is the server's address of the connection, Remote the
	// peer's; IPv4-mapped IPv6 addresses are given as IPv4.
	Local, Remote netip.AddrPort
	// TLS is the connection's TLS state, nil without TLS.
	TLS *tls.ConnectionState
	// PeerPrincipals are the names that an authenticated principal is
	// matched against (gRFC A41): the URI SANs of the peer's certificate,
	// as the certificate spells them (as gRPC C-core reads them);
	// its DNS SANs when it has no URI SAN; its subject as an RFC 2253
	// string when it has neither; one empty name when the peer sent no
	// certificate. Nil without TLS.
	PeerPrincipals []string
	// SPIFFEID is the peer certificate's SPIFFE ID as the certificate
	// spells it, "" when it has none: its only URI SAN, when that is a
	// SPIFFE ID as gRPC C-core takes one ("spiffe://", compared with case;
	// a trust domain of at most 255 bytes; a path whose first segment is
	// not empty; 2048 bytes at most), the rule channels apply too (their
	// credentials.TLSInfo.SPIFFEID). It is the principal of an audit event
	// (gRFC A59), and the server's credentials.TLSInfo.SPIFFEID.
	SPIFFEID string
}

// NewConn describes a connection from its addresses and its TLS state
// (nil without TLS).
func NewConn(local, remote netip.AddrPort, state *tls.ConnectionState) *Conn {
	c := &Conn{
		Local:  netip.AddrPortFrom(local.Addr().Unmap(), local.Port()),
		Remote: netip.AddrPortFrom(remote.Addr().Unmap(), remote.Port()),
		TLS:    state,
	}
	if state == nil {
		return c
	}
	if len(state.PeerCertificates) == 0 {
		c.PeerPrincipals = []string{""}
		return c
	}
	leaf := state.PeerCertificates[0]
	// The SANs as the certificate spells them, as gRPC C-core matches
	// them: crypto/x509's URLs lower the scheme's case and re-encode the
	// rest.
	switch sans := certsan.Of(leaf); {
	case len(sans.URI) > 0:
		c.PeerPrincipals = sans.URI
	case len(sans.DNS) > 0:
		c.PeerPrincipals = sans.DNS
	default:
		c.PeerPrincipals = []string{leaf.Subject.String()}
	}
	c.SPIFFEID, _ = certsan.SPIFFEID(leaf)
	return c
}
