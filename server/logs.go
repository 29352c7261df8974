package server

import (
	"errors"
	"io/fs"
	"net/http"
	"os"
	"strconv"

	"github.com/poolflow/poolflow/executor/runner"
)

// getLog is GET .../taskInstances/{task_id}/logs/{try_number}: the attempt's log as text/plain,
// readable while the attempt runs. Range requests are honoured, so a client can follow a running
// attempt by asking for the bytes after those it has.
func (s *Server) getLog(w http.ResponseWriter, r *http.Request) {
	raw := pathVar(r, "try_number")
	try, err := strconv.Atoi(raw)
	if err != nil || try < 1 {
		s.fail(w, r, badRequest("try_number", "want a whole number of at least 1, got %q", raw))
		return
	}
	t, err := s.taskInstanceOf(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if try > t.ti.TryNumber {
		s.fail(w, r, notFound("task %s has no try %d (its latest is %d)", t.ti.TaskID, try, t.ti.TryNumber))
		return
	}
	// The path is built from stored ids, never from the request's raw text, and LogPath
	// flattens separators, so a request cannot point outside the logs folder.
	path := runner.LogPath(s.cfg.StateDir, t.run.DAGID, t.run.RunID, t.ti.TaskID, try)
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		s.fail(w, r, notFound("no log for try %d of task %s", try, t.ti.TaskID))
		return
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		s.fail(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	http.ServeContent(w, r, "", info.ModTime(), f)
}
