package xdsclient

import (
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/xdslens/xdslens/xdsclient/bootstrap"
	"github.com/xdslens/xdslens/xdsclient/internal/backoff"
	"github.com/xdslens/xdslens/xdsclient/xdsresource"
)

// Environment variables that select behaviour, read when a client is made.
const (
	// EnvDataErrorHandling set to "false" selects the legacy data error
	// handling (before gRFC A88): ignore_resource_deletion (gRFC A53) is
	// honoured, deletions drop cached resources, NACKs of cached resources
	// are ambient, and TP3 errors and the fail_on_data_errors and
	// resource_timer_is_transient_error server features are not used.
	EnvDataErrorHandling = "GRPC_EXPERIMENTAL_XDS_DATA_ERROR_HANDLING"
	// EnvFallback set to "false" turns xDS fallback (gRFC A71) off: only the
	// first server of each list is used.
	EnvFallback = "GRPC_EXPERIMENTAL_XDS_FALLBACK"
)

// The HTTP/2 keepalive of xDS channels, as gRPC's xDS clients set it: a
// ping after DefaultKeepaliveTime without any frame from the server, and
// the connection counts as failed (gRFC A57) if DefaultKeepaliveTimeout
// passes with no answer. grpc-go servers refuse pings more often than every
// 5 minutes by default (GOAWAY too_many_pings), so shorter times need a
// server that allows them.
const (
	DefaultKeepaliveTime    = 5 * time.Minute
	DefaultKeepaliveTimeout = 20 * time.Second
)

// MinKeepaliveTime is the shortest keepalive time gRPC-Go allows a client;
// WithKeepalive refuses shorter ones rather than let them be raised
// silently.
const MinKeepaliveTime = 10 * time.Second

// DefaultMaxResponseSize is the largest DiscoveryResponse a client accepts
// by default: 64 MiB. gRPC's 4 MiB default for RPCs is far too small for
// xDS (100,000 clusters in one CDS response are about 8.6 MB) and gRPC
// C-core does not cap xDS responses at all; 64 MiB holds about 750,000
// such clusters while still bounding what a server can make the client
// allocate for one message.
const DefaultMaxResponseSize = 64 << 20

// DefaultMinStreamInterval is the shortest time between the starts of two
// ADS streams to one server: at most four new streams a second, however
// often a server (or a proxy in front of it) ends them. See
// WithMinStreamInterval.
const DefaultMinStreamInterval = 250 * time.Millisecond

// DefaultResourceTimeout is the does-not-exist timer of the xDS protocol.
// Servers with resource_timer_is_transient_error use twice this.
const DefaultResourceTimeout = 15 * time.Second

// Option configures a Client.
type Option interface{ apply(*options) }

type optionFunc func(*options)

func (f optionFunc) apply(o *options) { f(o) }

type options struct {
	target          string
	hooks           []*Hooks
	resourceTimeout time.Duration
	backoff         func(retries int) time.Duration
	logger          *slog.Logger
	legacy          bool
	fallback        bool
	types           []xdsresource.Type
	keepaliveTime   time.Duration
	keepaliveWait   time.Duration
	maxResponseSize int
	// minStreamInterval is the shortest time between the starts of two
	// streams to one server.
	minStreamInterval time.Duration
	delta             *bool // nil: as each server's "delta_xds" feature says
}

func defaultOptions() options {
	return options{
		target:          "",
		resourceTimeout: DefaultResourceTimeout,
		backoff:         backoff.Default.Delay,
		logger:          slog.Default(),
		legacy:          strings.EqualFold(strings.TrimSpace(os.Getenv(EnvDataErrorHandling)), "false"),
		fallback:        !strings.EqualFold(strings.TrimSpace(os.Getenv(EnvFallback)), "false"),
		keepaliveTime:   DefaultKeepaliveTime,
		keepaliveWait:   DefaultKeepaliveTimeout,
		maxResponseSize: DefaultMaxResponseSize,

		minStreamInterval: DefaultMinStreamInterval,
	}
}

// check reports what is wrong with the options, nil if nothing, and sets
// the logger if none was given.
func (o *options) check() error {
	switch {
	case o.resourceTimeout <= 0:
		return fmt.Errorf("xdsclient: resource timeout %v: must be positive", o.resourceTimeout)
	case o.keepaliveTime < MinKeepaliveTime:
		return fmt.Errorf("xdsclient: keepalive time %v: must be at least %v (gRPC's minimum)", o.keepaliveTime, MinKeepaliveTime)
	case o.keepaliveWait <= 0:
		return fmt.Errorf("xdsclient: keepalive timeout %v: must be positive", o.keepaliveWait)
	case o.maxResponseSize <= 0:
		return fmt.Errorf("xdsclient: max response size %d: must be positive", o.maxResponseSize)
	case o.minStreamInterval < 0:
		return fmt.Errorf("xdsclient: min stream interval %v: must not be negative", o.minStreamInterval)
	}
	if o.logger == nil {
		o.logger = slog.New(slog.DiscardHandler)
	}
	return nil
}

