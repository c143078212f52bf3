package clusterlb_test

import (
	"math"
	"testing"
	"time"

	"github.com/xdslens/xdslens/xdsgrpc/internal/clusterlb"
)

// TestEjectionTime checks gRFC A50's ejection time, min(base_ejection_time
// * multiplier, max(base_ejection_time, max_ejection_time)), where the
// product passes the largest time.Duration: the ejection lasts as long as
// the bound says, where a wrapped product was negative and returned the
// endpoint at the next interval.
func TestEjectionTime(t *testing.T) {
	const huge = time.Duration(math.MaxInt64)
	for _, tc := range []struct {
		base, maxEjection time.Duration
		multiplier        int
		want              time.Duration
	}{
		{30 * time.Second, 300 * time.Second, 1, 30 * time.Second},
		{30 * time.Second, 300 * time.Second, 3, 90 * time.Second},
		{30 * time.Second, 300 * time.Second, 50, 300 * time.Second},
		{time.Minute, time.Second, 5, time.Minute},
		// 2^62 ns (146 years), ejected a second time: 2^63 ns wraps.
		{1 << 62, huge, 2, huge},
		{huge, huge, 7, huge},
		{1 << 62, 1 << 62, 3, 1 << 62},
	} {
		if got := clusterlb.EjectionTime(tc.base, tc.maxEjection, tc.multiplier); got != tc.want {
			t.Errorf("ejection time for base %v, max %v, multiplier %d = %v, want %v", tc.base, tc.maxEjection, tc.multiplier, got, tc.want)
		}
	}
}
