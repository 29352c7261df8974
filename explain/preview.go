package explain

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/poolflow/poolflow/config"
	"github.com/poolflow/poolflow/dag"
	"github.com/poolflow/poolflow/owners"
	"github.com/poolflow/poolflow/pools"
	"github.com/poolflow/poolflow/rules"
	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/vocab"
)

// ClearRow is one task instance a clear would clear, as its dry run shows it (§10.1): what it
// is now, the try its next attempt runs as and what that attempt needs, and what would happen
// right after the clear: admitted at once, or why it would wait (the reason of `tasks
// explain`, the pool, the slots it lacks there and its place in that pool's line).
type ClearRow struct {
	TaskID string
	State  vocab.TaskState // now, before the clear
	// TryNumber is the try the next attempt runs as: the tries go on after the last one.
	TryNumber int
	// Needs are the requirement rows of that attempt (the task's, else the rule's, else
	// {default: 1}, plus the implicit limits); none for an approval gate.
	Needs []store.Requirement
	Rule  string // the rule that assigned the pool, if one did
	// RuleSkipped says which matching rules were skipped for the DAG's team, and why (§15).
	RuleSkipped string
	// Admitted: it would be admitted at once (by the owner that applies the clear).
	Admitted bool
	// Expands: a mapped task's own task instance, ready: it would expand its list again, and
	// its instances (their own rows) be queued, each with its own requirements (§14).
	Expands bool
	// Code and Text say why it would wait when it is not admitted: a pool reason of §4.5,
	// upstream (its upstream tasks are not done after the clear), approval, or run_queued (its
	// run waits for max_active_runs or forbid).
	Code vocab.ReasonCode
	Text string
	// Pool is the pool it would wait on, Shortfall the slots of it that it lacks, Place its
	// place in that pool's line (1 = next).
	Pool      string
	Shortfall int
	Place     int
}

// Words say what the row says would happen, as the CLI's table, the API and the UI show it:
// "admitted at once", or why it would wait, with its place in line for a pool.
func (r ClearRow) Words() string {
	if r.Admitted {
		return "admitted at once"
	}
	if r.Expands {
		return "expands its list again: each instance is queued with its own requirements"
	}
	text := strings.TrimPrefix(r.Text, "waiting: ")
	if r.Pool == "" || r.Place == 0 {
		return "would wait: " + text
	}
	short := ""
	if r.Shortfall > 0 {
		short = fmt.Sprintf("%d slot", r.Shortfall)
		if r.Shortfall > 1 {
			short += "s"
		}
		short = ", " + short + " short"
	}
	return fmt.Sprintf("would wait: %s; place %d in line for %s%s", text, r.Place, r.Pool, short)
}

// previewIDs are the queue IDs of the preview's hypothetical entries: past every real one.
const previewIDs = int64(1) << 62

