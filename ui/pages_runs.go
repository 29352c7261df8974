package ui

import (
	"encoding/json"
	"errors"
	"html/template"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"time"

	"github.com/gorilla/mux"

	"github.com/poolflow/poolflow/dag"
	"github.com/poolflow/poolflow/server"
	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/vocab"
)

// stateLink is one state of a run's tasks with how many are in it, and the run page showing
// only those (or, when it is the one shown, all of them again).
type stateLink struct {
	State vocab.TaskState
	N     int
	Href  string
	On    bool
}

type runData struct {
	Run   store.Run
	View  server.DAGRunJSON
	Tasks []server.TaskInstanceJSON // the task list's rows: every task, or those in State
	All   int                       // how many tasks the run has
	// State narrows the task list to one state (?state=failed: the 83 failed of 500 without
	// scrolling past the 417 others); States are the run's states with their counts, as links.
	State  vocab.TaskState
	States []stateLink
	Gantt  template.HTML
	// Counts are the task states of the run.
	Counts map[vocab.TaskState]int
	Loaded bool
	// Repair (§10): how many task instances have not ended and how many attempts run (the
	// confirmations say what a mark or a deletion does to them), the note, the run's events.
	Unfinished int
	Running    int
	Failed     int
	Note       noteView
	Events     eventsCard
	// Current is the DAG's current version (§12), for saying when the run's is another.
	Current int
	// Waited is the time the run's tries waited for admission, and on which pools.
	Waited waitSum
}

func (u *UI) runPage(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	v := mux.Vars(r)
	dagView, _, err := u.api.DAG(ctx, v["dag"])
	if err != nil {
		u.fail(w, r, err)
		return
	}
	run, err := u.api.Run(ctx, v["dag"], v["run"])
	if err != nil {
		u.fail(w, r, err)
		return
	}
	tis, err := u.api.TaskInstances(ctx, run)
	if err != nil {
		u.fail(w, r, err)
		return
	}
	attempts, err := u.api.Store().RunAttempts(ctx, run.PK)
	if err != nil {
		u.fail(w, r, err)
		return
	}
	data := runData{Run: run, View: server.RunView(run), Tasks: tis, Counts: map[vocab.TaskState]int{}}
	if dagView.DAGVersion != nil {
		data.Current = *dagView.DAGVersion
	}
	_, def, _ := u.api.DAG(ctx, run.DAGID)
	data.Loaded = def != nil
	names := make([]string, len(tis))
	hrefs := map[string]string{}
	for i, ti := range tis {
		names[i] = ti.TaskID
		hrefs[ti.TaskID] = taskPath(run.DAGID, run.RunID, ti.TaskID)
		data.Counts[ti.State]++
		switch {
		case ti.State == vocab.TaskRunning:
			data.Running++
			data.Unfinished++
		case ti.State == vocab.TaskFailed || ti.State == vocab.TaskUpstreamFailed:
			data.Failed++
		case !ti.State.Terminal():
			data.Unfinished++
		}
	}
	data.All = len(tis)
	if st := vocab.TaskState(r.URL.Query().Get("state")); data.Counts[st] > 0 {
		data.State = st
		data.Tasks = slices.DeleteFunc(slices.Clone(tis), func(ti server.TaskInstanceJSON) bool { return ti.State != st })
	}
	page := runPath(run.DAGID, run.RunID)
	for _, st := range slices.Sorted(maps.Keys(data.Counts)) {
		l := stateLink{State: st, N: data.Counts[st], Href: page + "?state=" + url.QueryEscape(string(st)) + "#tasks-title", On: st == data.State}
		if l.On {
			l.Href = page + "#tasks-title"
		}
		data.States = append(data.States, l)
	}
	data.Note = noteView{Now: u.api.Now(), Text: run.Note, By: run.NoteBy, At: run.NoteAt, Action: runPath(run.DAGID, run.RunID) + "/note"}
	if data.Events, err = u.recentEventsOf(r, run.DAGID, run.RunID, ""); err != nil {
		u.fail(w, r, err)
		return
	}
	entries, err := u.api.Store().RunEntries(ctx, run.PK)
	if err != nil {
		u.fail(w, r, err)
		return
	}
	waits, sum := waitBars(entries, u.api.Now())
	data.Waited = sum
	data.Gantt = ganttSVG(names, hrefs, append(ganttBars(tis, attempts, u.api.Now()), waits...))
	u.render(w, r, http.StatusOK, "run", run.RunID+" · "+run.DAGID, "dags", data)
}

type attemptView struct {
	Try       int
	State     vocab.TaskState
	Start     any // time.Time or *time.Time
	End       any
	Reason    string
	Log       template.HTML // the shown part of the log, its colours as spans (ansi.go)
	LogStart  int64         // where the shown text begins in the file: "load earlier" reads before it
	LogOffset int64         // where the shown text ends in the file, for following
	LogNote   string        // why the log cannot be shown (the host that holds it is gone…)
	Truncated bool
	Current   bool // the task instance's latest try
	Running   bool
	Queued    bool // the current try waits for admission and has not started: no log yet
	Version   int  // the DAG version it ran (§12); 0 when unknown
	DAGID     string
	// NeverStarted says why a try that ended without starting never ran: "never started:
	// cancelled while waiting for db".
	NeverStarted string
}

