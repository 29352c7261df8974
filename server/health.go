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
// whether the store can be read and whether this process's scheduler loop is running.
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
