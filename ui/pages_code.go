package ui

import (
	"net/http"
	"strconv"

	"github.com/gorilla/mux"

	"github.com/poolflow/poolflow/internal/linediff"
	"github.com/poolflow/poolflow/server"
)

// The DAG page's Code tab (§12): the source of a version with line numbers (a YAML file's
// text; a Go DAG's canonical JSON), a picker of the versions, and the diff of any two.

const (
	// codeMaxLines bounds the lines a page shows; the whole text is the raw link's.
	codeMaxLines = 20000
	// codeVersions is how many versions the picker lists (newest first).
	codeVersions = 500
	// diffContext is the unchanged lines shown around each change.
	diffContext = 3
)

type codeLine struct {
	N    int
	Text string
}

// hunk is one stretch of a diff: changed lines with their context.
type hunk struct {
	OldFrom, NewFrom int // the first line of the hunk in each version (0 when none)
	Lines            []linediff.Line
}

type diffView struct {
	Old, New       int // the versions compared
	Hunks          []hunk
	Added, Removed int
}

type codeData struct {
	DAG       server.DAGJSON
	Versions  []server.DAGVersionJSON // newest first
	Total     int
	Source    server.DAGSourceJSON
	Lines     []codeLine
	Truncated int // lines not shown
	Diff      *diffView
	Compare   int // the version the diff is against (0: none)
	Raw       string
}

// codePage is GET /ui/dags/{dag}/code?version=N&diff=M: version N's source (default the
// current one), or with diff=M what changed from version M to N.
func (u *UI) codePage(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	id := mux.Vars(r)["dag"]
	view, _, err := u.api.DAG(ctx, id)
	if err != nil {
		u.fail(w, r, err)
		return
	}
	data := codeData{DAG: view}
	if data.Versions, data.Total, err = u.api.DAGVersions(ctx, id, codeVersions, 0); err != nil {
		u.fail(w, r, err)
		return
	}
	if data.Total == 0 {
		u.render(w, r, http.StatusOK, "code", "Code · "+id, "dags", data)
		return
	}
	n, ok := versionQuery(r, "version")
	against, ok2 := versionQuery(r, "diff")
	if !ok || !ok2 {
		u.errorPage(w, r, http.StatusBadRequest, "A version is a number from 1.")
		return
	}
	if data.Source, err = u.api.DAGSource(ctx, id, n); err != nil {
		u.fail(w, r, err)
		return
	}
	data.Raw = apiPath("dagSources", id) + "?version_number=" + strconv.Itoa(data.Source.VersionNumber)
	if against != 0 && against != data.Source.VersionNumber {
		old, err := u.api.DAGSource(ctx, id, against)
		if err != nil {
			u.fail(w, r, err)
			return
		}
		data.Compare = against
		data.Diff = diffOf(old, data.Source)
	} else {
		lines := linediff.Lines(data.Source.Content)
		if len(lines) > codeMaxLines {
			data.Truncated = len(lines) - codeMaxLines
			lines = lines[:codeMaxLines]
		}
		data.Lines = make([]codeLine, len(lines))
		for i, l := range lines {
			data.Lines[i] = codeLine{i + 1, l}
		}
	}
	u.render(w, r, http.StatusOK, "code", "Code · "+id, "dags", data)
}

// versionQuery reads a version number from the query: 0 when absent; false when not a number
// from 1.
func versionQuery(r *http.Request, name string) (int, bool) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return 0, true
	}
	n, err := strconv.Atoi(v)
	return n, err == nil && n >= 1
}

// diffOf is what changed from old to new, in hunks with diffContext lines around each change.
func diffOf(old, new server.DAGSourceJSON) *diffView {
	lines := linediff.Diff(linediff.Lines(old.Content), linediff.Lines(new.Content))
	d := &diffView{Old: old.VersionNumber, New: new.VersionNumber}
	keep := make([]bool, len(lines))
	for i, l := range lines {
		if l.Kind == linediff.Same {
			continue
		}
		if l.Kind == linediff.Added {
			d.Added++
		} else {
			d.Removed++
		}
		for j := max(0, i-diffContext); j <= min(len(lines)-1, i+diffContext); j++ {
			keep[j] = true
		}
	}
	var cur *hunk
	for i, l := range lines {
		if !keep[i] {
			cur = nil
			continue
		}
		if cur == nil {
			d.Hunks = append(d.Hunks, hunk{})
			cur = &d.Hunks[len(d.Hunks)-1]
		}
		if cur.OldFrom == 0 && l.Old != 0 {
			cur.OldFrom = l.Old
		}
		if cur.NewFrom == 0 && l.New != 0 {
			cur.NewFrom = l.New
		}
		cur.Lines = append(cur.Lines, l)
	}
	return d
}
