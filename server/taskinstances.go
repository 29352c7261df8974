package server

import (
	"cmp"
	"context"
	"math"
	"net/http"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/poolflow/poolflow/dag"
	"github.com/poolflow/poolflow/explain"
	"github.com/poolflow/poolflow/pools"
	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/vocab"
)

// TaskInstanceJSON is Airflow's TaskInstance object with poolflow's pool fields: requirements
// (named pools → slots), limits (the implicit pools of §4.2), the queue entry, and why it waits.
type TaskInstanceJSON struct {
	TaskID         string          `json:"task_id"`
	DAGID          string          `json:"dag_id"`
	DAGRunID       string          `json:"dag_run_id"`
	ExecutionDate  time.Time       `json:"execution_date"`
	StartDate      *time.Time      `json:"start_date"`
	EndDate        *time.Time      `json:"end_date"`
	Duration       *float64        `json:"duration"`
	State          vocab.TaskState `json:"state"`
	TryNumber      int             `json:"try_number"`
	MaxTries       int             `json:"max_tries"`
	MapIndex       int             `json:"map_index"`
	Operator       *string         `json:"operator"`
	Pool           *string         `json:"pool"`
	PoolSlots      int             `json:"pool_slots"`
	PriorityWeight *int            `json:"priority_weight"`
	QueuedWhen     *time.Time      `json:"queued_when"`
	Note           *string         `json:"note"`
	NoteBy         *string         `json:"note_by"`
	NoteAt         *time.Time      `json:"note_at"`

	Requirements  map[string]int    `json:"requirements"`
	Limits        []LimitJSON       `json:"limits"`
	QueueID       *int64            `json:"queue_id"`
	QueueState    *vocab.EntryState `json:"queue_state"`
	QueueDeadline *time.Time        `json:"queue_deadline"`
	Due           *time.Time        `json:"due"`
	Rule          *string           `json:"rule"`
	// RuleSkipped names the rules that matched but were skipped for the DAG's team (§15).
	RuleSkipped *string    `json:"rule_skipped,omitempty"`
	NextAt      *time.Time `json:"next_at"`
	// Reason is why it ended as it did, or why its last attempt failed; ReasonCode is its code
	// when it has one (rejected, expired, cancelled, timeout).
	ReasonCode *vocab.ReasonCode `json:"reason_code"`
	Reason     *string           `json:"reason"`
	WaitReason *ReasonJSON       `json:"wait_reason"`
}

// LimitJSON is one implicit pool an attempt needs one slot of.
type LimitJSON struct {
	Pool     string `json:"pool"`
	Slots    int    `json:"slots"`
	Capacity int    `json:"capacity"`
}

// ReasonJSON is a wait reason: its stable code (§4.5, or upstream, retry, approval,
// reschedule, queued for waits outside the pools) and the words the CLI and UI show.
type ReasonJSON struct {
	Code vocab.ReasonCode `json:"code"`
	Text string           `json:"text"`
}

type taskInstanceCollection struct {
	TaskInstances []TaskInstanceJSON `json:"task_instances"`
	TotalEntries  int                `json:"total_entries"`
}

// splitNeeds separates an entry's named requirements from its implicit limits.
func splitNeeds(needs []store.Requirement) (map[string]int, []LimitJSON) {
	reqs, limits := map[string]int{}, []LimitJSON{}
	for _, n := range needs {
		if n.Implicit {
			limits = append(limits, LimitJSON{Pool: n.Pool, Slots: n.Slots, Capacity: n.Capacity})
		} else {
			reqs[n.Pool] = n.Slots
		}
	}
	sort.Slice(limits, func(i, j int) bool { return limits[i].Pool < limits[j].Pool })
	return reqs, limits
}

