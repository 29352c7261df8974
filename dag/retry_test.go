package dag

import (
	"math"
	"testing"
	"time"
)

func TestRetryDelay(t *testing.T) {
	t.Parallel()
	const s = time.Second
	tests := []struct {
		name string
		task Task
		try  int
		want time.Duration
	}{
		{"fixed, first retry", Task{RetryDelay: 30 * s}, 1, 30 * s},
		{"fixed, later retry", Task{RetryDelay: 30 * s}, 5, 30 * s},
		{"zero delay", Task{}, 3, 0},
		{"backoff try 1", Task{RetryDelay: 30 * s, RetryExponentialBackoff: true}, 1, 30 * s},
		{"backoff try 2", Task{RetryDelay: 30 * s, RetryExponentialBackoff: true}, 2, 60 * s},
		{"backoff try 3", Task{RetryDelay: 30 * s, RetryExponentialBackoff: true}, 3, 120 * s},
		{"backoff try 5", Task{RetryDelay: 30 * s, RetryExponentialBackoff: true}, 5, 480 * s},
		{"backoff capped", Task{RetryDelay: 30 * s, RetryExponentialBackoff: true, MaxRetryDelay: 100 * s}, 3, 100 * s},
		{"backoff under the cap", Task{RetryDelay: 30 * s, RetryExponentialBackoff: true, MaxRetryDelay: 100 * s}, 2, 60 * s},
		{"backoff exactly at the cap", Task{RetryDelay: 25 * s, RetryExponentialBackoff: true, MaxRetryDelay: 100 * s}, 3, 100 * s},
		{"backoff capped below the first delay", Task{RetryDelay: 10 * time.Minute, RetryExponentialBackoff: true, MaxRetryDelay: time.Minute}, 1, time.Minute},
		{"no cap without backoff", Task{RetryDelay: 10 * time.Minute, MaxRetryDelay: time.Minute}, 1, 10 * time.Minute},
		{"huge try saturates", Task{RetryDelay: 30 * s, RetryExponentialBackoff: true}, 1 << 30, math.MaxInt64},
		{"huge try capped", Task{RetryDelay: 30 * s, RetryExponentialBackoff: true, MaxRetryDelay: time.Hour}, 1 << 30, time.Hour},
		{"try below 1 is the first", Task{RetryDelay: 30 * s, RetryExponentialBackoff: true}, 0, 30 * s},
		{"negative delay is none", Task{RetryDelay: -s, RetryExponentialBackoff: true}, 4, 0},
	}
	for _, tt := range tests {
		if got := RetryDelay(&tt.task, tt.try); got != tt.want {
			t.Errorf("%s: RetryDelay(try %d) = %v, want %v", tt.name, tt.try, got, tt.want)
		}
	}
}

func TestRetryDelayNeverDecreases(t *testing.T) {
	t.Parallel()
	for _, base := range []time.Duration{1, time.Second, 7 * time.Minute, math.MaxInt64 / 3} {
		for _, limit := range []time.Duration{0, time.Hour} {
			task := &Task{RetryDelay: base, RetryExponentialBackoff: true, MaxRetryDelay: limit}
			prev := time.Duration(0)
			for try := 1; try <= 100; try++ {
				d := RetryDelay(task, try)
				if d < prev || d < 0 || (limit > 0 && d > limit) {
					t.Fatalf("base %v cap %v: try %d gives %v after %v", base, limit, try, d, prev)
				}
				prev = d
			}
		}
	}
}
