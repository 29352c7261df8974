package retention

import (
	"context"
	"sync"
	"time"

	"github.com/poolflow/poolflow/config"
)

// Pruner is a daemon's retention: every Every it deletes what the retention in force selects,
// batch by batch, pausing between batches as long as the batch took (at least MinPause) so that
// the scheduler's passes take the writers' lock in between; every WalkEvery it walks the logs
// folder too. Every serve daemon runs one: their batches take turns under the writers' lock,
// and one finds nothing left that another deleted.
type Pruner struct {
	Cleaner
	// Retention is the retention in force (poolflow.yaml, reloaded live); Now the daemon's clock.
	Retention func() config.Retention
	Now       func() time.Time
	// Every is how often a cycle runs (default 1 min); WalkEvery how often the logs folder is
	// walked (default 1 h; the first cycle walks it). MinPause is the least pause between two
	// batches (default 10 ms).
	Every, WalkEvery, MinPause time.Duration

	mu       sync.Mutex
	lastWalk time.Time
	cancel   context.CancelFunc
	done     chan struct{}
	warned   time.Time
}

func (p *Pruner) fill() {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&p.Every, time.Minute)
	def(&p.WalkEvery, time.Hour)
	def(&p.MinPause, 10*time.Millisecond)
	if p.Now == nil {
		p.Now = time.Now
	}
}

// Cycle deletes everything the retention in force selects at Now, batch after batch, and walks
// the logs folder when it is due (walk forces it). It returns what it deleted.
func (p *Pruner) Cycle(ctx context.Context, walk bool) (Result, error) {
	p.fill()
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.Now()
	cut := CutoffsAt(p.Retention(), now)
	var total Result
	if !cut.Any() {
		return total, nil
	}
	for {
		began := time.Now()
		res, more, err := p.Step(ctx, cut, now)
		total.add(res)
		if err != nil {
			return total, err
		}
		if !more {
			break
		}
		if err := sleep(ctx, max(time.Since(began), p.MinPause)); err != nil {
			return total, err
		}
	}
	if walk || p.lastWalk.IsZero() || now.Sub(p.lastWalk) >= p.WalkEvery {
		n, err := p.Walk(ctx, cut.Logs)
		total.LogDirs += n
		if err != nil {
			return total, err
		}
		p.lastWalk = now
	}
	return total, nil
}

// Start runs a cycle every Every until Stop, the first one Every after it starts.
func (p *Pruner) Start(ctx context.Context) {
	p.fill()
	ctx, p.cancel = context.WithCancel(ctx)
	p.done = make(chan struct{})
	go func() {
		defer close(p.done)
		t := time.NewTicker(p.Every)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			res, err := p.Cycle(ctx, false)
			switch {
			case err != nil && ctx.Err() != nil:
				return
			case err != nil:
				if time.Since(p.warned) >= time.Minute {
					p.warned = time.Now()
					p.log().Warn("retention: a cycle failed; it is tried again at the next", "err", err)
				}
			case res.Runs+res.Events+res.Versions+res.Capacities+res.LogDirs > 0:
				p.log().Info("retention: history past its age deleted", "runs", res.Runs, "events", res.Events,
					"versions", res.Versions, "pool_capacities", res.Capacities, "log_folders", res.LogDirs, "batches", res.Batches)
			}
		}
	}()
}

// Stop ends the cycles and waits for the one running; it is safe to call twice, or without
// Start.
func (p *Pruner) Stop() {
	if p.cancel == nil {
		return
	}
	p.cancel()
	<-p.done
}
