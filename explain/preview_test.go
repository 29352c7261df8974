package explain

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/poolflow/poolflow/config"
	"github.com/poolflow/poolflow/dag"
	"github.com/poolflow/poolflow/store"
	_ "github.com/poolflow/poolflow/store/sqlite"
	"github.com/poolflow/poolflow/store/storetest"
	"github.com/poolflow/poolflow/vocab"
)

// previewConfig: db is a strict one-slot pool, wh a backfill pool of two; the rule sends the
// tasks of dag p that declare nothing to wh.
const previewConfig = `
max_running: 8
pools:
  db: {slots: 1, ordering: strict}
  wh: 2
  default: 4
rules:
  - {name: to-wh, priority: 1, when: 'dag_id == "p" and task_id == "free"', pool: wh, slots: 2}
`

// previewDAG: a needs db; b after a needs wh; c stands alone; free gets its pool from the
// rule; gate is an approval gate after c.
const previewDAG = `dag_id: p
max_active_runs: 1
tasks:
  - {id: a, bash: 'true', pool_requirements: {db: 1}, retries: 2}
  - {id: b, bash: 'true', depends_on: [a], pool_requirements: {wh: 1}}
  - {id: c, bash: 'true', pool_requirements: {wh: 1}}
  - {id: free, bash: 'true'}
  - {id: gate, approval: {}, depends_on: [c]}
`

// previewWorld is a store holding one run of previewDAG (and whatever a case adds), and the
// daemon d1 that owns it, alive on another host.
type previewWorld struct {
	t   *testing.T
	st  store.Store
	eff *config.Effective
	d   *dag.DAG
	now time.Time
}

func newPreviewWorld(t *testing.T) *previewWorld {
	t.Helper()
	return newPreviewWorldOf(t, previewConfig, previewDAG)
}

// newPreviewWorldOf is newPreviewWorld with another configuration and DAG (whose id is p).
func newPreviewWorldOf(t *testing.T, cfgYAML, dagYAML string) *previewWorld {
	t.Helper()
	cfg, err := config.Parse("poolflow.yaml", []byte(cfgYAML))
	if err != nil {
		t.Fatal(err)
	}
	st := storetest.Open(t, filepath.Join(t.TempDir(), "p.db"), store.Options{Synchronous: "OFF"})
	w := &previewWorld{t: t, st: st, eff: config.NewEffective(cfg, nil), now: time.Now().UTC().Truncate(time.Second)}
	d, errs := dag.Parse("p.yaml", []byte(dagYAML), w.eff.Options())
	if len(errs) > 0 {
		t.Fatal(errs[0])
	}
	w.d = d
	w.tx(func(tx store.Tx) error {
		for _, p := range []store.Pool{{Name: "db", Slots: 1, Ordering: vocab.Strict}, {Name: "wh", Slots: 2, Ordering: vocab.Backfill},
			{Name: "default", Slots: 4, Ordering: vocab.Backfill}} {
			p.TargetSlots, p.Source, p.OnResize = store.NoTarget, "file", vocab.ResizeImmediate
			if err := tx.PutPool(&p, w.now); err != nil {
				return err
			}
		}
		return tx.PutOwner(&store.Owner{ID: "d1", Kind: vocab.OwnerDaemon, Host: "elsewhere", PID: 1, StartedAt: w.now,
			Heartbeat: w.now, LeaseUntil: w.now.Add(time.Hour)})
	})
	return w
}

func (w *previewWorld) tx(fn func(store.Tx) error) {
	w.t.Helper()
	if err := w.st.WithTx(context.Background(), fn); err != nil {
		w.t.Fatal(err)
	}
}

// run inserts a run of dag p in state rs whose task instances are in the states given (try
// numbers as given), owned by d1.
func (w *previewWorld) run(id string, rs vocab.RunState, tis map[string]store.TaskInstance) store.Run {
	w.t.Helper()
	r := store.Run{DAGID: "p", RunID: id, RunType: vocab.RunManual, LogicalDate: w.now.Add(-time.Hour), State: rs,
		Conf: "{}", Owner: "d1", QueuedAt: w.now.Add(-time.Hour)}
	w.tx(func(tx store.Tx) error {
		if err := tx.InsertRun(&r); err != nil {
			return err
		}
		var rows []*store.TaskInstance
		for _, t := range w.d.Tasks {
			ti := tis[t.ID]
			ti.Run, ti.TaskID = r.PK, t.ID
			if ti.State == "" {
				ti.State = vocab.TaskNone
			}
			rows = append(rows, &ti)
		}
		for _, id := range slices.Sorted(maps.Keys(tis)) { // mapped instances, "load[3]"
			if w.d.Task(id) == nil {
				ti := tis[id]
				ti.Run, ti.TaskID = r.PK, id
				rows = append(rows, &ti)
			}
		}
		return tx.PutTIs(rows)
	})
	return r
}

