package ui

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/gorilla/mux"

	"github.com/poolflow/poolflow/server"
	"github.com/poolflow/poolflow/vocab"
)

// An attempt's log on the task page: its last logTailBytes, from a line's start, colours
// rendered (ansi.go). The script follows a running attempt's new bytes (?offset=), pages back
// through a big log a logTailBytes piece at a time (?before=), never reading the whole file,
// and the download link streams all of it.

// logTailBytes is how much of a log the task page shows at first, and how much one request of
// the script reads.
const logTailBytes = 256 << 10

func init() { funcs["logShown"] = logShown }

// logShown says how much of a log of size bytes the page shows when it shows it from start on.
func logShown(start, size int64) string {
	if start <= 0 {
		return "the whole log, " + humanBytes(size)
	}
	return "the last " + humanBytes(size-start) + " of " + humanBytes(size)
}

// humanBytes is n bytes in words: "812 B", "256 KB", "3.4 MB".
func humanBytes(n int64) string {
	switch {
	case n < 1<<10:
		return strconv.FormatInt(n, 10) + " B"
	case n < 1<<20:
		return strconv.FormatInt((n+1<<9)>>10, 10) + " KB"
	default:
		return strconv.FormatFloat(float64(n)/(1<<20), 'f', 1, 64) + " MB"
	}
}

// fromLineStart drops the partial line a piece read from the middle of a log begins with, so
// that it starts where a line does (and not inside a colour's escape sequence); a piece that
// holds no line end is left as it is.
func fromLineStart(p server.LogPart) server.LogPart {
	if p.Start == 0 {
		return p
	}
	if i := bytes.IndexByte(p.Text, '\n'); i >= 0 && i+1 < len(p.Text) {
		p.Text, p.Start = p.Text[i+1:], p.Start+int64(i+1)
	}
	return p
}

// toLineEnd drops the partial line a full piece ends with: the rest of that line comes with
// the next request.
func toLineEnd(text []byte) []byte {
	if i := bytes.LastIndexByte(text, '\n'); i >= 0 {
		return text[:i+1]
	}
	return text
}

// logText is a piece of a log as text: bytes that are not UTF-8 (a piece cut inside a
// character, a program's binary output) read as U+FFFD.
func logText(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	return strings.ToValidUTF8(string(b), "\uFFFD")
}

// logTail is GET .../logs/{try}: a piece of the log, for the script.
//   - ?offset=N: the bytes after N (at most logTailBytes, to a line's end when there are more),
//     to follow a running attempt. X-Log-Size is where they end; X-Log-Running is 1 while the
//     attempt still runs.
//   - ?before=N: the logTailBytes before N, from a line's start, to page back ("Load earlier").
//     X-Log-Start is where they begin (0: the log's start).
//
// With format=html the piece is HTML, its colours as spans; else it is the log's plain text.
func (u *UI) logTail(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	d, try, ok := u.logRequest(w, r)
	if !ok {
		return
	}
	q := r.URL.Query()
	if q.Has("find") {
		u.logFind(w, r, d, try, q.Get("find"))
		return
	}
	num := func(name string) (int64, bool) {
		raw := q.Get(name)
		if raw == "" {
			return 0, true
		}
		n, err := strconv.ParseInt(raw, 10, 64)
		if err != nil || n < 0 {
			http.Error(w, name+": want a byte offset (a whole number, 0 or more), got "+strconv.Quote(raw), http.StatusBadRequest)
			return 0, false
		}
		return n, true
	}
	offset, ok := num("offset")
	if !ok {
		return
	}
	before, ok := num("before")
	if !ok {
		return
	}
	back := q.Has("before")
	if back && q.Has("offset") {
		http.Error(w, "before: give offset (the bytes after) or before (the bytes before), not both", http.StatusBadRequest)
		return
	}
	format := q.Get("format")
	if format != "" && format != "html" && format != "text" {
		http.Error(w, "format: want html or text, got "+strconv.Quote(format), http.StatusBadRequest)
		return
	}
	rg := server.LogRange{From: offset, Max: logTailBytes}
	if back {
		rg = server.LogRange{From: max(before-logTailBytes, 0), Max: min(before, logTailBytes)}
	}
	var part server.LogPart
	var err error
	if rg.Max > 0 {
		part, err = u.api.ReadLog(ctx, d, try, rg, "")
	}
	switch {
	case errors.Is(err, server.ErrNoLog):
		part = server.LogPart{Start: rg.From}
	case err != nil:
		status, msg := u.api.StatusOf(err)
		http.Error(w, msg, status)
		return
	}
	h := w.Header()
	if back {
		part = fromLineStart(part)
		h.Set("X-Log-Start", strconv.FormatInt(part.Start, 10))
	} else {
		if int64(len(part.Text)) == logTailBytes && part.Start+int64(len(part.Text)) < part.Size {
			part.Text = toLineEnd(part.Text)
		}
		running := d.View.State == vocab.TaskRunning && d.View.TryNumber == try
		h.Set("X-Log-Running", map[bool]string{true: "1", false: "0"}[running])
		h.Set("X-Log-Size", strconv.FormatInt(part.Start+int64(len(part.Text)), 10))
	}
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	if format == "html" {
		h.Set("Content-Type", "text/html; charset=utf-8")
		_, _ = io.WriteString(w, string(ansiHTML(logText(part.Text))))
		return
	}
	h.Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = w.Write(part.Text)
}

