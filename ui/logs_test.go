package ui

import (
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/poolflow/poolflow/executor/runner"
)

// bigLogDAG writes a log of about 1 MB: a first line to find, 40,000 numbered lines, and
// coloured lines at its end (an HTML tag among them, which must stay text).
var bigLogDAG = map[string]string{"biglog.yaml": `
tasks:
  - id: paint
    bash: |
      echo FIRST-MARKER
      seq -f 'line %g of the big log' 1 40000
      printf '\033[31mred alert\033[0m and \033[1;32mbold green\033[0m <b>not bold</b>\n'
      printf 'needle one\nneedle two\nneedle three\n'
`}

// bigLog runs biglog and returns its log file's bytes.
func bigLog(t *testing.T) (*bundle, []byte) {
	t.Helper()
	b := setup(t, setupOpts{yaml: bigLogDAG})
	b.trigger(t, "biglog", "b1")
	if st := b.waitRunEnd(t, "biglog", "b1"); st != "success" {
		t.Fatalf("biglog ended %s", st)
	}
	file, err := os.ReadFile(runner.LogPath(b.stateDir, "biglog", "b1", "paint", 1))
	if err != nil {
		t.Fatal(err)
	}
	if len(file) < 3*logTailBytes {
		t.Fatalf("the log is only %d bytes", len(file))
	}
	return b, file
}

