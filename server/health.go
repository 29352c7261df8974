package server

import (
	"net/http"
	"time"
)

type statusJSON struct {
	Status string `json:"status"`
}

type schedulerJSON struct {
	Status                   string     `json:"status"`
	LatestSchedulerHeartbeat *time.Time `json:"latest_scheduler_heartbeat"`
}

type healthJSON struct {
	Metadatabase statusJSON       `json:"metadatabase"`
	Scheduler    schedulerJSON    `json:"scheduler"`
	Config       ConfigHealthJSON `json:"config"` // config_status.go
}

// health is GET /api/v1/health in Airflow's shape. It always answers 200; the statuses say
// whether the store can be read and whether this process's scheduler loop is running. Probes
// that read only the status code use /livez and /readyz (probes.go).
func (s *Server) health(w http.ResponseWriter, r *http.Request) {
	out := healthJSON{Metadatabase: statusJSON{"healthy"}, Scheduler: schedulerJSON{Status: "healthy"}}
	if _, err := s.cfg.Store.ListPools(r.Context()); err != nil {
		out.Metadatabase.Status = "unhealthy"
	}
	if _, err := s.daemon(); err != nil {
		out.Scheduler.Status = "unhealthy"
	} else if hb, err := s.cfg.Store.DaemonHeartbeat(r.Context(), s.cfg.Daemon.ID()); err == nil {
		out.Scheduler.LatestSchedulerHeartbeat = ts(hb)
	}
	out.Config = s.configHealth()
	writeJSON(w, http.StatusOK, out)
}

// startingJSON is /health while the process waits for the store to start its scheduler.
type startingJSON struct {
	healthJSON
	Detail string `json:"detail"`
}

// Starting is the handler `poolflow serve` answers with while its scheduler waits for a busy or
// unavailable store (§3.5, §4.9): /api/v1/health says the store and the scheduler are
// unhealthy, with why, /livez answers 200 and /readyz 503, and every other route answers 503
// pool state is unavailable.
func Starting(reason func() string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		why := reason()
		if r.URL.Path == "/livez" || r.URL.Path == "/readyz" {
			startingProbe(w, r.URL.Path, why)
			return
		}
		if r.URL.Path == "/api/v1/health" {
			out := startingJSON{healthJSON: healthJSON{Metadatabase: statusJSON{"unhealthy"},
				Scheduler: schedulerJSON{Status: "unhealthy"}}, Detail: "starting: " + why}
			writeJSON(w, http.StatusServiceUnavailable, out)
			return
		}
		writeProblem(w, http.StatusServiceUnavailable, unavailableDetail+": poolflow is starting: "+why)
	})
}