type taskData struct {
	server.TaskInstanceDetail
	Attempts   []attemptView
	CanAct     bool
	IsGate     bool // a gate waiting for its decision: the approve/reject form
	Gate       bool // an approval gate in any state: it runs nothing, so it has no log
	CanCancel  bool
	Terminal   bool
	Running    bool
	CancelPool string
	// Repair (§10): whether it can be cleared (its task is in the loaded DAG), its note, the
	// run's task instances (the strip that shows a clear's effect), its own events.
	CanClear bool
	Note     noteView
	RunTasks []store.TaskInstance
	Events   eventsCard
	// Output is the task instance's output (§14), indented for reading; "" when it has none.
	Output string
	// A mapped task's instances and their counts by state; for an instance, its task.
	Instances      []store.TaskInstance
	InstanceCounts []statePart
	MappedTask     string
	MapIndex       int
}

// noteView is a run's or a task instance's note with who wrote it and when (§10.3).
type noteView struct {
	Now    time.Time
	Text   string
	By     string
	At     time.Time
	Action string // the form's action
}

func (u *UI) taskPage(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	v := mux.Vars(r)
	if _, _, err := u.api.DAG(ctx, v["dag"]); err != nil {
		u.fail(w, r, err)
		return
	}
	d, err := u.api.TaskInstance(ctx, v["dag"], v["run"], v["task"])
	if err != nil {
		u.fail(w, r, err)
		return
	}
	ended, err := u.api.Store().ListAttempts(ctx, d.Run.PK, d.View.TaskID)
	if err != nil {
		u.fail(w, r, err)
		return
	}
	data := taskData{TaskInstanceDetail: d, CanAct: u.canReadLogs(r)}
	state := d.View.State
	data.Terminal, data.Running = state.Terminal(), state == vocab.TaskRunning
	data.IsGate = state == vocab.TaskAwaitingApproval
	data.Gate = data.IsGate || d.Task != nil && d.Task.Kind == dag.KindApproval
	data.CanCancel = d.Entry != nil && d.Entry.State == vocab.EntryWaiting
	data.CanClear = d.Task != nil
	data.RunTasks, err = u.api.Store().ListTaskInstances(ctx, d.Run.PK)
	if err != nil {
		u.fail(w, r, err)
		return
	}
	if d.Task.Mapped() {
		if base, i, ok := dag.SplitMapID(d.View.TaskID); ok && base == d.Task.ID {
			data.MappedTask, data.MapIndex = base, i
		} else {
			data.Instances = instancesOf(data.RunTasks, d.View.TaskID)
			states := make([]vocab.TaskState, len(data.Instances))
			for i, ti := range data.Instances {
				states[i] = ti.State
			}
			data.InstanceCounts = instanceCounts(states)
		}
	}
	here := taskPath(d.Run.DAGID, d.Run.RunID, d.View.TaskID)
	data.Note = noteView{Now: u.api.Now(), Action: here + "/note", Text: deref(d.View.Note), By: deref(d.View.NoteBy)}
	if d.View.NoteAt != nil {
		data.Note.At = *d.View.NoteAt
	}
	if data.Events, err = u.recentEventsOf(r, d.Run.DAGID, d.Run.RunID, d.View.TaskID); err != nil {
		u.fail(w, r, err)
		return
	}
	byTry := map[int]store.Attempt{}
	for _, a := range ended {
		byTry[a.TryNumber] = a
	}
	if a, ok := byTry[d.View.TryNumber]; ok && state == vocab.TaskSuccess && a.Output != "" {
		data.Output = prettyJSON(json.RawMessage(a.Output))
	}
	last := d.View.TryNumber
	if a := len(ended); a > 0 && ended[a-1].TryNumber > last {
		last = ended[a-1].TryNumber
	}
	entries, err := u.api.Store().RunEntries(ctx, d.Run.PK)
	if err != nil {
		u.fail(w, r, err)
		return
	}
	for try := last; try >= 1; try-- {
		av := attemptView{Try: try, Current: try == d.View.TryNumber, DAGID: d.View.DAGID}
		if a, ok := byTry[try]; ok {
			av.State, av.Reason, av.Version = a.State, a.ReasonCode.Say(a.Reason), a.Version
			av.Start, av.End = a.StartDate, a.EndDate
			if a.StartDate.IsZero() {
				av.NeverStarted = neverStarted(entries, d.View.TaskID, try)
			}
		} else if av.Current {
			av.State = state
			av.Start, av.End = d.View.StartDate, d.View.EndDate
			av.Running = state == vocab.TaskRunning
			av.Queued = state == vocab.TaskScheduled && d.View.StartDate == nil
		}
		if data.CanAct && !data.Gate && av.NeverStarted == "" {
			part, err := u.api.ReadLog(ctx, d, try, server.LogRange{Tail: logTailBytes}, "")
			switch {
			case err == nil:
				part = fromLineStart(part)
				av.Log, av.LogStart, av.LogOffset, av.Truncated = ansiHTML(logText(part.Text)), part.Start, part.Size, part.Start > 0
			case errors.Is(err, server.ErrNoLog): // an attempt that wrote nothing reads as empty
			default:
				// On a daemon that cannot be asked now: the answer says which host holds it.
				_, av.LogNote = u.api.StatusOf(err)
			}
		}
		data.Attempts = append(data.Attempts, av)
	}
	u.render(w, r, http.StatusOK, "task", d.View.TaskID+" · "+d.Run.RunID, "dags", data)
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}