// entry queues an entry of task in run r needing pools, admitted (holding its claims) when
// admit.
func (w *previewWorld) entry(r store.Run, task string, try, priority int, needs map[string]int, admit bool) store.Entry {
	w.t.Helper()
	e := store.Entry{Run: r.PK, TaskID: task, TryNumber: try, Label: r.DAGID + "." + task, Priority: priority,
		Due: w.now.Add(-time.Hour), State: vocab.EntryWaiting, CreatedAt: w.now.Add(-time.Hour)}
	for pool, n := range needs {
		e.Needs = append(e.Needs, store.Requirement{Pool: pool, Slots: n})
	}
	w.tx(func(tx store.Tx) error {
		if err := tx.InsertEntries([]*store.Entry{&e}); err != nil {
			return err
		}
		if admit {
			return tx.Admit(&e, "d1", 1, w.now, w.now.Add(time.Hour))
		}
		return nil
	})
	return e
}

func ti(st vocab.TaskState, try int) store.TaskInstance {
	return store.TaskInstance{State: st, TryNumber: try}
}

// TestClearPreview: what a clear's dry run says of each task it would clear, against the
// store's real pools, claims and waiting entries.
func TestClearPreview(t *testing.T) {
	t.Parallel()
	type want struct {
		task     string
		state    vocab.TaskState
		try      int
		needs    map[string]int // named pools only
		admitted bool
		code     vocab.ReasonCode
		pool     string
		short    int
		place    int
	}
	failedRun := map[string]store.TaskInstance{"a": ti(vocab.TaskFailed, 3), "b": ti(vocab.TaskUpstreamFailed, 0),
		"c": ti(vocab.TaskSuccess, 1), "free": ti(vocab.TaskSuccess, 1), "gate": ti(vocab.TaskSuccess, 0)}
	cases := []struct {
		name   string
		params store.ClearParams
		world  func(w *previewWorld) store.Run
		want   []want
	}{
		{
			name:   "a failed task with its downstream: a admitted at once as try 4, b waits for it",
			params: store.ClearParams{TaskIDs: []string{"a"}, Downstream: true},
			world:  func(w *previewWorld) store.Run { return w.run("r", vocab.RunFailed, failedRun) },
			want: []want{
				{task: "a", state: vocab.TaskFailed, try: 4, needs: map[string]int{"db": 1}, admitted: true},
				{task: "b", state: vocab.TaskUpstreamFailed, try: 1, needs: map[string]int{"wh": 1}, code: vocab.ReasonUpstream},
			},
		},
		{
			name:   "db held by another run: a waits for it, 1 slot short, next in line",
			params: store.ClearParams{TaskIDs: []string{"a"}},
			world: func(w *previewWorld) store.Run {
				other := w.run("other", vocab.RunRunning, map[string]store.TaskInstance{"a": ti(vocab.TaskRunning, 1)})
				w.entry(other, "a", 1, 1, map[string]int{"db": 1}, true)
				return w.run("r", vocab.RunRunning, failedRun)
			},
			want: []want{{task: "a", state: vocab.TaskFailed, try: 4, needs: map[string]int{"db": 1}, code: vocab.ReasonPoolFull,
				pool: "db", short: 1, place: 1}},
		},
		{
			name:   "db held and a heavier entry waiting for it: behind that head of strict db, second in line",
			params: store.ClearParams{TaskIDs: []string{"a"}},
			world: func(w *previewWorld) store.Run {
				other := w.run("other", vocab.RunRunning, map[string]store.TaskInstance{"a": ti(vocab.TaskRunning, 1),
					"c": ti(vocab.TaskScheduled, 0)})
				w.entry(other, "a", 1, 1, map[string]int{"db": 1}, true)
				w.entry(other, "c", 1, 50, map[string]int{"db": 1}, false)
				return w.run("r", vocab.RunRunning, failedRun)
			},
			want: []want{{task: "a", state: vocab.TaskFailed, try: 4, needs: map[string]int{"db": 1}, code: vocab.ReasonBehind,
				pool: "db", short: 1, place: 2}},
		},
		{
			name:   "a running attempt: it stops and its own claim is free for its next try",
			params: store.ClearParams{TaskIDs: []string{"a"}},
			world: func(w *previewWorld) store.Run {
				r := w.run("r", vocab.RunRunning, map[string]store.TaskInstance{"a": ti(vocab.TaskRunning, 1)})
				w.entry(r, "a", 2, 3, map[string]int{"db": 1}, true)
				return r
			},
			want: []want{{task: "a", state: vocab.TaskRunning, try: 3, needs: map[string]int{"db": 1}, admitted: true}},
		},
		{
			name:   "a waiting entry: retired, and its task queued again with the same try",
			params: store.ClearParams{TaskIDs: []string{"a"}},
			world: func(w *previewWorld) store.Run {
				other := w.run("other", vocab.RunRunning, map[string]store.TaskInstance{"a": ti(vocab.TaskRunning, 1)})
				w.entry(other, "a", 1, 1, map[string]int{"db": 1}, true)
				r := w.run("r", vocab.RunRunning, map[string]store.TaskInstance{"a": ti(vocab.TaskScheduled, 1)})
				w.entry(r, "a", 2, 3, map[string]int{"db": 1}, false)
				return r
			},
			want: []want{{task: "a", state: vocab.TaskScheduled, try: 2, needs: map[string]int{"db": 1}, code: vocab.ReasonPoolFull,
				pool: "db", short: 1, place: 1}},
		},
		{
			name:   "only failed: the successes of the run stay, the failed and upstream_failed go",
			params: store.ClearParams{OnlyFailed: true},
			world:  func(w *previewWorld) store.Run { return w.run("r", vocab.RunFailed, failedRun) },
			want: []want{
				{task: "a", state: vocab.TaskFailed, try: 4, needs: map[string]int{"db": 1}, admitted: true},
				{task: "b", state: vocab.TaskUpstreamFailed, try: 1, needs: map[string]int{"wh": 1}, code: vocab.ReasonUpstream},
			},
		},
		{
			name:   "the rule's pool; c, walked first, takes a slot of wh and free, needing both, is next in line",
			params: store.ClearParams{TaskIDs: []string{"c", "free"}},
			world: func(w *previewWorld) store.Run {
				return w.run("r", vocab.RunSuccess, map[string]store.TaskInstance{"a": ti(vocab.TaskSuccess, 1),
					"b": ti(vocab.TaskSuccess, 1), "c": ti(vocab.TaskSuccess, 1), "free": ti(vocab.TaskSuccess, 1),
					"gate": ti(vocab.TaskSuccess, 0)})
			},
			want: []want{
				{task: "c", state: vocab.TaskSuccess, try: 2, needs: map[string]int{"wh": 1}, admitted: true},
				{task: "free", state: vocab.TaskSuccess, try: 2, needs: map[string]int{"wh": 2}, code: vocab.ReasonPoolFull,
					pool: "wh", short: 1, place: 1},
			},
		},
		{
			name:   "an approval gate waits for a decision, after its upstream",
			params: store.ClearParams{TaskIDs: []string{"gate"}},
			world:  func(w *previewWorld) store.Run { return w.run("r", vocab.RunFailed, failedRun) },
			want:   []want{{task: "gate", state: vocab.TaskSuccess, try: 1, code: vocab.ReasonApproval}},
		},
		{
			name:   "an ended run waits to start again while another run of its max_active_runs 1 DAG runs",
			params: store.ClearParams{TaskIDs: []string{"a"}},
			world: func(w *previewWorld) store.Run {
				w.run("busy", vocab.RunRunning, nil)
				return w.run("r", vocab.RunFailed, failedRun)
			},
			want: []want{{task: "a", state: vocab.TaskFailed, try: 4, needs: map[string]int{"db": 1}, code: vocab.ReasonRunQueued}},
		},
		{
			name:   "nothing to clear: only running, none runs",
			params: store.ClearParams{OnlyRunning: true},
			world:  func(w *previewWorld) store.Run { return w.run("r", vocab.RunFailed, failedRun) },
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w := newPreviewWorld(t)
			r := tc.world(w)
			rows, err := ClearPreview(context.Background(), w.st, w.eff, w.d, r, tc.params, w.now)
			if err != nil {
				t.Fatal(err)
			}
			if len(rows) != len(tc.want) {
				t.Fatalf("rows %+v, want %d", rows, len(tc.want))
			}
			for i, want := range tc.want {
				got := rows[i]
				named := map[string]int{}
				for _, n := range got.Needs {
					if !n.Implicit {
						named[n.Pool] = n.Slots
					}
				}
				if got.TaskID != want.task || got.State != want.state || got.TryNumber != want.try || got.Admitted != want.admitted ||
					got.Code != want.code || got.Pool != want.pool || got.Shortfall != want.short || got.Place != want.place ||
					len(named) != len(want.needs) {
					t.Errorf("row %d: %+v\nwant %+v", i, got, want)
					continue
				}
				for p, n := range want.needs {
					if named[p] != n {
						t.Errorf("row %d needs %v, want %v", i, named, want.needs)
					}
				}
				if !got.Admitted && got.Text == "" {
					t.Errorf("row %d waits with no words", i)
				}
			}
		})
	}
}

