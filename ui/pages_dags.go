package ui

import (
	"encoding/json"
	"html/template"
	"net/http"
	"slices"
	"time"

	"github.com/gorilla/mux"

	"github.com/poolflow/poolflow/dag"
	"github.com/poolflow/poolflow/server"
	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/vocab"
)

// lastRuns is how many runs the DAG list shows per DAG; gridRuns how many the grid shows.
const (
	lastRuns = 10
	gridRuns = 25
)

type dagRow struct {
	DAG    server.DAGJSON
	Runs   []store.Run // oldest first
	Next   time.Time
	NextIs string         // words when there is no next time: manual only, paused, at daemon start
	Waits  store.RunWaits // its open runs waiting for a person or a pool
}

type dagsData struct {
	Rows         []dagRow
	ImportErrors []store.ImportErrorRow
	Tag          string
	Tags         []string
	Total        int
	NeedYou      int // open runs awaiting a person's approval, in every DAG shown
}

// nextFire says when a DAG's schedule fires next.
func nextFire(schedule string, paused bool, now time.Time) (time.Time, string) {
	switch {
	case schedule == "":
		return time.Time{}, "manual only"
	case paused:
		return time.Time{}, "paused"
	}
	sched, reboot, err := dag.ParseSchedule(schedule)
	if err != nil {
		return time.Time{}, "invalid schedule"
	}
	if reboot {
		return time.Time{}, "at daemon start"
	}
	return sched.Next(now), ""
}

func (u *UI) dagList(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	views, err := u.api.DAGs(ctx)
	if err != nil {
		u.fail(w, r, err)
		return
	}
	ids := make([]string, len(views))
	for i, v := range views {
		ids[i] = v.DAGID
	}
	runs, err := u.api.Store().LatestRunsByDAG(ctx, ids, lastRuns)
	if err != nil {
		u.fail(w, r, err)
		return
	}
	waits, err := u.api.Store().OpenRunWaits(ctx)
	if err != nil {
		u.fail(w, r, err)
		return
	}
	ies, err := u.api.Store().ListImportErrors(ctx)
	if err != nil {
		u.fail(w, r, err)
		return
	}
	now := u.api.Now()
	tag := r.URL.Query().Get("tag")
	data := dagsData{ImportErrors: ies, Tag: tag, Total: len(views)}
	seen := map[string]bool{}
	for _, v := range views {
		for _, t := range v.Tags {
			if !seen[t.Name] {
				seen[t.Name] = true
				data.Tags = append(data.Tags, t.Name)
			}
		}
		if tag != "" && !slices.ContainsFunc(v.Tags, func(t server.TagJSON) bool { return t.Name == tag }) {
			continue
		}
		row := dagRow{DAG: v, Runs: slices.Clone(runs[v.DAGID]), Waits: waits[v.DAGID]}
		data.NeedYou += row.Waits.Approval
		slices.Reverse(row.Runs)
		sched := ""
		if v.ScheduleInterval != nil {
			sched = v.ScheduleInterval.Value
		}
		row.Next, row.NextIs = nextFire(sched, v.IsPaused, now)
		if !v.IsActive {
			row.NextIs = "not loaded"
		}
		data.Rows = append(data.Rows, row)
	}
	slices.Sort(data.Tags)
	u.render(w, r, http.StatusOK, "dags", "DAGs", "dags", data)
}

type dagData struct {
	DAG      server.DAGJSON
	Def      *dag.DAG
	Graph    graphView
	Selected *store.Run
	Runs     []store.Run // the grid's runs, oldest first
	Recent   []store.Run // the same, newest first
	Grid     []gridRow
	Conf     string // the trigger form's default conf: the DAG's params
	Next     time.Time
	NextIs   string
	Schedule string
	Counts   map[vocab.RunState]int // run states among the grid's runs
	Events   eventsCard             // the DAG's own recent events (§10.4)
	Nodes    []nodeRow              // an every_node DAG's fires per daemon (§9)
	Pager    gridPager              // the grid's window of runs
	Picker   []store.Run            // the runs the graph's picker offers, newest first
	// Backfills are the DAG's latest backfills (§11), with their progress bars; From and To
	// the backfill form's default range.
	Backfills []backfillRow
	From, To  string
	// Live is a live refresh (app.js): only the page's [data-live] parts are read from the
	// answer, so the graph card, which follows its run by itself (graph.js), is left out.
	Live bool
}

// backfillRow is one backfill in the DAG page's list.
type backfillRow struct {
	B        store.Backfill
	Progress template.HTML
}

