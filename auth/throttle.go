package auth

import (
	"math"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Throttle slows down password guessing (§15): each failed sign-in takes a token from the
// bucket of its user name and from the bucket of its client address; while either is empty,
// sign-ins for that name or from that address are refused before any password is checked (so
// a flood costs no bcrypt work either). Buckets refill on their own: once a flood stops, the
// real user gets in again after a few seconds. A success leaves the buckets as they are.
type Throttle struct {
	mu      sync.Mutex
	names   map[string]*rate.Limiter
	addrs   map[string]*rate.Limiter
	perName rate.Limit
	perAddr rate.Limit
	burst   int
}

// NewThrottle allows burst failed sign-ins at once per name and per address, then one per
// nameEvery per name and one per addrEvery per address.
func NewThrottle(burst int, nameEvery, addrEvery time.Duration) *Throttle {
	return &Throttle{names: map[string]*rate.Limiter{}, addrs: map[string]*rate.Limiter{},
		perName: rate.Every(nameEvery), perAddr: rate.Every(addrEvery), burst: burst}
}

// DefaultThrottle: 10 failures at once, then one every 6 s per name (10 a minute) and one every
// 2 s per address (an office behind one address has several people).
func DefaultThrottle() *Throttle { return NewThrottle(10, 6*time.Second, 2*time.Second) }

// maxKeys bounds the buckets kept; past it, full buckets (nothing to remember) are dropped.
const maxKeys = 10_000

func (t *Throttle) limiter(m map[string]*rate.Limiter, key string, r rate.Limit, now time.Time) *rate.Limiter {
	l, ok := m[key]
	if !ok {
		if len(m) >= maxKeys {
			for k, v := range m {
				if v.TokensAt(now) >= float64(t.burst) {
					delete(m, k)
				}
			}
		}
		l = rate.NewLimiter(r, t.burst)
		m[key] = l
	}
	return l
}

// Wait says how long a sign-in for name from addr must wait: 0 when it may be checked now.
func (t *Throttle) Wait(name, addr string, now time.Time) time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	var wait time.Duration
	for _, l := range []*rate.Limiter{t.limiter(t.names, name, t.perName, now), t.limiter(t.addrs, addr, t.perAddr, now)} {
		if tok := l.TokensAt(now); tok < 1 {
			secs := (1 - tok) / float64(l.Limit())
			wait = max(wait, time.Duration(math.Ceil(secs*float64(time.Second))))
		}
	}
	return wait
}

// Failed records a failed sign-in for name from addr.
func (t *Throttle) Failed(name, addr string, now time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.limiter(t.names, name, t.perName, now).AllowN(now, 1)
	t.limiter(t.addrs, addr, t.perAddr, now).AllowN(now, 1)
}