// deltaFor reports whether the client speaks delta to server s.
func (o *options) deltaFor(s *bootstrap.ServerConfig) bool {
	if o.delta != nil {
		return *o.delta
	}
	return s.DeltaXDS
}

// WithTarget names the client: the data-plane target it serves, or "#server"
// for xDS-enabled servers. Hooks and metrics report it as grpc.target, and
// CSDS as client_scope.
func WithTarget(target string) Option {
	return optionFunc(func(o *options) { o.target = target })
}

// WithHooks adds hooks that observe every transition of the client. It may
// be given several times; all hooks are called.
func WithHooks(h *Hooks) Option {
	return optionFunc(func(o *options) {
		if h != nil {
			o.hooks = append(o.hooks, h)
		}
	})
}

// WithResourceTimeout sets the base does-not-exist timer (default 15s).
// Servers with the resource_timer_is_transient_error feature use twice the
// base.
func WithResourceTimeout(d time.Duration) Option {
	return optionFunc(func(o *options) { o.resourceTimeout = d })
}

// WithBackoff sets the delay before retry number retries (counted from 0)
// of an ADS stream that failed without a response. The default is gRPC's
// connection backoff: 1s, ×1.6, ±20%, at most 120s.
func WithBackoff(delay func(retries int) time.Duration) Option {
	return optionFunc(func(o *options) { o.backoff = delay })
}

// WithMinStreamInterval sets the shortest time between the starts of two
// ADS streams to one server (default DefaultMinStreamInterval, 250ms; 0
// turns the bound off). gRFC A57 has a stream that ended after a response
// restarted at once, with no backoff, and gRPC's clients do so: a server
// that ends every stream right after one response then gets new streams as
// fast as it can end them. With the bound, a stream that lived at least d
// is still restarted at once, a shorter one only d after it started; a
// stream that failed without a response waits for the backoff
// (WithBackoff), or d if that is longer. The wait is StreamEnded's
// Backoff.
func WithMinStreamInterval(d time.Duration) Option {
	return optionFunc(func(o *options) { o.minStreamInterval = d })
}

// WithLogger sets the logger (default slog.Default()).
func WithLogger(l *slog.Logger) Option {
	return optionFunc(func(o *options) { o.logger = l })
}

// WithLegacyDataErrorHandling selects (true) or refuses (false) the data
// error handling that preceded gRFC A88, overriding the
// GRPC_EXPERIMENTAL_XDS_DATA_ERROR_HANDLING environment variable.
func WithLegacyDataErrorHandling(legacy bool) Option {
	return optionFunc(func(o *options) { o.legacy = legacy })
}

// WithFallback turns xDS fallback (gRFC A71) on or off, overriding the
// GRPC_EXPERIMENTAL_XDS_FALLBACK environment variable.
func WithFallback(on bool) Option {
	return optionFunc(func(o *options) { o.fallback = on })
}

// WithDeltaXDS makes the client speak incremental xDS (on) or State of the
// World (off) to every server, whatever the "delta_xds" server feature of
// its bootstrap entry says. It is meant for tests; without it, servers
// whose entry lists "delta_xds" are spoken to over delta and the others
// over State of the World.
func WithDeltaXDS(on bool) Option {
	return optionFunc(func(o *options) { o.delta = &on })
}

// WithResourceTypes registers resource types beyond the four built-in ones,
// so that responses of those types are decoded.
func WithResourceTypes(types ...xdsresource.Type) Option {
	return optionFunc(func(o *options) { o.types = append(o.types, types...) })
}

// WithKeepalive sets the HTTP/2 keepalive of the client's xDS channels: a
// ping after interval without any frame from the server, and the
// connection is closed, a server failure (gRFC A57: watchers are told,
// fallback may start), if no answer comes within timeout. The defaults are
// gRPC's, DefaultKeepaliveTime and DefaultKeepaliveTimeout. interval must
// be at least MinKeepaliveTime, timeout positive; pings more often than the
// server allows (5 minutes for grpc-go servers by default) make it close
// the connection.
func WithKeepalive(interval, timeout time.Duration) Option {
	return optionFunc(func(o *options) { o.keepaliveTime, o.keepaliveWait = interval, timeout })
}

// WithMaxResponseSize sets the largest DiscoveryResponse, in bytes, the
// client accepts (default DefaultMaxResponseSize). A larger one fails its
// ADS stream with an error that says so, like any stream that fails before
// a response (gRFC A57).
func WithMaxResponseSize(bytes int) Option {
	return optionFunc(func(o *options) { o.maxResponseSize = bytes })
}
