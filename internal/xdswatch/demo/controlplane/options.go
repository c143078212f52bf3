package controlplane

import (
	"github.com/envoyproxy/go-control-plane/pkg/log"
	"google.golang.org/grpc"
)

// An Option configures a [Server] at [Start].
type Option interface {
	apply(*config)
}

type config struct {
	callbacks   []Callbacks
	defaultNode bool
	logger      log.Logger
	grpcOpts    []grpc.ServerOption
	services    []func(*grpc.Server)
}

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

// WithCallbacks adds callbacks that observe every stream, request and
// response of the server. It may be given more than once; the callbacks
// run in the order given, and the first error a request callback returns
// ends that stream.
func WithCallbacks(cb Callbacks) Option {
	return optionFunc(func(c *config) {
		if cb != nil {
			c.callbacks = append(c.callbacks, cb)
		}
	})
}

// WithDefaultNode makes SetResources with an empty node ID set the
// configuration of every node that has no configuration of its own,
// including nodes that connect later. A node given its own configuration
// with a non-empty node ID keeps it from then on.
//
// Without this option the empty node ID names only clients that send no
// node ID.
func WithDefaultNode() Option {
	return optionFunc(func(c *config) { c.defaultNode = true })
}

// WithLogger sends go-control-plane's logs to l. By default they are
// discarded.
func WithLogger(l log.Logger) Option {
	return optionFunc(func(c *config) { c.logger = l })
}

// WithServerOptions passes options to the underlying grpc.Server, for
// example keepalive enforcement or stream limits.
func WithServerOptions(opts ...grpc.ServerOption) Option {
	return optionFunc(func(c *config) { c.grpcOpts = append(c.grpcOpts, opts...) })
}

// WithService has register add a service of its own to the underlying
// grpc.Server before it serves, such as an LRS service: go-control-plane
// serves discovery only.
func WithService(register func(*grpc.Server)) Option {
	return optionFunc(func(c *config) { c.services = append(c.services, register) })
}
