package server

import (
	"net/http"
	"strconv"

	"github.com/gorilla/mux"

	"github.com/poolflow/poolflow/dag"
)

// Airflow addresses a mapped instance by its task id and map_index (…/taskInstances/load/3, or
// ?map_index=3 on the log route), where poolflow's own id is load[3]. withMapIndex lets the
// Airflow-shaped paths reach the handlers that take the id: it names the instance in the
// path's task_id before they read it. map_index -1 is the task itself, as in Airflow.
func (s *Server) withMapIndex(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		vars := mux.Vars(r)
		raw, inPath := vars["map_index"]
		if !inPath {
			raw = r.URL.Query().Get("map_index")
		}
		if raw == "" {
			next(w, r)
			return
		}
		i, err := strconv.Atoi(raw)
		if err != nil || i < -1 {
			s.fail(w, r, badRequest("map_index", "want -1 (the task itself) or a whole number of at least 0, got %q", raw))
			return
		}
		task := vars["task_id"]
		if _, _, mapped := dag.SplitMapID(task); mapped {
			s.fail(w, r, badRequest("map_index", "task_id %q already names a mapped instance; give the task's own id", task))
			return
		}
		if i >= 0 {
			named := make(map[string]string, len(vars))
			for k, v := range vars {
				named[k] = v
			}
			named["task_id"] = dag.MapID(task, i)
			r = mux.SetURLVars(r, named)
		}
		next(w, r)
	}
}
