package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"mime"
	"net/http"
	"os"
	"strconv"
	"strings"

	"github.com/poolflow/poolflow/store"
)

// getLog is GET .../taskInstances/{task_id}/logs/{try_number}: the attempt's log as text/plain,
// readable while the attempt runs. Range requests are honoured, so a client can follow a running
// attempt by asking for the bytes after those it has. The log of an attempt another daemon ran
// is read from that daemon (logsource.go): the same answer, streamed through this one.
// ?download=true asks for it as a file to save (Content-Disposition: attachment, named for the
// attempt).
func (s *Server) getLog(w http.ResponseWriter, r *http.Request) {
	raw := pathVar(r, "try_number")
	try, err := strconv.Atoi(raw)
	if err != nil || try < 1 {
		s.fail(w, r, badRequest("try_number", "want a whole number of at least 1, got %q", raw))
		return
	}
	download := false
	if v := r.URL.Query().Get("download"); v != "" {
		if download, err = strconv.ParseBool(v); err != nil {
			s.fail(w, r, badRequest("download", "want true or false, got %q", v))
			return
		}
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
	a := attemptRef{run: t.run, taskID: t.ti.TaskID, state: t.ti.State, current: t.ti.TryNumber, entry: t.entry, try: try}
	home, err := s.locateLog(r.Context(), a, r.Header.Get(forwardedHeader) != "")
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if download {
		w.Header().Set("Content-Disposition", LogAttachment(t.run.DAGID, t.run.RunID, t.ti.TaskID, try))
	}
	if home.remote != nil {
		s.proxyLog(w, r, *home.remote, a)
		return
	}
	// The path is built from stored ids, never from the request's raw text, and LogPath
	// flattens separators, so a request cannot point outside the logs folder.
	f, err := os.Open(home.path)
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
	w.Header().Set(logDaemonHeader, orNone(s.selfID()))
	http.ServeContent(w, r, "", info.ModTime(), f)
}

// proxyLog answers r with the log of attempt a read from daemon o: the caller's Authorization,
// range and conditions go along, and the answer — status, the headers of a file's answer, the
// bytes — comes back as it is streamed, so following a running attempt through any daemon is
// what it is on the daemon that runs it.
func (s *Server) proxyLog(w http.ResponseWriter, r *http.Request, o store.Owner, a attemptRef) {
	ctx, cancel := context.WithTimeout(r.Context(), logExchange)
	defer cancel()
	hdr := http.Header{}
	for _, k := range passRequest {
		if v := r.Header.Values(k); len(v) > 0 {
			hdr[k] = v
		}
	}
	resp, err := s.fetchLog(ctx, o, a, r.Header.Get("Authorization"), hdr)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	defer resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusOK, http.StatusPartialContent, http.StatusNotModified, http.StatusRequestedRangeNotSatisfiable:
	default:
		s.fail(w, r, remoteRefusal(o, a, resp))
		return
	}
	for _, k := range passResponse {
		if v := resp.Header.Values(k); len(v) > 0 {
			w.Header()[k] = v
		}
	}
	w.WriteHeader(resp.StatusCode)
	if _, err := io.Copy(w, resp.Body); err != nil && r.Context().Err() == nil {
		// The status is sent: the client sees a short body, the daemon's log says why.
		s.log.Warn("api: a log read from another daemon broke off", "daemon", o.ID, "api", o.API,
			"dag_id", a.run.DAGID, "run_id", a.run.RunID, "task_id", a.taskID, "try_number", a.try, "err", err)
	}
}

// LogAttachment is the Content-Disposition of a log downloaded as a file: an attachment named
// <dag>_<run>_<task>_try<N>.log, the ids' characters that a file name cannot hold (separators,
// quotes, controls) replaced by '_'; mime.FormatMediaType quotes it, and adds the RFC 2231
// filename* form a non-ASCII id needs.
func LogAttachment(dagID, runID, taskID string, try int) string {
	name := strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || strings.ContainsRune(`/\:*?"<>|`, r) {
			return '_'
		}
		return r
	}, fmt.Sprintf("%s_%s_%s_try%d.log", dagID, runID, taskID, try))
	if v := mime.FormatMediaType("attachment", map[string]string{"filename": name}); v != "" {
		return v
	}
	return "attachment"
}

// passRequest are the headers of a log read forwarded with it; passResponse those of the
// answer passed back.
var (
	passRequest  = []string{"Range", "If-Range", "If-Modified-Since", "If-Unmodified-Since"}
	passResponse = []string{"Content-Type", "Content-Length", "Content-Range", "Accept-Ranges", "Last-Modified",
		"X-Content-Type-Options", logDaemonHeader}
)

// ErrNoLog is ReadLog's answer for an attempt that wrote no log (yet), here or on the daemon
// that ran it.
var ErrNoLog = errors.New("no log")

// LogRange is the part of a log ReadLog reads: with Tail > 0 its last Tail bytes, else at most
// Max bytes from From.
type LogRange struct {
	From, Max, Tail int64
}

// LogPart is what ReadLog read.
type LogPart struct {
	Text  []byte
	Start int64 // where Text begins in the log
	Size  int64 // how long the log was when it was read
}

