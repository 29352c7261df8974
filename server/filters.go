package server

import (
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Query parameters. Every route names the parameters it takes (the route table, kept equal to
// openapi.yaml by a test); any other is a 400 naming it, so a misspelt filter never silently
// returns everything.

// Parameters shared by the list routes.
var (
	pageParams  = []string{"limit", "offset"}
	rangeParams = func(names ...string) []string {
		var out []string
		for _, n := range names {
			out = append(out, n+"_gte", n+"_lte")
		}
		return out
	}
	backfillsParams = append(slices.Clone(pageParams), "dag_id")
	dagsParams      = append(slices.Clone(pageParams), "only_active", "paused", "dag_id_pattern", "tags", "order_by")
	dagRunsParams   = slices.Concat(pageParams, []string{"state", "run_type", "daemon", "order_by", "q"}, rangeParams("execution_date", "logical_date", "start_date", "end_date"))
	tisParams       = slices.Concat(pageParams, []string{"state", "pool", "order_by"}, rangeParams("start_date", "end_date", "duration"))
	poolsParams     = append(slices.Clone(pageParams), "order_by", "team")
	importErrsPars  = append(slices.Clone(pageParams), "order_by")
	forceParam      = []string{"force"}
	updateMask      = []string{"update_mask"}
)

// checkQuery answers 400 for a query parameter the route does not take.
func (s *Server) checkQuery(allowed []string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for name := range r.URL.Query() {
			if !slices.Contains(allowed, name) {
				msg := "unknown query parameter"
				if len(allowed) == 0 {
					msg += " (this route takes none)"
				} else {
					msg += " (this route takes " + strings.Join(allowed, ", ") + ")"
				}
				s.fail(w, r, badRequest(name, "%s", msg))
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// timeQuery reads an optional RFC 3339 time (or a date, midnight UTC). A '+' that the client did
// not escape arrives as a space, and is read as the '+' of the offset it was.
func timeQuery(r *http.Request, name string) (time.Time, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return time.Time{}, nil
	}
	v = strings.ReplaceAll(v, " ", "+")
	if t, err := time.Parse(time.RFC3339Nano, v); err == nil {
		return t.UTC(), nil
	}
	if t, err := time.Parse(time.DateOnly, v); err == nil {
		return t, nil
	}
	return time.Time{}, badRequest(name, "want an RFC 3339 time such as 2026-01-02T15:04:05Z, got %q", v)
}

// timeRange reads name_gte and name_lte.
func timeRange(r *http.Request, name string) (from, to time.Time, err error) {
	if from, err = timeQuery(r, name+"_gte"); err != nil {
		return
	}
	to, err = timeQuery(r, name+"_lte")
	return
}

// listQuery reads a parameter that may repeat (state=a&state=b) or hold a comma-separated list,
// each value one of allowed (nil = any); aliases map another accepted word to its value.
func listQuery(r *http.Request, name string, allowed []string, aliases map[string]string) ([]string, error) {
	var out []string
	for _, raw := range r.URL.Query()[name] {
		for _, v := range strings.Split(raw, ",") {
			v = strings.TrimSpace(v)
			if v == "" {
				continue
			}
			if a, ok := aliases[v]; ok {
				v = a
			}
			if allowed != nil && !slices.Contains(allowed, v) {
				return nil, badRequest(name, "%q is not one of %s", v, strings.Join(allowed, ", "))
			}
			if !slices.Contains(out, v) {
				out = append(out, v)
			}
		}
	}
	return out, nil
}

// orderQuery reads order_by: a field of allowed, with a leading '-' for descending. def applies
// when it is not given.
func orderQuery(r *http.Request, allowed []string, def string) (field string, desc bool, err error) {
	v := r.URL.Query().Get("order_by")
	if v == "" {
		v = def
	}
	field, desc = strings.TrimPrefix(v, "-"), strings.HasPrefix(v, "-")
	if !slices.Contains(allowed, field) {
		return "", false, badRequest("order_by", "%q is not one of %s (prefix - for descending)", v, strings.Join(allowed, ", "))
	}
	return field, desc, nil
}

// floatRange reads name_gte and name_lte as numbers; a missing bound is nil.
func floatRange(r *http.Request, name string) (from, to *float64, err error) {
	read := func(p string) (*float64, error) {
		v := r.URL.Query().Get(p)
		if v == "" {
			return nil, nil
		}
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return nil, badRequest(p, "want a number of seconds, got %q", v)
		}
		return &f, nil
	}
	if from, err = read(name + "_gte"); err != nil {
		return
	}
	to, err = read(name + "_lte")
	return
}

// inRange reports whether t lies in [from, to], zero bounds being open; a zero t is in no
// bounded range.
func inRange(t, from, to time.Time) bool {
	if from.IsZero() && to.IsZero() {
		return true
	}
	if t.IsZero() {
		return false
	}
	return (from.IsZero() || !t.Before(from)) && (to.IsZero() || !t.After(to))
}

// cmpOrder turns a comparison into the requested direction.
func cmpOrder(c int, desc bool) int {
	if desc {
		return -c
	}
	return c
}
