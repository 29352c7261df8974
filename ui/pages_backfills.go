package ui

import (
	"encoding/json"
	"fmt"
	"html/template"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/gorilla/mux"

	"github.com/poolflow/poolflow/server"
	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/vocab"
)

// Backfills (§11): the DAG page's form (its preview is the API's dry run), and a backfill's
// page with its progress bar and its dates.

func backfillPath(id int64) string { return "/ui/backfills/" + strconv.FormatInt(id, 10) }

// backfillDates is how many of a backfill's dates its page lists at once.
const backfillDates = 100

// backfillData is what the backfill page shows.
type backfillData struct {
	B        store.Backfill
	Progress template.HTML
	Dates    []store.BackfillDate
	Total    int
	Offset   int
	Older    string // the next page of dates
	Newer    string
	Events   eventsCard
}

func (u *UI) backfillPage(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	id, err := strconv.ParseInt(mux.Vars(r)["id"], 10, 64)
	if err != nil {
		u.errorPage(w, r, http.StatusNotFound, "There is no backfill "+mux.Vars(r)["id"]+".")
		return
	}
	b, err := u.api.Store().GetBackfill(ctx, id)
	if err != nil {
		u.fail(w, r, err)
		return
	}
	offset, _ := strconv.Atoi(r.URL.Query().Get("offset"))
	offset = max(offset, 0)
	dates, total, err := u.api.Store().ListBackfillDates(ctx, id, backfillDates, offset)
	if err != nil {
		u.fail(w, r, err)
		return
	}
	data := backfillData{B: b, Progress: progressSVG(b.Progress), Dates: dates, Total: total, Offset: offset}
	if offset+len(dates) < total {
		data.Older = backfillPath(id) + "?offset=" + strconv.Itoa(offset+backfillDates)
	}
	if offset > 0 {
		data.Newer = backfillPath(id) + "?offset=" + strconv.Itoa(max(offset-backfillDates, 0))
	}
	u.render(w, r, http.StatusOK, "backfill", fmt.Sprintf("Backfill %d of %s", id, b.DAGID), "dags", data)
}

// progressSVG draws a backfill's progress: done, failed, running and left as parts of one bar,
// skipped dates apart (they run nothing), each part titled with its count.
func progressSVG(p store.BackfillProgress) template.HTML {
	const w, h = 600.0, 18.0
	var s svg
	s.open(w, h, "progress", fmt.Sprintf("%d of %d dates done, %d failed, %d running, %d left, %d skipped",
		p.Done, p.Total, p.Failed, p.Running, p.Left, p.Skipped))
	s.raw(`<rect class="track" x="0" y="0" width="%g" height="%g" rx="4"></rect>`, w, h)
	n := p.Total
	if n == 0 {
		return s.html()
	}
	x := 0.0
	for _, part := range []struct {
		count int
		class string
		title string // a format of the count
	}{{p.Done, stateClass(vocab.RunSuccess), "%d done"}, {p.Failed, stateClass(vocab.RunFailed), "%d failed"},
		{p.Running, stateClass(vocab.RunRunning), "%d running"}, {p.Skipped, stateClass(vocab.TaskSkipped), "%d skipped"}} {
		if part.count == 0 {
			continue
		}
		pw := w * float64(part.count) / float64(n)
		s.raw(`<rect class="seg %s" x="%.2f" y="0" width="%.2f" height="%g">`, part.class, x, pw, h)
		s.title(fmt.Sprintf(part.title, part.count))
		s.raw(`</rect>`)
		x += pw
	}
	return s.html()
}

// backfillForm reads the DAG page's backfill form into the API's body: from and to as UTC
// (datetime-local inputs have no zone), max_slots written "pool=N, pool=N".
func backfillForm(r *http.Request, dag string) (map[string]any, error) {
	body := map[string]any{"dag_id": dag, "reprocess_behavior": orDefaultStr(r.PostFormValue("reprocess"), string(vocab.ReprocessNone)),
		"run_backwards": checked(r, "reverse")}
	for _, f := range []string{"from", "to"} {
		v := strings.TrimSpace(r.PostFormValue(f))
		t, err := parseFormTime(v)
		if err != nil {
			return nil, fmt.Errorf("%s: %q is not a date and time such as 2026-01-31T00:00", f, v)
		}
		body[f+"_date"] = t.Format(time.RFC3339)
	}
	if v := strings.TrimSpace(r.PostFormValue("max_active_runs")); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			return nil, fmt.Errorf("max active runs: %q is not a whole number", v)
		}
		body["max_active_runs"] = n
	}
	if v := strings.TrimSpace(r.PostFormValue("max_slots")); v != "" {
		slots := map[string]int{}
		for _, part := range strings.FieldsFunc(v, func(c rune) bool { return c == ',' || c == ' ' }) {
			pool, n, ok := strings.Cut(part, "=")
			k, err := strconv.Atoi(n)
			if !ok || pool == "" || err != nil {
				return nil, fmt.Errorf("max slots: %q: want POOL=N, e.g. warehouse=2", part)
			}
			slots[pool] = k
		}
		body["max_slots"] = slots
	}
	if conf := strings.TrimSpace(r.PostFormValue("conf")); conf != "" && conf != "{}" {
		var v map[string]any
		if err := json.Unmarshal([]byte(conf), &v); err != nil {
			return nil, fmt.Errorf("conf: not a JSON object (%v)", strings.TrimPrefix(err.Error(), "json: "))
		}
		body["dag_run_conf"] = v
	}
	return body, nil
}