// tiView builds a task instance's JSON. weight is its effective priority under its weight rule
// (used until it has a queue entry, whose priority is the one admission orders by).
func tiView(run store.Run, ti store.TaskInstance, task *dag.Task, weight int, entry *store.Entry) TaskInstanceJSON {
	v := TaskInstanceJSON{TaskID: ti.TaskID, DAGID: run.DAGID, DAGRunID: run.RunID, ExecutionDate: run.LogicalDate.UTC(),
		StartDate: ts(ti.StartDate), EndDate: ts(ti.EndDate), State: ti.State, TryNumber: ti.TryNumber, MapIndex: -1,
		Requirements: map[string]int{}, Limits: []LimitJSON{}, NextAt: ts(ti.NextAt), ReasonCode: codeOrNil(ti.ReasonCode), Reason: strOrNil(ti.ReasonCode.Say(ti.Reason)),
		Note: strOrNil(ti.Note), NoteBy: strOrNil(ti.NoteBy), NoteAt: ts(ti.NoteAt)}
	if _, i, ok := dag.SplitMapID(ti.TaskID); ok && task.Mapped() {
		v.MapIndex = i // a mapped instance (§14): its id is task[i]
	}
	if !ti.StartDate.IsZero() && !ti.EndDate.IsZero() {
		d := ti.EndDate.Sub(ti.StartDate).Seconds()
		v.Duration = &d
	}
	if task != nil {
		v.MaxTries = task.Retries
		v.Operator = strOrNil(string(task.Kind))
		if task.Kind != dag.KindApproval {
			v.PriorityWeight = &weight
		}
		if len(task.PoolRequirements) > 0 {
			v.Requirements = task.PoolRequirements
		}
	}
	if entry != nil {
		reqs, limits := splitNeeds(entry.Needs)
		v.Requirements, v.Limits = reqs, limits
		v.TryNumber = explain.TryNumber(ti, entry)
		id, state := entry.ID, entry.State
		v.QueueID, v.QueueState = &id, &state
		v.QueueDeadline, v.Due, v.QueuedWhen = ts(entry.Deadline), ts(entry.Due), ts(entry.CreatedAt)
		v.Rule, v.RuleSkipped = strOrNil(entry.Rule), strOrNil(entry.RuleSkipped)
		p := entry.Priority
		v.PriorityWeight = &p
	}
	names := make([]string, 0, len(v.Requirements))
	for name := range v.Requirements {
		names = append(names, name)
	}
	sort.Strings(names)
	if len(names) > 0 {
		v.Pool, v.PoolSlots = &names[0], v.Requirements[names[0]]
	}
	v.WaitReason = waitReason(run, ti, entry)
	return v
}

// waitReason says why a task instance that is not running or ended is waiting (pools.WhyWaiting,
// the words of `poolflow tasks explain` too); nil when it is not waiting. A waiting entry's
// reason must have been filled in (explain).
func waitReason(run store.Run, ti store.TaskInstance, entry *store.Entry) *ReasonJSON {
	w, ok := pools.WhyWaiting(TaskWait(run, ti, entry))
	if !ok {
		return nil
	}
	return &ReasonJSON{Code: w.Code, Text: w.Text}
}

// TaskWait is what pools.WhyWaiting tells a task instance's wait from (explain.TaskWait).
func TaskWait(run store.Run, ti store.TaskInstance, entry *store.Entry) pools.TaskWait {
	return explain.TaskWait(run, ti, entry)
}

func orText[S ~string](s, def S) S {
	if s == "" {
		return def
	}
	return s
}

// runTasks reads the run's task instances in DAG order (unknown tasks last, by id) with their
// newest queue entries.
func (s *Server) runTasks(ctx context.Context, run store.Run) ([]store.TaskInstance, map[string]store.Entry, *dag.DAG, error) {
	tis, err := s.cfg.Store.ListTaskInstances(ctx, run.PK)
	if err != nil {
		return nil, nil, nil, err
	}
	entries, err := s.cfg.Store.LatestEntries(ctx, run.PK)
	if err != nil {
		return nil, nil, nil, err
	}
	if err := s.explain(ctx, entries); err != nil {
		return nil, nil, nil, err
	}
	d := s.findDAG(run.DAGID)
	order := map[string]int{}
	if d != nil {
		for i, t := range d.Tasks {
			order[t.ID] = i
		}
	}
	rank := func(id string) int {
		if i, ok := order[id]; ok {
			return i
		}
		return len(order)
	}
	sort.SliceStable(tis, func(i, j int) bool {
		ri, rj := rank(tis[i].TaskID), rank(tis[j].TaskID)
		if ri != rj {
			return ri < rj
		}
		return tis[i].TaskID < tis[j].TaskID
	})
	return tis, entries, d, nil
}

func taskOf(d *dag.DAG, id string) *dag.Task {
	if d == nil {
		return nil
	}
	return d.TaskOf(id) // a mapped instance "load[3]": its task's (§14)
}

func entryOf(entries map[string]store.Entry, id string) *store.Entry {
	if e, ok := entries[id]; ok {
		return &e
	}
	return nil
}