// ClearPreview is the dry run of a clear with p of run (of DAG d, the definition the clear
// runs the tasks under; eff gives the rules and max_running) at now: one row per task
// instance it would clear, in dependency order. Nothing is written; it reads the store.
//
// A cleared task goes back to none; it is ready right after the clear when its trigger rule
// over its upstream states after the clear says so. Each ready one is walked by admission as
// a new entry would be — queue ID past every existing one, due now, the DAG's priority, owned
// by the daemon that would apply the clear (owners.CommandTarget) — together with the real
// waiting entries and claims, less those the clear ends (a cleared waiting entry is retired, a
// cleared running attempt stops and releases its claims): the walk of `tasks explain`.
func ClearPreview(ctx context.Context, st store.Store, eff *config.Effective, d *dag.DAG, run store.Run,
	p store.ClearParams, now time.Time) ([]ClearRow, error) {
	tis, err := st.ListTaskInstances(ctx, run.PK)
	if err != nil {
		return nil, err
	}
	byID := make(map[string]store.TaskInstance, len(tis))
	for _, ti := range tis {
		byID[ti.TaskID] = ti
	}
	ids, err := ClearSelection(d, run.RunID, tis, p)
	if err != nil {
		return nil, err
	}
	latest, err := st.LatestEntries(ctx, run.PK)
	if err != nil {
		return nil, err
	}
	after := statesOf(tis)
	var rows []ClearRow
	drop := map[int64]bool{}
	for _, id := range ids {
		ti := byID[id]
		row := ClearRow{TaskID: id, State: ti.State, TryNumber: ti.TryNumber + 1}
		if e, ok := latest[id]; ok && (e.State == vocab.EntryWaiting || e.State == vocab.EntryAdmitted) {
			drop[e.ID] = true
			if e.State == vocab.EntryAdmitted {
				row.TryNumber = max(ti.TryNumber, e.TryNumber) + 1
			}
		}
		after[id] = vocab.TaskNone
		rows = append(rows, row)
	}
	if len(rows) == 0 {
		return nil, nil
	}
	rowsOwner, err := applier(ctx, st, run, now)
	if err != nil {
		return nil, err
	}
	runWait, err := runWaits(ctx, st, d, run)
	if err != nil {
		return nil, err
	}
	params := runParams(d, run)
	maxRunning := 0
	var assign func(t *dag.Task, try int, item any, mapIndex int) rules.Result
	if eff != nil {
		maxRunning = eff.Settings.MaxRunning
		if eff.Rules != nil {
			assign = func(t *dag.Task, try int, item any, mapIndex int) rules.Result {
				trigger := run.RunType
				if trigger == vocab.RunTest {
					trigger = vocab.RunManual
				}
				a := ruleAttrs(d, t, run, params, trigger, try)
				a.Item, a.MapIndex = item, mapIndex
				return eff.Rules.Assign(a)
			}
		}
	}
	render := NewRenderer(d, run, tis)
	weights := d.Weights()
	var extra []store.Entry
	ready := map[string]int64{} // task instance -> its hypothetical entry
	for i := range rows {
		row := &rows[i]
		t := d.TaskOf(row.TaskID) // a mapped instance "load[3]" runs its task's definition
		if t == nil {
			continue
		}
		_, mapIndex, instance := dag.SplitMapID(row.TaskID)
		instance = instance && t.Mapped() && t.ID != row.TaskID
		if !instance {
			mapIndex = -1
		}
		expands := t.Mapped() && !instance // the mapped task's own node: its instances are queued
		if err := previewNeeds(row, d, t, render, assign, run.RunID, maxRunning, mapIndex, expands); err != nil {
			row.Code, row.Text = vocab.ReasonQueued, "its next try would fail: "+err.Error()
			continue
		}
		upstream := make([]vocab.TaskState, len(t.DependsOn))
		var notDone []string
		for j, up := range t.DependsOn {
			upstream[j] = after[up]
			if !after[up].Terminal() {
				notDone = append(notDone, up)
			}
		}
		switch next := dag.Trigger(t.TriggerRule, upstream); {
		case instance && after[t.ID] == vocab.TaskNone:
			row.Code, row.Text = vocab.ReasonUpstream, "waits for its task "+t.ID+" to expand"
		case next == vocab.TaskNone:
			row.Code, row.Text = vocab.ReasonUpstream, "waits for upstream "+strings.Join(notDone, ", ")
		case next != vocab.TaskScheduled:
			row.Code, row.Text = vocab.ReasonUpstream, fmt.Sprintf("will be %s by its trigger rule %s (upstream %s)", next,
				t.TriggerRule, upstreamWords(t.DependsOn, after))
		case runWait != "":
			row.Code, row.Text = vocab.ReasonRunQueued, runWait
		case t.Kind == dag.KindApproval:
			row.Code, row.Text = vocab.ReasonApproval, "waits for a person to approve or reject it"
		case expands:
			row.Code, row.Expands = vocab.ReasonQueued, true
		default:
			ready[row.TaskID] = 0
		}
	}
	// Queue IDs follow the task order of the DAG file (§4.4), a mapped task's instances in map
	// index order, all due now.
	order := make(map[string][]int, len(ready))
	for i, r := range rows {
		if _, ok := ready[r.TaskID]; ok {
			key := r.TaskID
			if base, _, inst := dag.SplitMapID(r.TaskID); inst && d.Task(r.TaskID) == nil {
				key = base
			}
			order[key] = append(order[key], i)
		}
	}
	for _, t := range d.Tasks {
		idx := order[t.ID]
		slices.SortStableFunc(idx, func(a, b int) int {
			_, ia, _ := dag.SplitMapID(rows[a].TaskID)
			_, ib, _ := dag.SplitMapID(rows[b].TaskID)
			return ia - ib
		})
		for _, i := range idx {
			e := store.Entry{ID: previewIDs + int64(len(extra)), Run: run.PK, TaskID: rows[i].TaskID, TryNumber: rows[i].TryNumber,
				Label: fmt.Sprintf("%s.%s try %d", d.ID, rows[i].TaskID, rows[i].TryNumber), Priority: weights[t.ID], Due: now,
				State: vocab.EntryWaiting, Rule: rows[i].Rule, RuleSkipped: rows[i].RuleSkipped, CreatedAt: now, Needs: rows[i].Needs,
				Owner: rowsOwner, DAGID: d.ID, RunID: run.RunID, RunType: run.RunType}
			if t.QueueTimeout > 0 {
				e.Deadline = now.Add(t.QueueTimeout)
			}
			ready[rows[i].TaskID] = e.ID
			extra = append(extra, e)
		}
	}
	if len(extra) == 0 {
		return rows, nil
	}
	walked, err := explainAll(ctx, st, now, hypothesis{extra: extra, drop: drop})
	if err != nil {
		return nil, err
	}
	for i := range rows {
		id, ok := ready[rows[i].TaskID]
		if !ok {
			continue
		}
		x := walked[id]
		rows[i].Admitted = x.admitted
		if !x.admitted {
			rows[i].Code, rows[i].Text, rows[i].Pool, rows[i].Shortfall, rows[i].Place = x.code, x.text, x.pool, x.shortfall, x.place
		}
	}
	return rows, nil
}

