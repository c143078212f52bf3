package transport

import (
	"fmt"
	"net/url"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/resolver"

	"github.com/xdslens/xdslens/internal/authority"
	"github.com/xdslens/xdslens/xdsclient/bootstrap"
)

// hiddenScheme is the scheme of the target a channel to an xDS server is
// dialled with when the server's URI has parts that bootstrap.ShowURI
// hides (user info, a query, a fragment): gRPC shows the target a channel
// was dialled with (channelz, which the admin port serves, and its logs),
// so the channel is dialled with the URI as shown, under this scheme, and
// its resolver resolves the URI as written.
const hiddenScheme = "xdslens-xds-server"

// dialTarget returns the target to dial for s and the options that make
// it reach s.URI: s.URI itself when it hides nothing.
func dialTarget(s *bootstrap.ServerConfig) (string, []grpc.DialOption, error) {
	shown := s.ShownURI()
	if shown == s.URI {
		return s.URI, nil, nil
	}
	b, err := hiddenResolver(s.URI)
	if err != nil {
		return "", nil, err
	}
	return hiddenScheme + ":///" + shown, []grpc.DialOption{grpc.WithResolvers(b)}, nil
}

// hidden is the resolver of a target dialled as shown: it builds the
// resolver that gRPC would have built for the target as written.
type hidden struct {
	target resolver.Target // as written
	b      resolver.Builder
}

// hiddenResolver finds the resolver of uri as grpc.NewClient does: by its
// scheme, and, when uri has no scheme gRPC knows, by the "dns" scheme
// with uri as the endpoint.
func hiddenResolver(uri string) (hidden, error) {
	if u, err := url.Parse(uri); err == nil {
		if b := resolver.Get(u.Scheme); b != nil {
			return hidden{target: resolver.Target{URL: *u}, b: b}, nil
		}
	}
	u, err := url.Parse("dns:///" + uri)
	if err != nil {
		// The error quotes the URI: say what failed, not where.
		return hidden{}, fmt.Errorf("the server URI is not a valid target")
	}
	b := resolver.Get("dns")
	if b == nil {
		return hidden{}, fmt.Errorf("no resolver for the dns scheme")
	}
	return hidden{target: resolver.Target{URL: *u}, b: b}, nil
}

// Build builds the resolver of the target as written.
func (h hidden) Build(_ resolver.Target, cc resolver.ClientConn, opts resolver.BuildOptions) (resolver.Resolver, error) {
	return h.b.Build(h.target, cc, opts)
}

// Scheme is hiddenScheme.
func (h hidden) Scheme() string { return hiddenScheme }

// OverrideAuthority gives the channel the authority gRPC would have given
// it dialled with the target as written (transport credentials that name
// a server, and grpc.WithAuthority, still come first, as for any
// channel): the written target's resolver's own, or its endpoint, escaped
// for an authority, with "localhost" before an endpoint that is only a
// port; but without the user info of the endpoint, which gRPC would send
// to the server and show in channelz.
func (h hidden) OverrideAuthority(resolver.Target) string {
	if o, ok := h.b.(resolver.AuthorityOverrider); ok {
		return o.OverrideAuthority(h.target)
	}
	endpoint := h.target.Endpoint()
	if i := strings.LastIndexByte(endpoint, '@'); i >= 0 {
		endpoint = endpoint[i+1:]
	}
	return authority.OfEndpoint(endpoint)
}
