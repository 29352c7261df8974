package server

import "time"

// ConfigHealthJSON is the configuration part of GET /api/v1/health: which poolflow.yaml is in
// force since when, and, when the newest file could not be used (or a stored pool change left
// the one in force with problems), why. status is "unhealthy" then; the previous configuration
// stays in force.
type ConfigHealthJSON struct {
	Status   string     `json:"status"`
	File     *string    `json:"file"`
	SHA256   *string    `json:"sha256"` // of the file's contents in force
	LoadedAt *time.Time `json:"loaded_at"`
	Error    *string    `json:"error"`
	// RestartPending lists settings changed in the file that apply only after a restart.
	RestartPending []string `json:"restart_pending"`
}

func (s *Server) configHealth() ConfigHealthJSON {
	st := s.ConfigStatus()
	out := ConfigHealthJSON{Status: "healthy", File: strOrNil(st.File), SHA256: strOrNil(st.SHA256), LoadedAt: ts(st.LoadedAt),
		Error: strOrNil(st.Error), RestartPending: st.Restart}
	if out.RestartPending == nil {
		out.RestartPending = []string{}
	}
	if st.Error != "" {
		out.Status = "unhealthy"
	}
	return out
}
