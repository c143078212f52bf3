package clusterlb

import "time"

// EjectionTime is how long an ejection with the given multiplier lasts.
func EjectionTime(base, maxEjection time.Duration, multiplier int) time.Duration {
	return ejectionTime(base, maxEjection, multiplier)
}
