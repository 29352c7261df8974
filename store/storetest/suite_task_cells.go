package storetest

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/vocab"
)

// testTaskCells: TaskCellsOfRuns gives each asked run's task instances with their state and
// try (those TaskInstancesOfRuns reads in full), none of the other runs', and an empty answer
// for no runs or a run without task instances.
func testTaskCells(t *testing.T, h Harness) {
	st := h.New(t)
	var pks []int64
	states := []vocab.TaskState{vocab.TaskSuccess, vocab.TaskFailed, vocab.TaskRunning, vocab.TaskScheduled, vocab.TaskNone}
	must(t, st.WithTx(bg(), func(tx store.Tx) error {
		for r := range 4 {
			at := day.Add(time.Duration(r) * time.Minute)
			run := store.Run{DAGID: "etl", RunID: fmt.Sprintf("r%d", r), RunType: vocab.RunManual, LogicalDate: at,
				State: vocab.RunRunning, QueuedAt: at}
			if err := tx.InsertRun(&run); err != nil {
				return err
			}
			pks = append(pks, run.PK)
			for k := range r * 3 { // run 0 has no task instances
				ti := store.TaskInstance{Run: run.PK, TaskID: fmt.Sprintf("t%d", k), State: states[(r+k)%len(states)],
					TryNumber: 1 + k%3}
				if err := tx.InsertTI(&ti); err != nil {
					return err
				}
			}
		}
		return nil
	}))
	asked := []int64{pks[0], pks[1], pks[3]}
	cells, err := st.TaskCellsOfRuns(bg(), asked)
	must(t, err)
	full, err := st.TaskInstancesOfRuns(bg(), asked)
	must(t, err)
	if _, ok := cells[pks[2]]; ok {
		t.Errorf("cells of a run not asked for: %v", cells[pks[2]])
	}
	if len(cells[pks[0]]) != 0 {
		t.Errorf("run without task instances: %v", cells[pks[0]])
	}
	for _, pk := range asked {
		var want, got []string
		for _, ti := range full[pk] {
			want = append(want, fmt.Sprintf("%d %s %s %d", ti.Run, ti.TaskID, ti.State, ti.TryNumber))
		}
		for _, c := range cells[pk] {
			got = append(got, fmt.Sprintf("%d %s %s %d", c.Run, c.TaskID, c.State, c.TryNumber))
		}
		slices.Sort(want)
		slices.Sort(got)
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("run %d: cells %v, want %v", pk, got, want)
		}
	}
	if len(cells[pks[3]]) != 9 {
		t.Errorf("run r3: %d cells, want 9", len(cells[pks[3]]))
	}
	none, err := st.TaskCellsOfRuns(bg(), nil)
	must(t, err)
	if len(none) != 0 {
		t.Errorf("no runs: %v", none)
	}
}
