package dag

import (
	"math"
	"time"
)

// RetryDelay is how long to wait after attempt try (1-based) failed before attempt try+1
// (§3.3): the task's RetryDelay, or with exponential backoff RetryDelay × 2^(try-1) capped at
// MaxRetryDelay when that is set (as in Airflow, the cap belongs to the backoff). It
// saturates instead of overflowing.
func RetryDelay(t *Task, try int) time.Duration {
	d := max(t.RetryDelay, 0)
	if !t.RetryExponentialBackoff || d == 0 {
		return d
	}
	for k := 1; k < try; k++ {
		if d > math.MaxInt64/2 {
			d = math.MaxInt64
			break
		}
		d *= 2
	}
	if t.MaxRetryDelay > 0 && d > t.MaxRetryDelay {
		d = t.MaxRetryDelay
	}
	return d
}
