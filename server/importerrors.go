package server

import (
	"net/http"
	"time"
)

// ImportErrorJSON is Airflow's ImportError object.
type ImportErrorJSON struct {
	ImportErrorID int       `json:"import_error_id"`
	Timestamp     time.Time `json:"timestamp"`
	Filename      string    `json:"filename"`
	StackTrace    string    `json:"stack_trace"`
}

type importErrorCollection struct {
	ImportErrors []ImportErrorJSON `json:"import_errors"`
	TotalEntries int               `json:"total_entries"`
}

// listImportErrors is GET /api/v1/importErrors: the DAG files that failed validation (§2.3), by
// file; import_error_id is the position in that order.
func (s *Server) listImportErrors(w http.ResponseWriter, r *http.Request) {
	p, err := pageOf(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	rows, err := s.cfg.Store.ListImportErrors(r.Context())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	out := importErrorCollection{ImportErrors: []ImportErrorJSON{}, TotalEntries: len(rows)}
	lo, hi := p.slice(len(rows))
	for i := lo; i < hi; i++ {
		out.ImportErrors = append(out.ImportErrors, ImportErrorJSON{ImportErrorID: i + 1,
			Timestamp: rows[i].UpdatedAt.UTC(), Filename: rows[i].File, StackTrace: rows[i].Message})
	}
	writeJSON(w, http.StatusOK, out)
}
