package server

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/poolflow/poolflow/dag"
	"github.com/poolflow/poolflow/store"
)

// DAG versions over the API (§12), after Airflow 3's: GET /dags/{dag_id}/versions lists a
// DAG's versions, GET /dagSources/{dag_id}?version_number=N answers one version's source.

// DAGVersionJSON is one version of a DAG: Airflow 3's DagVersion (version_number, created_at:
// when a daemon first loaded it) with poolflow's hash, format (yaml: the file's text; go: a Go
// DAG's canonical JSON), the file, when it was last seen (loaded, or replaced as the current
// one) and whether it is the current one.
type DAGVersionJSON struct {
	DAGID         string    `json:"dag_id"`
	VersionNumber int       `json:"version_number"`
	Hash          string    `json:"hash"`
	Format        string    `json:"format"`
	FileLoc       *string   `json:"fileloc"`
	CreatedAt     time.Time `json:"created_at"`
	LastSeen      time.Time `json:"last_seen"`
	IsCurrent     bool      `json:"is_current"`
}

type dagVersionCollection struct {
	DAGVersions  []DAGVersionJSON `json:"dag_versions"`
	TotalEntries int              `json:"total_entries"`
}

// DAGSourceJSON is Airflow 3's DAGSourceResponse (content, dag_id, version_number) with the
// version's format, hash and file.
type DAGSourceJSON struct {
	DAGID         string  `json:"dag_id"`
	VersionNumber int     `json:"version_number"`
	Content       string  `json:"content"`
	Format        string  `json:"format"`
	Hash          string  `json:"hash"`
	FileLoc       *string `json:"fileloc"`
	IsCurrent     bool    `json:"is_current"`
}

func versionView(v store.DAGVersion) DAGVersionJSON {
	return DAGVersionJSON{DAGID: v.DAGID, VersionNumber: v.Version, Hash: v.Hash, Format: v.Format, FileLoc: strOrNil(v.File),
		CreatedAt: v.FirstSeen.UTC(), LastSeen: v.LastSeen.UTC(), IsCurrent: v.Current}
}

// versionsParams are the query parameters of the versions list.
var versionsParams = pageParams

// DAGVersions lists a DAG's versions, newest first, and how many it has; a DAG neither loaded
// nor stored is a 404.
func (s *Server) DAGVersions(ctx context.Context, dagID string, limit, offset int) ([]DAGVersionJSON, int, error) {
	vs, total, err := s.cfg.Store.ListDAGVersions(ctx, dagID, limit, offset)
	if err != nil {
		return nil, 0, err
	}
	if total == 0 {
		if _, err := s.dagByID(ctx, dagID); err != nil {
			return nil, 0, err
		}
	}
	out := make([]DAGVersionJSON, 0, len(vs))
	for _, v := range vs {
		out = append(out, versionView(v))
	}
	return out, total, nil
}

// listDAGVersions is GET /api/v1/dags/{dag_id}/versions: limit, offset.
func (s *Server) listDAGVersions(w http.ResponseWriter, r *http.Request) {
	p, err := pageOf(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	vs, total, err := s.DAGVersions(r.Context(), pathVar(r, "dag_id"), p.limit, p.offset)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, dagVersionCollection{DAGVersions: vs, TotalEntries: total})
}

// DAGSource is version n of a DAG's source (n 0: its current version); 404 when it is not
// stored.
func (s *Server) DAGSource(ctx context.Context, dagID string, n int) (DAGSourceJSON, error) {
	v, err := s.cfg.Store.GetDAGVersion(ctx, dagID, n)
	if errors.Is(err, store.ErrNotFound) {
		return DAGSourceJSON{}, notFound("%s", strings.TrimPrefix(err.Error(), store.ErrNotFound.Error()+": "))
	} else if err != nil {
		return DAGSourceJSON{}, err
	}
	return DAGSourceJSON{DAGID: v.DAGID, VersionNumber: v.Version, Content: v.Source, Format: v.Format, Hash: v.Hash,
		FileLoc: strOrNil(v.File), IsCurrent: v.Current}, nil
}

// sourceParams are the query parameters of a DAG's source.
var sourceParams = []string{"version_number"}

// getDAGSource is GET /api/v1/dagSources/{dag_id}?version_number=N (default: the current
// version). With Accept: text/plain the answer is the text alone, as Airflow's.
func (s *Server) getDAGSource(w http.ResponseWriter, r *http.Request) {
	n := 0
	if v := r.URL.Query().Get("version_number"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 1 {
			s.fail(w, r, badRequest("version_number", "want a version number from 1, got %q", v))
			return
		}
	}
	src, err := s.DAGSource(r.Context(), pathVar(r, "dag_id"), n)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if accepts(r, "text/plain") {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		_, _ = w.Write([]byte(src.Content))
		return
	}
	writeJSON(w, http.StatusOK, src)
}

// accepts reports whether the request's Accept header names mediaType before any JSON type.
func accepts(r *http.Request, mediaType string) bool {
	for _, part := range strings.Split(r.Header.Get("Accept"), ",") {
		t := strings.TrimSpace(strings.SplitN(part, ";", 2)[0])
		switch {
		case t == mediaType:
			return true
		case strings.HasSuffix(t, "/json"):
			return false
		}
	}
	return false
}

// loadedVersion is the number of the version a loaded DAG's definition is stored as: the
// DAG's current version when its hash is the loaded one's, else 0 (not recorded yet, or
// another daemon loaded another text since).
func (s *Server) loadedVersion(ctx context.Context, d *dag.DAG) int {
	v, err := s.cfg.Store.GetDAGVersion(ctx, d.ID, 0)
	if err != nil || v.Hash != d.SourceHash() {
		return 0
	}
	return v.Version
}

func intOrNil(n int) *int {
	if n == 0 {
		return nil
	}
	return &n
}
