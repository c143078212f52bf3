package clusterlb

import "time"

// EjectionTime is how long an ejection with the given multiplier lasts.
func EjectionTime(base, maxEjection time.Duration, multiplier int) time.Duration {
	return ejectionTime(base, maxEjection, multiplier)
}

// StridePicks returns a func that picks an index of weights as the
// locality schedule does.
func StridePicks(weights []uint32) func() int { return newStride(weights, 0).next }
