package xdsconfig

import (
	"context"
	"net"
	"time"
)

// Resolver resolves the host names of LOGICAL_DNS clusters.
// *net.Resolver implements it.
type Resolver interface {
	// LookupHost returns the addresses of host, an IP address or a name.
	LookupHost(ctx context.Context, host string) (addrs []string, err error)
}

// An Option configures Watch.
type Option interface{ apply(*options) }

type optionFunc func(*options)

func (f optionFunc) apply(o *options) { f(o) }

type options struct {
	resolver    Resolver
	refresh     time.Duration
	minInterval time.Duration
	backoff     func(retries int) time.Duration
}

func defaultOptions() options {
	return options{
		resolver:    net.DefaultResolver,
		minInterval: 30 * time.Second,
		backoff:     defaultBackoff,
	}
}

// WithResolver resolves the host names of LOGICAL_DNS clusters with r
// instead of net.DefaultResolver.
func WithResolver(r Resolver) Option {
	return optionFunc(func(o *options) { o.resolver = r })
}

// WithDNSRefreshInterval resolves the host name of each LOGICAL_DNS cluster
// again every d after a successful resolution. By default (d = 0) a name is
// resolved again only when Manager.ResolveNow asks for it, as gRPC does.
func WithDNSRefreshInterval(d time.Duration) Option {
	return optionFunc(func(o *options) { o.refresh = d })
}

// WithDNSMinInterval sets the least time between two resolutions of one
// name that Manager.ResolveNow asked for (default 30s, gRPC's); a request
// made sooner is carried out when that time has passed.
func WithDNSMinInterval(d time.Duration) Option {
	return optionFunc(func(o *options) { o.minInterval = d })
}

// WithDNSBackoff sets how long to wait before resolving a name again after
// its retries-th failure in a row (retries counts from 0). The default
// waits 1s, then 1.6 times longer each time, up to 120s, as gRPC does.
func WithDNSBackoff(delay func(retries int) time.Duration) Option {
	return optionFunc(func(o *options) { o.backoff = delay })
}

func defaultBackoff(retries int) time.Duration {
	d := float64(time.Second)
	for i := 0; i < retries && d < float64(120*time.Second); i++ {
		d *= 1.6
	}
	return min(time.Duration(d), 120*time.Second)
}
