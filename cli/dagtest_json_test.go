package cli

import (
	"bytes"
	"testing"
	"time"

	"github.com/poolflow/poolflow/dag"
	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/vocab"
)

// The report is written a task at a time, byte for byte as encoding it whole would.
func TestTestReportStreamsAsWriteJSON(t *testing.T) {
	t.Parallel()
	reason := "never started (state upstream_failed)"
	for _, tasks := range [][]TaskReport{
		{},
		{{TaskID: "a", State: "success", TryNumber: 1, StartDate: FormatTime(time.Date(2026, 12, 1, 10, 0, 0, 123456000, time.UTC)), EndDate: FormatTime(time.Date(2026, 12, 1, 10, 0, 0, 123456000, time.UTC)),
			Requirements: map[string]int{"db": 1, "api": 2}}},
		{{TaskID: "a", State: "failed", TryNumber: 2, Requirements: map[string]int{}},
			{TaskID: "b \"q\" <x>", State: "upstream_failed", Requirements: map[string]int{"default": 1}, Reason: &reason}},
	} {
		r := &TestReport{DAGID: "d", RunID: "test__r", State: "failed", Tasks: tasks}
		var want, got bytes.Buffer
		if err := writeJSON(&want, r); err != nil {
			t.Fatal(err)
		}
		if err := r.writeJSON(&got); err != nil {
			t.Fatal(err)
		}
		if got.String() != want.String() {
			t.Errorf("%d tasks:\n%s\nwant:\n%s", len(tasks), got.String(), want.String())
		}
	}
}

// A mapped task's own task instance takes no slot (its instances do, §14): its report has no
// requirements, where a task that never queued shows those it declares.
func TestTaskReportOfMappedTask(t *testing.T) {
	t.Parallel()
	d, errs := dag.Parse("m.yaml", []byte(`dag_id: m
tasks:
  - {id: load, expand: [a, b], command: ["true"], pool_requirements: {db: 1}}
  - {id: plain, command: ["true"]}
`), dag.LoadOptions{})
	if len(errs) > 0 {
		t.Fatal(errs[0])
	}
	none := map[string]store.Entry{}
	if got := taskReport(d.Task("load"), "load", store.TaskInstance{State: vocab.TaskSuccess}, none); len(got.Requirements) != 0 {
		t.Errorf("load: %v, want none", got.Requirements)
	}
	if got := taskReport(d.Task("load"), "load[1]", store.TaskInstance{State: vocab.TaskNone}, none); got.Requirements["db"] != 1 {
		t.Errorf("load[1]: %v, want db 1", got.Requirements)
	}
	if got := taskReport(d.Task("plain"), "plain", store.TaskInstance{State: vocab.TaskNone}, none); got.Requirements["default"] != 1 {
		t.Errorf("plain: %v, want default 1", got.Requirements)
	}
}
