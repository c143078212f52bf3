package xdsgrpc

import (
	"google.golang.org/grpc/resolver"

	"github.com/xdslens/xdslens/internal/authority"
)

// Authority returns the authority of a channel to target when neither
// grpc.WithAuthority nor its transport credentials name one, made as gRPC
// makes it: the target's endpoint (its path without the leading "/"),
// each byte that RFC 3986 does not allow in an authority percent-encoded,
// and "localhost" before an endpoint that is only a port (":8080"). The
// channel chooses its RouteConfiguration's virtual host by it (the data
// plane authority of gRFC A74), and so does an explanation of its RPCs.
func Authority(target resolver.Target) string { return authority.OfEndpoint(target.Endpoint()) }

// OverrideAuthority gives a channel the authority Authority returns: the
// one gRPC would give it, which the resolver matches virtual hosts with.
func (b *Builder) OverrideAuthority(target resolver.Target) string { return Authority(target) }
