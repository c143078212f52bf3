package xdsgrpc

import (
	"time"

	"google.golang.org/grpc"

	"github.com/xdslens/xdslens/xdsclient/xdsconfig"
	"github.com/xdslens/xdslens/xdsgrpc/history"
	"github.com/xdslens/xdslens/xdsgrpc/internal/routing"
)

// DefaultFailoverTimeout is how long a priority of a cluster's endpoints may
// take to get a READY connection before the next priority is tried (gRFC
// A56's failover timer).
const DefaultFailoverTimeout = 10 * time.Second

// Option configures a Builder.
type Option interface{ apply(*options) }

type optionFunc func(*options)

func (f optionFunc) apply(o *options) { f(o) }

type options struct {
	historySize     int // configs each channel keeps (WithConfigHistory)
	hooks           []*Hooks
	failoverTimeout time.Duration
	configOptions   []xdsconfig.Option
	poolTarget      string
	observers       []func(*Builder)
	dialOptions     []grpc.DialOption
	// For tests: deterministic random sources of routing and drops.
	routingOptions []routing.Option
	rand           func(n uint32) uint32
}

func defaultOptions() options {
	return options{failoverTimeout: DefaultFailoverTimeout, historySize: history.DefaultSize}
}

// WithHooks adds hooks that observe the data plane of every channel the
// Builder resolves. It may be given several times; all hooks are called.
func WithHooks(h *Hooks) Option {
	return optionFunc(func(o *options) {
		o.hooks = append(o.hooks, h)
	})
}

// WithFailoverTimeout sets the failover timer of cluster priorities
// (default DefaultFailoverTimeout).
func WithFailoverTimeout(d time.Duration) Option {
	return optionFunc(func(o *options) { o.failoverTimeout = d })
}

// WithConfigOptions passes options to the dependency managers (package
// xdsconfig) of the channels, such as how LOGICAL_DNS names are resolved.
func WithConfigOptions(opts ...xdsconfig.Option) Option {
	return optionFunc(func(o *options) { o.configOptions = append(o.configOptions, opts...) })
}

// WithPoolTarget has every channel of the Builder get its xDS client from
// the pool under target, instead of under the channel's own target (one
// client per channel target, as gRFC A71 has it). Channels then share that
// client's cache, its connections to xDS servers, its circuit-breaker
// counters and its CSDS client config with whatever else uses it: a tool
// that watches resources with a client of its own and routes channels by
// the same resources shows one cache. Hooks and metrics still name each
// channel by its own target.
func WithPoolTarget(target string) Option {
	return optionFunc(func(o *options) { o.poolTarget = target })
}

// WithObserver has attach called with the Builder when NewBuilder (or
// DialOptions) makes it, before any of its channels exist, so that what
// attach adds to it (hooks with AddHooks, gauges that read InFlight)
// observes every channel of the Builder from its start. It may be given
// several times. Package telemetry/dataplane's WithMeterProvider is one:
// it measures every channel that DialOptions(pool, opts...) makes.
func WithObserver(attach func(*Builder)) Option {
	return optionFunc(func(o *options) { o.observers = append(o.observers, attach) })
}

// WithDialOptions has DialOptions give opts too, before the Builder's
// interceptors: an interceptor among them sees each RPC whole (its
// routing, its deadline, its HTTP filters and all its retries), and a
// stats.Handler sees each attempt, whose routing decision RoutingOf
// reads. It may be given several times. Package telemetry/dataplane's
// per-call metrics and traces are given this way.
func WithDialOptions(opts ...grpc.DialOption) Option {
	return optionFunc(func(o *options) { o.dialOptions = append(o.dialOptions, opts...) })
}

// JoinOptions returns an Option that applies each of opts in order.
func JoinOptions(opts ...Option) Option {
	return optionFunc(func(o *options) {
		for _, opt := range opts {
			opt.apply(o)
		}
	})
}
