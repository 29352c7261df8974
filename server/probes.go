package server

import (
	"context"
	"fmt"
	"net/http"
	"time"
)

// Probes for Kubernetes and load balancers. GET /api/v1/health is Airflow's: it always answers
// 200 and its statuses say what is unhealthy, which a probe that reads only the status code
// cannot use. /livez and /readyz answer 200 or 503 with the checks that decided it:
//
//   - live: the process serves HTTP and its scheduler loop is not wedged: the loop has not
//     ended and it came round within loopStall (it does every 50 ms while idle, and between
//     passes, each bounded by the store's 5-second operation bound). A store outage does not
//     make a daemon unlive: restarting it would not bring the store back. While `serve` waits
//     for the store at start it is live.
//   - ready: live, and the daemon has started (not waiting for the store), the store answers a
//     read within readyTimeout, and the daemon holds its owner lease (§9: its owner row is this
//     start's, not handled by another daemon, and not expired). A daemon that cannot write
//     keeps its lease for up to 30 s after its last renewal, then is not ready.

// loopStall is how long the scheduler loop may go without coming round before /livez calls it
// wedged: the claim lease, past which a daemon stuck in a pass has lost its claims anyway.
const loopStall = 30 * time.Second

// readyTimeout bounds the store reads of /readyz; a probe's timeout should be longer (3 s).
const readyTimeout = 2 * time.Second

// probeJSON is the body of /livez and /readyz.
type probeJSON struct {
	Status string      `json:"status"` // ok or fail
	Checks []checkJSON `json:"checks"`
}

type checkJSON struct {
	Name   string `json:"name"`
	Status string `json:"status"` // ok or fail
	Detail string `json:"detail,omitempty"`
}

// A probe and each of its checks say "ok" or "fail" (the health check format of the IETF
// draft and of Kubernetes' own endpoints say pass/fail; the word failed is a task's state here).
const (
	probeOK   = "ok"
	probeFail = "fail"
)

func passed(name, detail string) checkJSON {
	return checkJSON{Name: name, Status: probeOK, Detail: detail}
}

func failed(name, detail string) checkJSON {
	return checkJSON{Name: name, Status: probeFail, Detail: detail}
}

// writeProbe answers 200 when every check passed, else 503.
func writeProbe(w http.ResponseWriter, checks ...checkJSON) {
	out := probeJSON{Status: probeOK, Checks: checks}
	status := http.StatusOK
	for _, c := range checks {
		if c.Status != probeOK {
			out.Status, status = probeFail, http.StatusServiceUnavailable
		}
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, status, out)
}

// loopCheck judges the scheduler loop from when it last came round.
func loopCheck(turned, now time.Time) checkJSON {
	if turned.IsZero() {
		return failed("scheduler", "the scheduler loop has not started")
	}
	if since := now.Sub(turned); since > loopStall {
		return failed("scheduler", fmt.Sprintf("the scheduler loop has not come round for %s (wedged)",
			since.Round(time.Second)))
	}
	return passed("scheduler", "")
}

// schedulerCheck is the liveness of this process's scheduler; without one in the process (a
// server that only reads) the check is left out.
func (s *Server) schedulerCheck() []checkJSON {
	if s.cfg.Daemon == nil {
		return nil
	}
	if _, err := s.daemon(); err != nil {
		return []checkJSON{failed("scheduler", err.Error())}
	}
	return []checkJSON{loopCheck(s.cfg.Daemon.LoopTurned(), time.Now())}
}

// livez is GET /livez.
func (s *Server) livez(w http.ResponseWriter, r *http.Request) {
	writeProbe(w, append([]checkJSON{passed("http", "")}, s.schedulerCheck()...)...)
}

// readyz is GET /readyz.
func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	checks := s.schedulerCheck()
	if s.cfg.Daemon == nil {
		checks = append(checks, failed("scheduler", "the scheduler is not running in this process"))
	}
	ctx, cancel := context.WithTimeout(r.Context(), readyTimeout)
	defer cancel()
	if _, err := s.cfg.Store.ListPools(ctx); err != nil {
		checks = append(checks, failed("store", err.Error()))
	} else {
		checks = append(checks, passed("store", ""))
	}
	if s.cfg.Daemon != nil {
		if err := s.cfg.Daemon.HoldsLease(ctx); err != nil {
			checks = append(checks, failed("lease", err.Error()))
		} else {
			checks = append(checks, passed("lease", ""))
		}
	}
	writeProbe(w, checks...)
}

// startingProbe answers /livez and /readyz while `serve` waits for the store to start its
// scheduler: live, not ready.
func startingProbe(w http.ResponseWriter, path, why string) {
	if path == "/livez" {
		writeProbe(w, passed("http", ""), passed("scheduler", "starting: "+why))
		return
	}
	writeProbe(w, failed("scheduler", "starting: "+why))
}
