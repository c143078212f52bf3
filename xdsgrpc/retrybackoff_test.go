package xdsgrpc_test

import (
	"math"
	"testing"
	"time"

	"github.com/xdslens/xdslens/xdsgrpc"
)

// TestRetryBackoffLimit checks the schedule of gRFC A44 (base * 2^(n-1),
// at most max) where the doubling would pass the largest time.Duration:
// the wait is max, never a shorter wait that the wrapped product left.
func TestRetryBackoffLimit(t *testing.T) {
	const huge = time.Duration(math.MaxInt64)
	for _, tc := range []struct {
		base, max time.Duration
		n         int
		want      time.Duration
	}{
		{25 * time.Millisecond, 250 * time.Millisecond, 1, 25 * time.Millisecond},
		{25 * time.Millisecond, 250 * time.Millisecond, 2, 50 * time.Millisecond},
		{25 * time.Millisecond, 250 * time.Millisecond, 4, 200 * time.Millisecond},
		{25 * time.Millisecond, 250 * time.Millisecond, 5, 250 * time.Millisecond},
		{time.Second, 100 * time.Millisecond, 1, 100 * time.Millisecond},
		// 5 * 2^59 ns shifted by 3 is 5 * 2^62 ns, which wraps to 2^62.
		{5 << 59, huge, 4, huge},
		// 3 * 2^61 ns doubled is negative when it wraps.
		{3 << 61, huge, 2, huge},
		{huge, huge, 5, huge},
		{huge / 4, huge, 3, huge / 4 * 4},
	} {
		if got := xdsgrpc.RetryBackoffLimit(tc.base, tc.max, tc.n); got != tc.want {
			t.Errorf("backoff limit of attempt %d from %v to %v = %v, want %v", tc.n, tc.base, tc.max, got, tc.want)
		}
	}
}