// listTaskInstances is GET .../taskInstances in DAG order. Filters: state (repeated or
// comma-separated), pool (a named pool of the requirements), the start_date, end_date and
// duration (seconds) ranges (_gte, _lte), order_by (a field, - for descending), limit, offset.
func (s *Server) listTaskInstances(w http.ResponseWriter, r *http.Request) {
	l, err := s.tiListingOf(r, tiOrders, "dag_order")
	if err != nil {
		s.fail(w, r, err)
		return
	}
	weights := weightsOf(l.d)
	views := []TaskInstanceJSON{}
	for _, ti := range l.tis {
		v := tiView(l.run, ti, taskOf(l.d, ti.TaskID), weights[baseID(ti.TaskID)], entryOf(l.entries, ti.TaskID))
		if l.keep(v) {
			views = append(views, v)
		}
	}
	sortTIs(views, l.field, l.desc)
	lo, hi := l.page.slice(len(views))
	writeJSON(w, http.StatusOK, taskInstanceCollection{TaskInstances: views[lo:hi], TotalEntries: len(views)})
}

// tiListing is what a task instance list reads from its request: the page, filters and order
// asked for, and the run with its task instances, entries and DAG.
type tiListing struct {
	page    page
	keep    func(TaskInstanceJSON) bool
	field   string
	desc    bool
	run     store.Run
	tis     []store.TaskInstance
	entries map[string]store.Entry
	d       *dag.DAG
}

// tiListingOf reads a task instance list's request (listTaskInstances, listMapped), ordered
// by one of orders, def when none is asked for.
func (s *Server) tiListingOf(r *http.Request, orders []string, def string) (tiListing, error) {
	var l tiListing
	var err error
	if l.page, err = pageOf(r); err != nil {
		return l, err
	}
	if l.keep, err = tiFilterOf(r); err != nil {
		return l, err
	}
	if l.field, l.desc, err = orderQuery(r, orders, def); err != nil {
		return l, err
	}
	if l.run, err = s.runOf(r); err != nil {
		return l, err
	}
	l.tis, l.entries, l.d, err = s.runTasks(r.Context(), l.run)
	return l, err
}

var (
	tiStates = vocab.Strings(vocab.TaskStates())
	tiOrders = []string{"dag_order", "task_id", "state", "start_date", "end_date", "duration", "try_number", "priority_weight"}
)

// tiFilterOf reads the task instance filters into one predicate.
func tiFilterOf(r *http.Request) (func(TaskInstanceJSON) bool, error) {
	states, err := listQuery(r, "state", tiStates, nil)
	if err != nil {
		return nil, err
	}
	poolsWanted, err := listQuery(r, "pool", nil, nil)
	if err != nil {
		return nil, err
	}
	startFrom, startTo, err := timeRange(r, "start_date")
	if err != nil {
		return nil, err
	}
	endFrom, endTo, err := timeRange(r, "end_date")
	if err != nil {
		return nil, err
	}
	durFrom, durTo, err := floatRange(r, "duration")
	if err != nil {
		return nil, err
	}
	at := func(t *time.Time) time.Time {
		if t == nil {
			return time.Time{}
		}
		return *t
	}
	return func(v TaskInstanceJSON) bool {
		if len(states) > 0 && !slices.Contains(states, string(v.State)) {
			return false
		}
		if len(poolsWanted) > 0 && !slices.ContainsFunc(poolsWanted, func(p string) bool { _, ok := v.Requirements[p]; return ok }) {
			return false
		}
		if !inRange(at(v.StartDate), startFrom, startTo) || !inRange(at(v.EndDate), endFrom, endTo) {
			return false
		}
		if durFrom != nil || durTo != nil {
			if v.Duration == nil || (durFrom != nil && *v.Duration < *durFrom) || (durTo != nil && *v.Duration > *durTo) {
				return false
			}
		}
		return true
	}, nil
}

// sortTIs orders views by field ("dag_order" keeps the DAG's order); ties keep DAG order.
func sortTIs(views []TaskInstanceJSON, field string, desc bool) {
	if field == "dag_order" {
		if desc {
			slices.Reverse(views)
		}
		return
	}
	tm := func(t *time.Time) int64 {
		if t == nil {
			return math.MaxInt64 // not yet: last
		}
		return t.UnixNano()
	}
	num := func(f *float64) float64 {
		if f == nil {
			return math.Inf(1)
		}
		return *f
	}
	weight := func(w *int) int {
		if w == nil {
			return 0
		}
		return *w
	}
	slices.SortStableFunc(views, func(a, b TaskInstanceJSON) int {
		var c int
		switch field {
		case "task_id":
			c = strings.Compare(a.TaskID, b.TaskID)
		case "state":
			c = strings.Compare(string(a.State), string(b.State))
		case "start_date":
			c = cmp.Compare(tm(a.StartDate), tm(b.StartDate))
		case "end_date":
			c = cmp.Compare(tm(a.EndDate), tm(b.EndDate))
		case "duration":
			c = cmp.Compare(num(a.Duration), num(b.Duration))
		case "try_number":
			c = cmp.Compare(a.TryNumber, b.TryNumber)
		case "priority_weight":
			c = cmp.Compare(weight(a.PriorityWeight), weight(b.PriorityWeight))
		}
		return cmpOrder(c, desc)
	})
}

