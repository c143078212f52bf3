// Package backoff computes the delays between attempts to reach an xDS
// server: exponential growth with random jitter, as gRPC's connection
// backoff describes (1s initial, ×1.6, ±20%, at most 120s).
package backoff

import (
	"math/rand/v2"
	"time"
)

// Exponential is an exponential backoff policy. The zero value is not
// useful; start from Default.
type Exponential struct {
	// Initial is the delay before the first retry.
	Initial time.Duration
	// Multiplier is the growth factor between successive retries.
	Multiplier float64
	// Jitter is the fraction of the delay by which it is randomised in
	// both directions (0.2 means ±20%).
	Jitter float64
	// Max caps the delay before jitter is applied.
	Max time.Duration
}

// Default is gRPC's connection backoff: 1s, ×1.6, ±20%, capped at 120s.
var Default = Exponential{Initial: time.Second, Multiplier: 1.6, Jitter: 0.2, Max: 120 * time.Second}

// Delay returns the delay before retry number retries (0 for the first
// retry after a failure).
func (e Exponential) Delay(retries int) time.Duration {
	d := float64(e.Initial)
	max := float64(e.Max)
	for i := 0; i < retries && d < max; i++ {
		d *= e.Multiplier
	}
	if d > max {
		d = max
	}
	d *= 1 + e.Jitter*(rand.Float64()*2-1)
	if d < 0 {
		return 0
	}
	return time.Duration(d)
}
