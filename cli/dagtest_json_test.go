package cli

import (
	"bytes"
	"testing"
	"time"
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
