package runner

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"time"

	"github.com/poolflow/poolflow/dag"
	"github.com/poolflow/poolflow/executor/attempt"
)

// pokeResult is one check of a sensor.
type pokeResult int

const (
	pokeNotYet pokeResult = iota
	pokeMet
	pokeError
)

// poke runs a sensor in poke mode: it holds its claims and checks every poke_interval (backed
// off up to max_wait) until the check is met or timeout passes, measured from the first poke.
// A timeout fails with no retry, or skips the task with soft_fail (§5.1).
func (r *Runner) poke(ctx context.Context, a *attemptRun, logf *attemptLog, ev *attempt.Ended) {
	s := a.spec.Task.Sensor
	first := r.cfg.Clock.Now()
	interval := s.PokeInterval
	for n := 1; ; n++ {
		res, msg := r.check(ctx, a, logf)
		fmt.Fprintf(logf, "poke %d: %s\n", n, msg)
		switch res {
		case pokeMet:
			ev.OK = true
			return
		case pokeError:
			ev.Reason = "sensor check failed: " + msg
			return
		}
		if r.cfg.Clock.Now().Sub(first) >= s.Timeout {
			timedOut(s, ev)
			return
		}
		wait := interval
		if left := s.Timeout - r.cfg.Clock.Now().Sub(first); wait > left {
			wait = left
		}
		select {
		case <-ctx.Done():
			ev.Reason = "sensor stopped"
			return
		case <-r.cfg.Clock.After(wait):
		}
		if s.ExponentialBackoff {
			interval *= 2
			if s.MaxWait > 0 && interval > s.MaxWait {
				interval = s.MaxWait
			}
		}
	}
}

// pokeOnce is one admission of a reschedule sensor: one check, then the loop releases its
// claims (but those of include_deferred pools) until the next poke (§5.1).
func (r *Runner) pokeOnce(ctx context.Context, a *attemptRun, logf *attemptLog, ev *attempt.Ended) {
	res, msg := r.check(ctx, a, logf)
	fmt.Fprintf(logf, "poke: %s\n", msg)
	switch res {
	case pokeMet:
		ev.OK = true
	case pokeError:
		ev.Reason = "sensor check failed: " + msg
	default:
		ev.Reschedule = true
	}
}

func timedOut(s *dag.Sensor, ev *attempt.Ended) {
	ev.Reason = fmt.Sprintf("sensor timeout %s passed", s.Timeout)
	ev.NoRetry = true
	ev.Skip = s.SoftFail
}

// check pokes once: a command (exit 0 met, 1 not yet, other an error), a file, or an HTTP URL.
func (r *Runner) check(ctx context.Context, a *attemptRun, logf *attemptLog) (pokeResult, string) {
	s := a.spec.Task.Sensor
	switch {
	case len(s.Command) > 0:
		ok, reason := r.runProcess(ctx, a, logf, s.Command)
		switch {
		case ok:
			return pokeMet, "command exited 0"
		case reason == "exit status 1":
			return pokeNotYet, "command exited 1 (not yet)"
		}
		return pokeError, reason
	case s.FileExists != "":
		if _, err := os.Stat(s.FileExists); err == nil {
			return pokeMet, s.FileExists + " exists"
		}
		return pokeNotYet, s.FileExists + " does not exist yet"
	case s.HTTP != nil:
		want := s.HTTP.Status
		if want == 0 {
			want = http.StatusOK
		}
		rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		req, err := http.NewRequestWithContext(rctx, http.MethodGet, s.HTTP.URL, nil)
		if err != nil {
			return pokeError, err.Error()
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return pokeNotYet, err.Error()
		}
		resp.Body.Close()
		if resp.StatusCode == want {
			return pokeMet, fmt.Sprintf("GET %s answered %d", s.HTTP.URL, resp.StatusCode)
		}
		return pokeNotYet, fmt.Sprintf("GET %s answered %d, want %d", s.HTTP.URL, resp.StatusCode, want)
	}
	return pokeError, "sensor has no check"
}