// TestLogPages: the task page shows the log's last piece from a line's start, its colours as
// spans and its tags as text; ?before= pages back to the start piece by piece, each at most
// logTailBytes, and the pieces make the file; the download is the whole file, named for the
// attempt; bad queries are 400s naming the parameter.
func TestLogPages(t *testing.T) {
	t.Parallel()
	b, file := bigLog(t)
	const base = "/ui/dags/biglog/runs/b1/tasks/paint"
	page := b.page(t, http.StatusOK, base)
	for _, want := range []string{`<span class="a-fg-1">red alert</span> and <span class="a-fg-2 a-b">bold green</span> &lt;b&gt;not bold&lt;/b&gt;`,
		`href="` + base + `/logs/1/download"`, `id="log-earlier-1"`, "Load earlier", "of " + humanBytes(int64(len(file)))} {
		if !strings.Contains(page, want) {
			t.Errorf("the task page lacks %s", want)
		}
	}
	if strings.Contains(page, "FIRST-MARKER") || strings.Contains(page, "\x1b") {
		t.Error("the task page shows the log's start, or a raw escape")
	}
	start := attrOf(t, page, "data-start")
	if start <= 0 || start >= int64(len(file)) || file[start-1] != '\n' || len(file)-int(start) > logTailBytes {
		t.Fatalf("the page shows the log from byte %d of %d: not a line's start within the last %d", start, len(file), logTailBytes)
	}

	// Paging back: pieces from line starts, the last one from byte 0.
	got := string(file[start:])
	for before, n := start, 0; before > 0; n++ {
		if n > 10 {
			t.Fatal("paging back does not reach the start")
		}
		rec := b.get(t, base+"/logs/1?before="+strconv.FormatInt(before, 10))
		from, err := strconv.ParseInt(rec.Header().Get("X-Log-Start"), 10, 64)
		if rec.Code != http.StatusOK || err != nil || from >= before || before-from > logTailBytes {
			t.Fatalf("before=%d: %d, X-Log-Start %q, %d bytes", before, rec.Code, rec.Header().Get("X-Log-Start"), rec.Body.Len())
		}
		if from > 0 && file[from-1] != '\n' {
			t.Errorf("before=%d: the piece begins inside a line (byte %d)", before, from)
		}
		got = rec.Body.String() + got
		before = from
	}
	if got != string(file) {
		t.Errorf("the pieces do not make the log: %d bytes, want %d", len(got), len(file))
	}
	if rec := b.get(t, base+"/logs/1?before=0"); rec.Code != http.StatusOK || rec.Body.Len() != 0 || rec.Header().Get("X-Log-Start") != "0" {
		t.Errorf("before=0: %d %q start %q", rec.Code, rec.Body, rec.Header().Get("X-Log-Start"))
	}
	html := b.get(t, base+"/logs/1?format=html&before="+strconv.Itoa(len(file)))
	if ct := html.Header().Get("Content-Type"); !strings.HasPrefix(ct, "text/html") || !strings.Contains(html.Body.String(), `<span class="a-fg-1">red alert</span>`) {
		t.Errorf("format=html: %s %.200q", ct, html.Body)
	}

	// Following from the start: a full piece ends at a line's end, and says where.
	rec := b.get(t, base+"/logs/1?offset=0")
	size, _ := strconv.Atoi(rec.Header().Get("X-Log-Size"))
	if body := rec.Body.String(); size != len(body) || size > logTailBytes || !strings.HasSuffix(body, "\n") || !strings.HasPrefix(body, "FIRST-MARKER\n") {
		t.Errorf("offset=0: %d bytes, X-Log-Size %d, ends %q", len(body), size, body[max(len(body)-20, 0):])
	}

	dl := b.get(t, base+"/logs/1/download")
	if dl.Code != http.StatusOK || dl.Body.String() != string(file) {
		t.Errorf("download: %d, %d bytes, want the %d of the file", dl.Code, dl.Body.Len(), len(file))
	}
	if cd := dl.Header().Get("Content-Disposition"); cd != "attachment; filename=biglog_b1_paint_try1.log" {
		t.Errorf("download: Content-Disposition %q", cd)
	}
	if cl := dl.Header().Get("Content-Length"); cl != strconv.Itoa(len(file)) {
		t.Errorf("download: Content-Length %q, want %d", cl, len(file))
	}

	// Finding in the whole log: the lines, where they begin, their text without escapes.
	type found struct {
		Matches []struct {
			Offset int64
			Line   string
		}
		More bool
		Size int64
	}
	find := func(text string) found {
		t.Helper()
		rec := b.get(t, base+"/logs/1?find="+url.QueryEscape(text))
		var f found
		if rec.Code != http.StatusOK || json.Unmarshal(rec.Body.Bytes(), &f) != nil {
			t.Fatalf("find %q: %d %s", text, rec.Code, rec.Body)
		}
		return f
	}
	lineAt := func(s string) int64 { return int64(strings.Index(string(file), s)) }
	if f := find("LINE 20000 OF"); len(f.Matches) != 1 || f.Matches[0].Offset != lineAt("line 20000 of") ||
		f.Matches[0].Line != "line 20000 of the big log" || f.More || f.Size != int64(len(file)) {
		t.Errorf("find line 20000: %+v", f)
	}
	if f := find("first-marker"); len(f.Matches) != 1 || f.Matches[0].Offset != 0 {
		t.Errorf("find the first line: %+v", f)
	}
	if f := find("red alert and bold"); len(f.Matches) != 1 || f.Matches[0].Line != "red alert and bold green <b>not bold</b>" {
		t.Errorf("find a coloured line: %+v", f)
	}
	if f := find("of the big log"); len(f.Matches) != maxFinds || !f.More || f.Matches[maxFinds-1].Offset != lineAt("line 200 of") {
		t.Errorf("find a line of every line: %d matches, more %v", len(f.Matches), f.More)
	}
	if f := find("nowhere to be found"); len(f.Matches) != 0 || f.Matches == nil {
		t.Errorf("find nothing: %+v", f)
	}
	for _, q := range []string{"?find=", "?find=" + strings.Repeat("x", maxFindText+1)} {
		if rec := b.get(t, base+"/logs/1"+q); rec.Code != http.StatusBadRequest || !strings.HasPrefix(rec.Body.String(), "find:") {
			t.Errorf("%.20s: %d %q", q, rec.Code, rec.Body)
		}
	}

	for _, q := range []string{"?before=-1", "?before=x", "?offset=1&before=2", "?format=xml"} {
		rec := b.get(t, base+"/logs/1"+q)
		name := strings.TrimPrefix(strings.SplitN(strings.SplitN(q, "&", 2)[0], "=", 2)[0], "?")
		if q == "?offset=1&before=2" {
			name = "before"
		}
		if rec.Code != http.StatusBadRequest || !strings.HasPrefix(rec.Body.String(), name+":") {
			t.Errorf("%s: %d %q, want a 400 naming %s", q, rec.Code, rec.Body, name)
		}
	}
	if rec := b.get(t, base+"/logs/2/download"); rec.Code != http.StatusNotFound {
		t.Errorf("download of a try it never had: %d", rec.Code)
	}
}

// attrOf is the number in the first name="…" attribute of page.
func attrOf(t *testing.T, page, name string) int64 {
	t.Helper()
	i := strings.Index(page, name+`="`)
	if i < 0 {
		t.Fatalf("no %s in the page", name)
	}
	rest := page[i+len(name)+2:]
	n, err := strconv.ParseInt(rest[:strings.IndexByte(rest, '"')], 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return n
}