// Finding in the whole log: the page's search box searches what is shown; "search the whole
// log" reads the file once, line by line (never held whole), and answers the lines that match.
const (
	maxFinds    = 200 // lines answered at most
	maxFindLine = 400 // characters of a line answered
	maxFindText = 200 // characters searched for at most
)

// logMatch is a line of the log that holds the text searched for.
type logMatch struct {
	Offset int64  `json:"offset"` // where the line begins in the file
	Line   string `json:"line"`   // its text (without escape sequences), cut at maxFindLine
}

// logFind answers ?find=TEXT: the lines of the whole log that hold TEXT (any case, escape
// sequences ignored), first maxFinds of them, with where each begins.
func (u *UI) logFind(w http.ResponseWriter, r *http.Request, d server.TaskInstanceDetail, try int, text string) {
	if text == "" || utf8.RuneCountInString(text) > maxFindText {
		http.Error(w, "find: want the text to find, 1 to "+strconv.Itoa(maxFindText)+" characters", http.StatusBadRequest)
		return
	}
	out := struct {
		Matches []logMatch `json:"matches"`
		More    bool       `json:"more"` // more lines match than are answered
		Size    int64      `json:"size"` // the bytes searched
	}{Matches: []logMatch{}}
	ls, err := u.api.OpenLog(r.Context(), d, try, "")
	switch {
	case errors.Is(err, server.ErrNoLog):
	case err != nil:
		status, msg := u.api.StatusOf(err)
		http.Error(w, msg, status)
		return
	default:
		defer ls.Body.Close()
		want := strings.ToLower(text)
		br := bufio.NewReaderSize(ls.Body, 64<<10)
		var at int64
		for {
			line, err := br.ReadSlice('\n')
			if len(line) > 0 {
				plain := ansiStrip(logText(bytes.TrimRight(line, "\r\n")))
				if strings.Contains(strings.ToLower(plain), want) {
					if len(out.Matches) == maxFinds {
						out.More = true
						break
					}
					if utf8.RuneCountInString(plain) > maxFindLine {
						plain = string([]rune(plain)[:maxFindLine]) + "…"
					}
					out.Matches = append(out.Matches, logMatch{Offset: at, Line: plain})
				}
			}
			at += int64(len(line))
			if err == bufio.ErrBufferFull {
				continue // a line longer than the buffer is searched in pieces of 64 KB
			}
			if err != nil {
				break
			}
		}
		out.Size = at
	}
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(out)
}

// logDownload is GET .../logs/{try}/download: the whole log as a file to save, streamed from
// wherever it is (this daemon's state folder or the daemon that ran the attempt), whatever its
// size; its bytes as written, escape sequences and all.
func (u *UI) logDownload(w http.ResponseWriter, r *http.Request) {
	d, try, ok := u.logRequest(w, r)
	if !ok {
		return
	}
	ls, err := u.api.OpenLog(r.Context(), d, try, "")
	if errors.Is(err, server.ErrNoLog) {
		http.Error(w, "try "+strconv.Itoa(try)+" of "+d.View.TaskID+" wrote no log", http.StatusNotFound)
		return
	}
	if err != nil {
		status, msg := u.api.StatusOf(err)
		http.Error(w, msg, status)
		return
	}
	defer ls.Body.Close()
	h := w.Header()
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("Content-Disposition", server.LogAttachment(d.Run.DAGID, d.Run.RunID, d.View.TaskID, try))
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "no-store")
	if ls.Size >= 0 {
		// What the log holds now; a running attempt's later lines are not part of this file.
		h.Set("Content-Length", strconv.FormatInt(ls.Size, 10))
		_, err = io.Copy(w, io.LimitReader(ls.Body, ls.Size))
	} else {
		_, err = io.Copy(w, ls.Body)
	}
	if err != nil && r.Context().Err() == nil {
		u.log.Warn("ui: a log download broke off", "dag_id", d.Run.DAGID, "run_id", d.Run.RunID,
			"task_id", d.View.TaskID, "try_number", try, "err", err)
	}
}

// logRequest checks a log request: a reader allowed to read logs, a task instance that exists,
// a try it had. It answers the refusal itself (ok false).
func (u *UI) logRequest(w http.ResponseWriter, r *http.Request) (d server.TaskInstanceDetail, try int, ok bool) {
	v := mux.Vars(r)
	if !u.canReadLogs(r) {
		http.Error(w, "sign in to read logs", http.StatusUnauthorized)
		return d, 0, false
	}
	try, err := strconv.Atoi(v["try"])
	if err != nil || try < 1 {
		http.Error(w, "no such try", http.StatusNotFound)
		return d, 0, false
	}
	d, err = u.api.TaskInstance(r.Context(), v["dag"], v["run"], v["task"])
	if err != nil {
		status, msg := u.api.StatusOf(err)
		http.Error(w, msg, status)
		return d, 0, false
	}
	if try > max(d.View.TryNumber, 1) {
		http.Error(w, "no such try", http.StatusNotFound)
		return d, 0, false
	}
	return d, try, true
}
