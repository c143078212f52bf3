package xdsduration

import (
	"fmt"
	"math"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"
)

// MaxSeconds is the largest seconds of a valid google.protobuf.Duration
// (10,000 years), the largest gRPC takes.
const MaxSeconds = 315_576_000_000

// Parse returns d as a time.Duration, saturated at the largest one, or an
// error that names the part of d out of range (gRPC C-core's
// ParseDuration). A nil d is 0.
func Parse(d *durationpb.Duration) (time.Duration, error) {
	s, n := d.GetSeconds(), d.GetNanos()
	switch {
	case s < 0 || s > MaxSeconds:
		return 0, fmt.Errorf("seconds %d is not in [0, %d]", s, int64(MaxSeconds))
	case n < 0 || n > 999_999_999:
		return 0, fmt.Errorf("nanos %d is not in [0, 999999999]", n)
	}
	if s > (math.MaxInt64-int64(n))/int64(time.Second) {
		return math.MaxInt64, nil
	}
	return time.Duration(s)*time.Second + time.Duration(n), nil
}

// Times returns d*n, saturated at the largest time.Duration, for d and n
// not negative.
func Times(d time.Duration, n int64) time.Duration {
	if n != 0 && d > math.MaxInt64/time.Duration(n) {
		return math.MaxInt64
	}
	return d * time.Duration(n)
}