func orDefaultStr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// parseFormTime reads a datetime-local value (or RFC 3339, or a date) as UTC.
func parseFormTime(v string) (time.Time, error) {
	for _, layout := range []string{"2006-01-02T15:04", "2006-01-02T15:04:05", time.RFC3339, "2006-01-02"} {
		if t, err := time.Parse(layout, v); err == nil {
			return t.UTC(), nil
		}
	}
	return time.Time{}, fmt.Errorf("bad time %q", v)
}

// backfillFields are the form's fields, posted again with confirm=1 from the preview.
var backfillFields = []string{"from", "to", "reprocess", "max_active_runs", "reverse", "max_slots", "conf"}

// backfillPreview is the dry run as the preview dialog shows it.
type backfillPreview struct {
	DAGID               string
	Create, Clear, Skip int
	SlotHours           []slotHours
	Dates               []server.BackfillDateJSON
	More                int
	Warnings            []string
}

type slotHours struct {
	Pool  string
	Hours string
}

// createBackfill is the DAG page's backfill form: a first post answers the API's dry run as a
// preview; the confirmed post creates the backfill and goes to its page.
func (u *UI) createBackfill(w http.ResponseWriter, r *http.Request) {
	dag := mux.Vars(r)["dag"]
	if !u.mayAct(w, r) {
		return
	}
	body, err := backfillForm(r, dag)
	if err != nil {
		u.actionError(w, r, http.StatusBadRequest, upperFirst(err.Error()))
		return
	}
	if confirmed(r) {
		status, data, ok := u.callAPI(w, r, http.MethodPost, apiPath("backfills"), body)
		if !ok {
			return
		}
		var b server.BackfillJSON
		_ = json.Unmarshal(data, &b)
		msg := fmt.Sprintf("Backfill %d of %s created: %d dates.", b.ID, dag, b.Progress.Total)
		for _, warn := range b.Warnings {
			msg += " " + upperFirst(warn) + "."
		}
		u.done(w, r, status, msg, backfillPath(b.ID))
		return
	}
	_, data, ok := u.callAPI(w, r, http.MethodPost, apiPath("backfills", "dry_run"), body)
	if !ok {
		return
	}
	var dry server.DryRunJSON
	_ = json.Unmarshal(data, &dry)
	bp := &backfillPreview{DAGID: dag, Create: dry.Create, Clear: dry.Clear, Skip: dry.Skip}
	for _, warn := range dry.Warnings {
		if len(dry.SlotHours) == 0 && strings.HasPrefix(warn, "slot-hours leave out") {
			continue // the preview says there are none
		}
		bp.Warnings = append(bp.Warnings, upperFirst(warn)+".")
	}
	for pool, hrs := range dry.SlotHours {
		bp.SlotHours = append(bp.SlotHours, slotHours{Pool: pool, Hours: strconv.FormatFloat(hrs, 'f', 2, 64)})
	}
	sort.Slice(bp.SlotHours, func(i, j int) bool { return bp.SlotHours[i].Pool < bp.SlotHours[j].Pool })
	const shown = 24
	bp.Dates = dry.Backfills
	if len(bp.Dates) > shown {
		bp.Dates, bp.More = bp.Dates[:shown], len(bp.Dates)-shown
	}
	p := previewData{Verb: "backfill", Backfill: bp, Action: dagPath(dag) + "/backfill", Fields: fields(r, backfillFields...),
		Back: dagPath(dag)}
	p.Title = fmt.Sprintf("Backfill %d %s of %s?", dry.TotalEntries, plural(dry.TotalEntries, "date", "dates"), dag)
	p.Confirm = "Start the backfill"
	if dry.Create+dry.Clear == 0 {
		p.Confirm = "Start it anyway"
	}
	u.showPreview(w, r, p)
}

// backfillAction is a backfill page's pause, unpause or cancel.
func (u *UI) backfillAction(w http.ResponseWriter, r *http.Request) {
	v := mux.Vars(r)
	if !u.mayAct(w, r) {
		return
	}
	status, data, ok := u.callAPI(w, r, http.MethodPost, apiPath("backfills", v["id"], v["action"]), nil)
	if !ok {
		return
	}
	var b server.BackfillJSON
	_ = json.Unmarshal(data, &b)
	msg := map[string]string{"pause": "Paused: it starts no new run; its runs go on.",
		"unpause": "Unpaused: it starts its next runs.",
		"cancel":  "Cancelled: its waiting work fails; running attempts finish."}[v["action"]]
	u.done(w, r, status, msg, backfillPath(b.ID))
}

// defaultBackfillRange is the form's default range: the last day, to the hour.
func defaultBackfillRange(now time.Time) (from, to string) {
	end := now.UTC().Truncate(time.Hour)
	return end.Add(-24 * time.Hour).Format("2006-01-02T15:04"), end.Format("2006-01-02T15:04")
}