// previewNeeds fills a preview row's requirements as the scheduler would queue its next try:
// the named pools with their templates evaluated for that task instance (a mapped instance's
// with its item), else the rule's pool (the rules see the item too), else {default: 1}, plus the
// limits. An approval gate and a mapped task's own node need none (its instances do). An error
// is a template that does not evaluate or a list with no such item: that try would fail with it.
func previewNeeds(row *ClearRow, d *dag.DAG, t *dag.Task, render *Renderer, assign func(*dag.Task, int, any, int) rules.Result,
	runID string, maxRunning, mapIndex int, expands bool) error {
	if t.Kind == dag.KindApproval || expands {
		return nil
	}
	var named map[string]int
	rendered, err := render.Render(t, row.TaskID, row.TryNumber)
	if err != nil {
		return err
	}
	if rendered != nil {
		named = rendered.Pools
	}
	var item any
	if mapIndex >= 0 {
		if item, err = render.Item(t, mapIndex); err != nil {
			return err
		}
	}
	row.Needs = Requirements(d, t, named, runID, "", maxRunning, func() (string, int) {
		if assign == nil {
			return pools.DefaultPool, 1
		}
		res := assign(t, row.TryNumber, item, mapIndex)
		row.Rule, row.RuleSkipped = res.Rule, res.Skipped()
		return res.Pool, res.Slots
	})
	return nil
}

// applier is the owner that would apply a clear of run now, and so own the entries it queues.
func applier(ctx context.Context, st store.Store, run store.Run, now time.Time) (string, error) {
	rows, err := st.ListOwners(ctx)
	if err != nil {
		return "", err
	}
	host, _ := os.Hostname()
	who, _, _ := owners.CommandTarget(run, vocab.CommandClear, rows, now, host)
	return who, nil
}

// runWaits says why run, once a clear reopens it (an ended run goes back to queued) or while
// it is queued, would not start at once: max_active_runs of its DAG reached, or forbid with a
// run of its DAG running; "" when it runs or would start.
func runWaits(ctx context.Context, st store.Store, d *dag.DAG, run store.Run) (string, error) {
	if run.State == vocab.RunRunning {
		return "", nil
	}
	running, n, err := st.ListRunsWhere(ctx, store.RunFilter{DAGID: d.ID, States: []vocab.RunState{vocab.RunRunning}, Limit: 1})
	if err != nil {
		return "", err
	}
	again := " again" // an ended run is queued again
	if run.State == vocab.RunQueued {
		again = ""
	}
	switch {
	case d.MaxActiveRuns > 0 && n >= d.MaxActiveRuns:
		return fmt.Sprintf("its run waits to start%s: max_active_runs %d of dag %s reached", again, d.MaxActiveRuns, d.ID), nil
	case d.ConcurrencyPolicy == dag.PolicyForbid && n > 0:
		return fmt.Sprintf("its run waits to start%s: concurrency_policy forbid waits for run %s", again, running[0].RunID), nil
	}
	return "", nil
}

// runParams are the DAG's params under the run's conf, as rules see them.
func runParams(d *dag.DAG, run store.Run) map[string]any {
	params := maps.Clone(d.Params)
	if params == nil {
		params = map[string]any{}
	}
	var conf map[string]any
	if run.Conf != "" && json.Unmarshal([]byte(run.Conf), &conf) == nil {
		maps.Copy(params, conf)
	}
	return params
}

func upstreamWords(ids []string, states map[string]vocab.TaskState) string {
	words := make([]string, len(ids))
	for i, id := range ids {
		words[i] = id + " " + string(states[id])
	}
	return strings.Join(words, ", ")
}

// ruleAttrs are the attributes the rules see for an attempt of t in run (as the scheduler
// gives them, executor/decide/rules.go).
func ruleAttrs(d *dag.DAG, t *dag.Task, run store.Run, params map[string]any, trigger vocab.RunType, try int) rules.Attrs {
	return rules.Attrs{DAGID: d.ID, TaskID: t.ID, RunID: run.RunID, Owner: d.Owner, Team: d.Team, Tags: d.Tags, Trigger: string(trigger),
		Params: params, TryNumber: try, Kind: string(t.Kind), LogicalDate: run.LogicalDate}
}