// ReadLog reads part of the log of try try of task instance d, wherever it is (the web UI's
// task page and its follower): from this daemon's state folder, or from the daemon that ran it
// with token, the caller's API token ("" none), as its credentials. ErrNoLog when there is no
// log; an error of the API's (StatusOf) when it is on a daemon that cannot be asked.
func (s *Server) ReadLog(ctx context.Context, d TaskInstanceDetail, try int, rg LogRange, token string) (LogPart, error) {
	a := attemptRef{run: d.Run, taskID: d.View.TaskID, state: d.View.State, current: d.View.TryNumber, entry: d.Entry, try: try}
	home, err := s.locateLog(ctx, a, false)
	var ae *apiError
	if errors.As(err, &ae) && ae.status == http.StatusNotFound {
		return LogPart{}, ErrNoLog
	}
	if err != nil {
		return LogPart{}, err
	}
	if home.remote != nil {
		return s.readRemote(ctx, *home.remote, a, rg, token)
	}
	f, err := os.Open(home.path)
	if errors.Is(err, fs.ErrNotExist) {
		return LogPart{}, ErrNoLog
	}
	if err != nil {
		return LogPart{}, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return LogPart{}, err
	}
	size := info.Size()
	from, n := rg.From, rg.Max
	if rg.Tail > 0 {
		from, n = max(size-rg.Tail, 0), rg.Tail
	}
	from = min(max(from, 0), size)
	n = min(n, size-from)
	buf := make([]byte, n)
	if _, err := f.ReadAt(buf, from); err != nil && !errors.Is(err, io.EOF) {
		return LogPart{}, err
	}
	return LogPart{Text: buf, Start: from, Size: size}, nil
}

// readRemote is ReadLog of a log daemon o holds: one range request.
func (s *Server) readRemote(ctx context.Context, o store.Owner, a attemptRef, rg LogRange, token string) (LogPart, error) {
	ctx, cancel := context.WithTimeout(ctx, logExchange)
	defer cancel()
	want := rg.Max
	hdr := http.Header{}
	if rg.Tail > 0 {
		want = rg.Tail
		hdr.Set("Range", fmt.Sprintf("bytes=-%d", rg.Tail))
	} else {
		hdr.Set("Range", fmt.Sprintf("bytes=%d-%d", max(rg.From, 0), max(rg.From, 0)+rg.Max-1))
	}
	if token == "" {
		token = s.proxyCredential(ctx)
	}
	auth := ""
	if token != "" {
		auth = "Bearer " + token
	}
	resp, err := s.fetchLog(ctx, o, a, auth, hdr)
	if err != nil {
		return LogPart{}, err
	}
	defer resp.Body.Close()
	var part LogPart
	switch resp.StatusCode {
	case http.StatusPartialContent:
		// Content-Range: bytes first-last/size
		var last int64
		if _, err := fmt.Sscanf(resp.Header.Get("Content-Range"), "bytes %d-%d/%d", &part.Start, &last, &part.Size); err != nil {
			return LogPart{}, remoteRefusal(o, a, resp)
		}
	case http.StatusRequestedRangeNotSatisfiable:
		// Nothing after From: Content-Range: bytes */size
		if _, err := fmt.Sscanf(resp.Header.Get("Content-Range"), "bytes */%d", &part.Size); err != nil {
			return LogPart{}, remoteRefusal(o, a, resp)
		}
		part.Start = part.Size
		return part, nil
	case http.StatusOK: // an empty log: a range of nothing is answered whole
		part.Size = max(resp.ContentLength, 0)
	case http.StatusNotFound:
		return LogPart{}, ErrNoLog
	default:
		return LogPart{}, remoteRefusal(o, a, resp)
	}
	part.Text, err = io.ReadAll(io.LimitReader(resp.Body, want))
	if err != nil {
		return LogPart{}, s.unreachable(o, a, err, 0)
	}
	return part, nil
}

// LogStream is a whole log being read (a download): its bytes as they come and its length,
// -1 when the daemon that holds it did not say.
type LogStream struct {
	Body io.ReadCloser
	Size int64
}

// OpenLog opens the whole log of try try of task instance d for reading from start to end,
// wherever it is, as ReadLog reads a part of it: a file of this daemon's, or the answer of the
// daemon that holds it, streamed (bounded, like any read from another daemon, by logExchange).
// The caller closes Body.
func (s *Server) OpenLog(ctx context.Context, d TaskInstanceDetail, try int, token string) (LogStream, error) {
	a := attemptRef{run: d.Run, taskID: d.View.TaskID, state: d.View.State, current: d.View.TryNumber, entry: d.Entry, try: try}
	home, err := s.locateLog(ctx, a, false)
	var ae *apiError
	if errors.As(err, &ae) && ae.status == http.StatusNotFound {
		return LogStream{}, ErrNoLog
	}
	if err != nil {
		return LogStream{}, err
	}
	if home.remote == nil {
		f, err := os.Open(home.path)
		if errors.Is(err, fs.ErrNotExist) {
			return LogStream{}, ErrNoLog
		}
		if err != nil {
			return LogStream{}, err
		}
		info, err := f.Stat()
		if err != nil {
			f.Close()
			return LogStream{}, err
		}
		return LogStream{Body: f, Size: info.Size()}, nil
	}
	ctx, cancel := context.WithTimeout(ctx, logExchange)
	if token == "" {
		token = s.proxyCredential(ctx)
	}
	auth := ""
	if token != "" {
		auth = "Bearer " + token
	}
	resp, err := s.fetchLog(ctx, *home.remote, a, auth, http.Header{})
	if err != nil {
		cancel()
		return LogStream{}, err
	}
	switch resp.StatusCode {
	case http.StatusOK:
		return LogStream{Body: cancelOnClose{resp.Body, cancel}, Size: resp.ContentLength}, nil
	case http.StatusNotFound:
		resp.Body.Close()
		cancel()
		return LogStream{}, ErrNoLog
	default:
		err := remoteRefusal(*home.remote, a, resp)
		resp.Body.Close()
		cancel()
		return LogStream{}, err
	}
}

// cancelOnClose is a response body whose exchange's context ends when it is closed.
type cancelOnClose struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (c cancelOnClose) Close() error {
	err := c.ReadCloser.Close()
	c.cancel()
	return err
}