func (u *UI) dagPage(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	id := mux.Vars(r)["dag"]
	view, def, err := u.api.DAG(ctx, id)
	if err != nil {
		u.fail(w, r, err)
		return
	}
	pg := dagPageOf(r, id)
	offset := pg.Grid
	size := gridSize(def)
	page := store.RunFilter{DAGID: id, OrderBy: "queued_at", Desc: true, Limit: size, Offset: offset,
		CountAtMost: countBound(offset, size)}
	runs, total, err := u.api.Store().ListRunsWhere(ctx, page)
	if err != nil {
		u.fail(w, r, err)
		return
	}
	recent := slices.Clone(runs)
	slices.Reverse(runs)
	data := dagData{DAG: view, Def: def, Runs: runs, Recent: recent, Counts: map[vocab.RunState]int{}, Live: liveRefresh(r)}
	data.Pager = newGridPager(pg, size, len(runs), total, page)
	if view.ScheduleInterval != nil {
		data.Schedule = view.ScheduleInterval.Value
	}
	data.Next, data.NextIs = nextFire(data.Schedule, view.IsPaused, u.api.Now())
	conf, _ := json.MarshalIndent(view.Params, "", "  ")
	data.Conf = string(conf)
	pks := make([]int64, len(runs))
	for i, run := range runs {
		pks[i] = run.PK
		data.Counts[run.State]++
	}
	tis, err := u.api.Store().TaskCellsOfRuns(ctx, pks)
	if err != nil {
		u.fail(w, r, err)
		return
	}
	lay := &graphLayout{}
	if def != nil {
		lay = u.layouts.layout(def, pg.collapse(len(def.Tasks)), pg.opened())
	}
	data.Grid = buildGrid(id, def, lay.nodes, runs, tis, pg.opening)
	// The graph shows the selected run (?run=), else the newest that has started.
	if sel := r.URL.Query().Get("run"); sel != "" {
		for i := range runs {
			if runs[i].RunID == sel {
				data.Selected = &runs[i]
			}
		}
		if data.Selected == nil {
			run, err := u.api.Run(ctx, id, sel)
			if err != nil {
				u.fail(w, r, err)
				return
			}
			data.Selected = &run
		}
	} else if first := newestStarted(recent); offset == 0 && first != nil && !first.StartDate.IsZero() {
		data.Selected = first
	} else { // the grid's window has no started run: look further back
		started, _, err := u.api.Store().ListRunsWhere(ctx, store.RunFilter{DAGID: id, StartFrom: time.Unix(0, 1),
			OrderBy: "queued_at", Desc: true, Limit: 1, CountAtMost: 1})
		if err != nil {
			u.fail(w, r, err)
			return
		}
		if len(started) == 0 && offset == 0 {
			started = recent
		}
		data.Selected = newestStarted(started)
	}
	data.Picker = recent
	if data.Selected != nil && !slices.ContainsFunc(recent, func(r store.Run) bool { return r.PK == data.Selected.PK }) {
		data.Picker = append([]store.Run{*data.Selected}, recent...)
	}
	if def != nil && !data.Live {
		info := map[string]nodeInfo{}
		if data.Selected != nil {
			views, err := u.api.TaskInstances(ctx, *data.Selected)
			if err != nil {
				u.fail(w, r, err)
				return
			}
			mapped := map[string][]vocab.TaskState{}
			for _, v := range views {
				if isInstance(def, v.TaskID) {
					base, _, _ := dag.SplitMapID(v.TaskID)
					mapped[base] = append(mapped[base], v.State)
				}
			}
			for _, v := range views {
				if isInstance(def, v.TaskID) {
					continue // drawn inside its mapped task's node
				}
				in := nodeInfo{State: v.State, Href: taskPath(id, data.Selected.RunID, v.TaskID)}
				if states := mapped[v.TaskID]; len(states) > 0 {
					in.Instances = instanceCounts(states)
				}
				if v.WaitReason != nil {
					in.Reason = v.WaitReason.Text
				} else if v.Reason != nil {
					in.Reason = *v.Reason
				}
				info[v.TaskID] = in
			}
		}
		data.Graph = graphSVG(def, lay, info, pg.collapse(len(def.Tasks)), pg.opening)
		data.Graph.GroupsOn, data.Graph.GroupsOff = pg.grouped(true), pg.grouped(false)
	}
	if data.Events, err = u.recentEventsOf(r, id, "", ""); err != nil {
		u.fail(w, r, err)
		return
	}
	bfs, _, err := u.api.Store().ListBackfills(ctx, id, 5, 0)
	if err != nil {
		u.fail(w, r, err)
		return
	}
	for _, b := range bfs {
		data.Backfills = append(data.Backfills, backfillRow{B: b, Progress: progressSVG(b.Progress)})
	}
	data.From, data.To = defaultBackfillRange(u.api.Now())
	if view.EveryNode {
		if data.Nodes, err = u.nodeRows(ctx, id); err != nil {
			u.fail(w, r, err)
			return
		}
	}
	u.render(w, r, http.StatusOK, "dag", id, "dags", data)
}