// TestClearPreviewRefusals: a task the run does not have is not found; one no longer in the
// DAG cannot be cleared (the daemon refuses both the same way).
func TestClearPreviewRefusals(t *testing.T) {
	t.Parallel()
	w := newPreviewWorld(t)
	r := w.run("r", vocab.RunFailed, nil)
	w.tx(func(tx store.Tx) error {
		return tx.PutTIs([]*store.TaskInstance{{Run: r.PK, TaskID: "gone", State: vocab.TaskFailed, TryNumber: 1}})
	})
	for task, want := range map[string]error{"nosuch": store.ErrNotFound, "gone": store.ErrConflict} {
		_, err := ClearPreview(context.Background(), w.st, w.eff, w.d, r, store.ClearParams{TaskIDs: []string{task}}, w.now)
		if !errors.Is(err, want) {
			t.Errorf("clear of %s: %v, want %v", task, err, want)
		}
	}
}

// TestClearPreviewMapped: a clear's dry run of mapped instances (§14) shows each one's own
// requirements, its templated pool evaluated over its item and a rule matched on a scalar item,
// and walks admission for each; the mapped task's own row says it expands again, and its
// instances wait for that.
func TestClearPreviewMapped(t *testing.T) {
	t.Parallel()
	w := newPreviewWorldOf(t, `
max_running: 8
pools:
  db: {slots: 1, ordering: strict}
  wh: 2
  default: 4
rules:
  - {name: eu-to-wh, priority: 1, when: 'item == "eu"', pool: wh}
`, `dag_id: p
tasks:
  - id: load
    expand: [{shard: db}, {shard: wh}, {shard: nope}]
    command: ["load", "${{ item.shard }}"]
    pool_requirements: {"${{ item.shard }}": 1}
  - {id: region, expand: [eu, us], command: ["true"]}
`)
	done := ti(vocab.TaskSuccess, 1)
	r := w.run("r", vocab.RunSuccess, map[string]store.TaskInstance{"load": ti(vocab.TaskSuccess, 0), "load[0]": done,
		"load[1]": done, "load[2]": ti(vocab.TaskFailed, 1), "region": ti(vocab.TaskSuccess, 0), "region[0]": done, "region[1]": done})
	named := func(row ClearRow) map[string]int {
		out := map[string]int{}
		for _, n := range row.Needs {
			if !n.Implicit {
				out[n.Pool] = n.Slots
			}
		}
		return out
	}
	rows, err := ClearPreview(context.Background(), w.st, w.eff, w.d, r,
		store.ClearParams{TaskIDs: []string{"load[1]", "load[2]", "region[0]", "region[1]"}}, w.now)
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		id       string
		needs    map[string]int
		rule     string
		admitted bool
		code     vocab.ReasonCode
	}{
		{"load[1]", map[string]int{"wh": 1}, "", true, ""},
		{"load[2]", map[string]int{"nope": 1}, "", false, vocab.ReasonUnknownPool},
		{"region[0]", map[string]int{"wh": 1}, "eu-to-wh", true, ""},
		{"region[1]", map[string]int{"default": 1}, "", true, ""},
	}
	if len(rows) != len(want) {
		t.Fatalf("%d rows: %+v", len(rows), rows)
	}
	for i, w := range want {
		got := rows[i]
		if got.TaskID != w.id || !maps.Equal(named(got), w.needs) || got.Rule != w.rule || got.Admitted != w.admitted || got.Code != w.code {
			t.Errorf("row %d: %s needs %v rule %q admitted %v %s %q; want %s %v %q %v %s", i, got.TaskID, named(got), got.Rule,
				got.Admitted, got.Code, got.Text, w.id, w.needs, w.rule, w.admitted, w.code)
		}
	}
	rows, err = ClearPreview(context.Background(), w.st, w.eff, w.d, r, store.ClearParams{TaskIDs: []string{"load"}}, w.now)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 4 || rows[0].TaskID != "load" || !rows[0].Expands || len(rows[0].Needs) != 0 ||
		!strings.Contains(rows[0].Words(), "expands its list again") {
		t.Fatalf("the mapped task's row: %+v", rows)
	}
	for i, row := range rows[1:] {
		if want := fmt.Sprintf("load[%d]", i); row.TaskID != want || row.Admitted || row.Code != vocab.ReasonUpstream ||
			!strings.Contains(row.Text, "waits for its task load to expand") || len(named(row)) != 1 {
			t.Errorf("%s: %+v", want, row)
		}
	}
}
