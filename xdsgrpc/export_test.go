package xdsgrpc

import (
	"time"

	"github.com/xdslens/xdslens/xdsgrpc/internal/routing"
)

// WithRoutingRand has the routes of the Builder's channels draw their
// random numbers (weighted clusters, runtime fractions) from rnd.
func WithRoutingRand(rnd func(n uint32) uint32) Option {
	return optionFunc(func(o *options) {
		o.routingOptions = append(o.routingOptions, routing.WithRand(rnd))
	})
}

// CallHeld reports whether the RPC of info still holds its cluster.
func CallHeld(info *CallInfo) bool { return info.call.Held }

// RetryBackoffLimit is the longest wait before the retry after attempt n
// of a retry policy backing off from base to max.
func RetryBackoffLimit(base, max time.Duration, n int) time.Duration {
	return (&retryPolicy{base: base, max: max}).backoffLimit(n)
}
