package server

import (
	"cmp"
	"net/http"
	"slices"
	"strings"
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
// file; import_error_id is the position in that order. order_by: import_error_id (default),
// timestamp or filename, - for descending; limit, offset.
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
	field, desc, err := orderQuery(r, []string{"import_error_id", "timestamp", "filename"}, "import_error_id")
	if err != nil {
		s.fail(w, r, err)
		return
	}
	all := make([]ImportErrorJSON, 0, len(rows))
	for i, row := range rows {
		all = append(all, ImportErrorJSON{ImportErrorID: i + 1, Timestamp: row.UpdatedAt.UTC(), Filename: row.File,
			StackTrace: row.Message})
	}
	slices.SortStableFunc(all, func(a, b ImportErrorJSON) int {
		var c int
		switch field {
		case "timestamp":
			c = a.Timestamp.Compare(b.Timestamp)
		case "filename":
			c = strings.Compare(a.Filename, b.Filename)
		}
		return cmpOrder(cmp.Or(c, cmp.Compare(a.ImportErrorID, b.ImportErrorID)), desc)
	})
	lo, hi := p.slice(len(all))
	writeJSON(w, http.StatusOK, importErrorCollection{ImportErrors: all[lo:hi], TotalEntries: len(all)})
}