// taskInstance is the task instance named in the path, with its run, DAG and newest entry.
type taskInstance struct {
	run     store.Run
	ti      store.TaskInstance
	all     []store.TaskInstance
	entry   *store.Entry
	dag     *dag.DAG
	task    *dag.Task
	entries map[string]store.Entry
}

func (s *Server) taskInstanceOf(r *http.Request) (*taskInstance, error) {
	return s.taskInstanceByID(r.Context(), pathVar(r, "dag_id"), pathVar(r, "dag_run_id"), pathVar(r, "task_id"))
}

func (s *Server) taskInstanceByID(ctx context.Context, dagID, runID, id string) (*taskInstance, error) {
	run, err := s.runByID(ctx, dagID, runID)
	if err != nil {
		return nil, err
	}
	tis, entries, d, err := s.runTasks(ctx, run)
	if err != nil {
		return nil, err
	}
	for _, ti := range tis {
		if ti.TaskID == id {
			return &taskInstance{run: run, ti: ti, all: tis, entry: entryOf(entries, id), dag: d, task: taskOf(d, id),
				entries: entries}, nil
		}
	}
	return nil, notFound("task %s not found in dag run %s of dag %s", id, run.RunID, run.DAGID)
}

func (t *taskInstance) view() TaskInstanceJSON {
	return tiView(t.run, t.ti, t.task, weightsOf(t.dag)[t.ti.TaskID], t.entry)
}

func weightsOf(d *dag.DAG) map[string]int {
	if d == nil {
		return nil
	}
	return dag.PriorityWeights(d)
}

func (s *Server) getTaskInstance(w http.ResponseWriter, r *http.Request) {
	t, err := s.taskInstanceOf(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, t.view())
}

// explain fills in why the waiting ones among a run's latest entries wait (§4.5: on read).
func (s *Server) explain(ctx context.Context, entries map[string]store.Entry) error {
	waiting := false
	for _, e := range entries {
		waiting = waiting || e.State == vocab.EntryWaiting
	}
	if !waiting {
		return nil
	}
	why, err := explain.Reasons(ctx, s.cfg.Store, s.now())
	if err != nil {
		return err
	}
	for id, e := range entries {
		why.Fill(&e)
		entries[id] = e
	}
	return nil
}

// baseID is the task id of a task instance id: a mapped instance's task's.
func baseID(id string) string {
	base, _, _ := dag.SplitMapID(id)
	return base
}

// listMapped is GET .../taskInstances/{task_id}/listMapped (Airflow's): the instances of a
// mapped task in map_index order, filtered, ordered and paged as the task instance list is.
func (s *Server) listMapped(w http.ResponseWriter, r *http.Request) {
	l, err := s.tiListingOf(r, append(slices.Clone(tiOrders), "map_index"), "map_index")
	if err != nil {
		s.fail(w, r, err)
		return
	}
	id := pathVar(r, "task_id")
	task := taskOf(l.d, id)
	if task == nil || !task.Mapped() {
		s.fail(w, r, notFound("task %s of dag %s is not a mapped task", id, l.run.DAGID))
		return
	}
	weight := weightsOf(l.d)[id]
	views := []TaskInstanceJSON{}
	for _, ti := range l.tis {
		if base, _, ok := dag.SplitMapID(ti.TaskID); !ok || base != id {
			continue
		}
		if v := tiView(l.run, ti, task, weight, entryOf(l.entries, ti.TaskID)); l.keep(v) {
			views = append(views, v)
		}
	}
	sort.SliceStable(views, func(i, j int) bool { return views[i].MapIndex < views[j].MapIndex })
	if l.field != "map_index" {
		sortTIs(views, l.field, l.desc)
	} else if l.desc {
		slices.Reverse(views)
	}
	lo, hi := l.page.slice(len(views))
	writeJSON(w, http.StatusOK, taskInstanceCollection{TaskInstances: views[lo:hi], TotalEntries: len(views)})
}
