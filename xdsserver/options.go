package xdsserver

import (
	"io"
	"log/slog"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/xdslens/xdslens/xdsclient"
)

// Option configures New.
type Option interface{ apply(*config) }

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

type config struct {
	grpcOpts       []grpc.ServerOption
	modeCallback   func(ServingModeChange)
	hooks          []*Hooks
	fallback       credentials.TransportCredentials
	drainGrace     time.Duration
	goAwayTimeout  time.Duration
	handshakeLimit time.Duration
	logger         *slog.Logger
	stdout         io.Writer
	poolTarget     string
}

// DefaultDrainGraceTime is how long a drained connection may keep its
// RPCs going before it is closed, as in gRPC C-core
// (GRPC_ARG_SERVER_CONFIG_CHANGE_DRAIN_GRACE_TIME_MS).
const DefaultDrainGraceTime = 10 * time.Minute

// WithServerOptions passes opts to grpc.NewServer. The server adds its
// own credentials (after opts, so that they win) and interceptors (first
// in the chain: interceptors given with grpc.ChainUnaryInterceptor and
// grpc.ChainStreamInterceptor run after routing and the HTTP filters, one
// given with grpc.UnaryInterceptor or grpc.StreamInterceptor before).
// Use WithFallbackCredentials, not grpc.Creds.
func WithServerOptions(opts ...grpc.ServerOption) Option {
	return optionFunc(func(c *config) { c.grpcOpts = append(c.grpcOpts, opts...) })
}

// WithServingModeCallback sets the func called on every serving mode
// change of a listening address (gRFC A36), on the goroutine that
// delivers the xDS update. Without it, changes to NOT_SERVING and back are
// logged as warnings.
func WithServingModeCallback(f func(ServingModeChange)) Option {
	return optionFunc(func(c *config) { c.modeCallback = f })
}

// WithHooks adds hooks that report what the server does; several are
// composed.
func WithHooks(h *Hooks) Option {
	return optionFunc(func(c *config) { c.hooks = append(c.hooks, h) })
}

// WithFallbackCredentials sets the credentials of connections whose
// filter chain has no TLS context (no transport_socket); insecure
// credentials by default. Chains with a DownstreamTlsContext always use
// TLS from the bootstrap's certificate providers.
func WithFallbackCredentials(creds credentials.TransportCredentials) Option {
	return optionFunc(func(c *config) { c.fallback = creds })
}

// WithDrainGraceTime sets how long a connection told to go away may keep
// its RPCs before it is closed (DefaultDrainGraceTime).
func WithDrainGraceTime(d time.Duration) Option {
	return optionFunc(func(c *config) { c.drainGrace = d })
}

// WithGoAwayTimeout sets how long the client of a drained connection has
// to acknowledge the PING sent with the first GOAWAY
// (DefaultGoAwayTimeout): then, or at the acknowledgement, a final GOAWAY
// names the last stream the server serves, and a client that opens
// another one has the connection closed.
func WithGoAwayTimeout(d time.Duration) Option {
	return optionFunc(func(c *config) { c.goAwayTimeout = d })
}

// WithHandshakeTimeout bounds the wait for a filter chain's certificates
// during a TLS handshake (default 20s); gRPC's connection timeout bounds
// the handshake as a whole.
func WithHandshakeTimeout(d time.Duration) Option {
	return optionFunc(func(c *config) { c.handshakeLimit = d })
}

// WithLogger sets the logger of serving mode changes and drains (the
// default logger when unset).
func WithLogger(l *slog.Logger) Option {
	return optionFunc(func(c *config) { c.logger = l })
}

// WithStdout sets where the filters write what gRPC writes to standard
// output, such as the stdout audit logger's lines (os.Stdout when unset).
// It must be safe for concurrent use.
func WithStdout(w io.Writer) Option {
	return optionFunc(func(c *config) { c.stdout = w })
}

// WithPoolTarget takes the server's xDS client from the pool under target
// instead of xdsclient.ServerTarget ("#server"): a process that watches
// resources of its own with one client (such as xdswatch) can serve with
// it too, and CSDS then shows one client.
func WithPoolTarget(target string) Option {
	return optionFunc(func(c *config) { c.poolTarget = target })
}

func newConfig(opts []Option) config {
	c := config{drainGrace: DefaultDrainGraceTime, goAwayTimeout: DefaultGoAwayTimeout, handshakeLimit: 20 * time.Second, poolTarget: xdsclient.ServerTarget}
	for _, o := range opts {
		if o != nil {
			o.apply(&c)
		}
	}
	if c.fallback == nil {
		c.fallback = insecure.NewCredentials()
	}
	if c.logger == nil {
		c.logger = slog.Default()
	}
	return c
}
