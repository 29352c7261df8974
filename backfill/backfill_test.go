package backfill

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/poolflow/poolflow/dag"
	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/vocab"
)

var day = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// TestCheck: the dates of a range and every request that cannot run, with its status and the
// field it names.
func TestCheck(t *testing.T) {
	t.Parallel()
	hourly := &dag.DAG{ID: "etl", Schedule: "@hourly", Tasks: []*dag.Task{{ID: "a", PoolRequirements: map[string]int{"wh": 1}}}}
	tests := []struct {
		name   string
		req    Request
		g      *dag.DAG
		max    int
		status int
		want   string
		dates  int
	}{
		{name: "a day", req: Request{DAGID: "etl", From: day, To: day.Add(23 * time.Hour)}, g: hourly, dates: 24},
		{name: "inclusive ends", req: Request{DAGID: "etl", From: day.Add(-time.Minute), To: day.Add(time.Hour)}, g: hourly, dates: 2},
		{name: "no fire", req: Request{DAGID: "etl", From: day.Add(time.Minute), To: day.Add(59 * time.Minute)}, g: hourly,
			status: 400, want: "from_date: no fire of dag etl's schedule"},
		{name: "to before from", req: Request{DAGID: "etl", From: day.Add(time.Hour), To: day}, g: hourly, status: 400,
			want: "to_date: 2026-01-01T00:00:00Z is before from_date 2026-01-01T01:00:00Z"},
		{name: "over the bound", req: Request{DAGID: "etl", From: day, To: day.Add(100_000 * time.Hour)}, g: hourly, max: 10_000,
			status: 400, want: "more than 10000 fires of \"@hourly\": over the bound of backfill.max_runs (10000)"},
		{name: "the bound itself", req: Request{DAGID: "etl", From: day, To: day.Add(9 * time.Hour)}, g: hourly, max: 10, dates: 10},
		{name: "unused pool", req: Request{DAGID: "etl", From: day, To: day, MaxSlots: map[string]int{"db": 1}}, g: hourly,
			status: 400, want: "max_slots: pool db: dag etl does not use it (it uses wh)"},
		{name: "a used pool", req: Request{DAGID: "etl", From: day, To: day, MaxSlots: map[string]int{"wh": 2}}, g: hourly, dates: 1},
		{name: "not loaded", req: Request{DAGID: "etl", From: day, To: day}, status: 404, want: "dag etl is not loaded"},
		{name: "no schedule", req: Request{DAGID: "etl", From: day, To: day}, g: &dag.DAG{ID: "etl"}, status: 400,
			want: "has no schedule"},
		{name: "every node", req: Request{DAGID: "etl", From: day, To: day}, g: &dag.DAG{ID: "etl", Schedule: "@hourly", EveryNode: true},
			status: 400, want: "every_node"},
		{name: "bad reprocess", req: Request{DAGID: "etl", From: day, To: day, Reprocess: "all"}, g: hourly, status: 400,
			want: "reprocess_behavior"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.req.Normalize()
			if tc.max == 0 {
				tc.max = 10_000
			}
			var used []string
			if tc.g != nil {
				used = UsedPools(tc.g, []string{"default"})
			}
			dates, err := Check(tc.req, tc.g, used, tc.max)
			var be *Error
			switch {
			case tc.status == 0 && (err != nil || len(dates) != tc.dates):
				t.Fatalf("%d dates, %v; want %d", len(dates), err, tc.dates)
			case tc.status != 0 && (!errors.As(err, &be) || be.Status != tc.status || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("error %v; want %d with %q", err, tc.status, tc.want)
			}
		})
	}
}

// TestPlan: what a backfill does with each date decides as the daemon will.
func TestPlan(t *testing.T) {
	t.Parallel()
	dates := []time.Time{day, day.Add(time.Hour), day.Add(2 * time.Hour), day.Add(3 * time.Hour)}
	runs := []store.Run{{RunID: "f", LogicalDate: day, State: vocab.RunFailed}, {RunID: "s", LogicalDate: day.Add(time.Hour),
		State: vocab.RunSuccess}, {RunID: "r", LogicalDate: day.Add(2 * time.Hour), State: vocab.RunRunning}}
	for _, tc := range []struct {
		r    vocab.Reprocess
		want []vocab.BackfillAction
	}{
		{vocab.ReprocessNone, []vocab.BackfillAction{vocab.BackfillSkipped, vocab.BackfillSkipped, vocab.BackfillSkipped, vocab.BackfillCreated}},
		{vocab.ReprocessFailed, []vocab.BackfillAction{vocab.BackfillCleared, vocab.BackfillSkipped, vocab.BackfillSkipped, vocab.BackfillCreated}},
		{vocab.ReprocessCompleted, []vocab.BackfillAction{vocab.BackfillCleared, vocab.BackfillCleared, vocab.BackfillSkipped, vocab.BackfillCreated}},
	} {
		for i, p := range Plan(tc.r, dates, runs) {
			if p.Action != tc.want[i] {
				t.Errorf("%s, date %d: %s, want %s (%s)", tc.r, i, p.Action, tc.want[i], p.Reason)
			}
		}
	}
	if o := Overlap([]store.Backfill{{ID: 3, From: day, To: day.Add(time.Hour)}}, day.Add(time.Hour), day.Add(5*time.Hour)); o == nil || o.ID != 3 {
		t.Error("ranges that share an end do not overlap")
	}
	if o := Overlap([]store.Backfill{{ID: 3, From: day, To: day.Add(time.Hour)}}, day.Add(2*time.Hour), day.Add(5*time.Hour)); o != nil {
		t.Error("disjoint ranges overlap")
	}
	_ = http.StatusOK
}

// TestSlotHours: a created run counts every task's mean duration times its slots; a cleared
// run with reprocess failed only the tasks its clear takes; a task that never ran is named.
func TestSlotHours(t *testing.T) {
	t.Parallel()
	g := &dag.DAG{ID: "etl", Tasks: []*dag.Task{{ID: "a", PoolRequirements: map[string]int{"wh": 2}}, {ID: "b"}, {ID: "c"}}}
	d := Durations([]store.Attempt{{TaskID: "a", StartDate: day, EndDate: day.Add(30 * time.Minute)},
		{TaskID: "a", StartDate: day, EndDate: day.Add(90 * time.Minute)}, {TaskID: "b", StartDate: day, EndDate: day.Add(time.Hour)}})
	plan := []Planned{{Action: vocab.BackfillCreated}, {Action: vocab.BackfillCleared, RunID: "x"}, {Action: vocab.BackfillSkipped}}
	needs := func(t *dag.Task) map[string]int {
		if len(t.PoolRequirements) > 0 {
			return t.PoolRequirements
		}
		return map[string]int{"default": 1}
	}
	hours, unknown := SlotHours(g, plan, map[string][]string{"x": {"b"}}, d, needs)
	if hours["wh"] != 2 || hours["default"] != 2 || len(unknown) != 1 || unknown[0] != "c" {
		t.Fatalf("hours %v, unknown %v", hours, unknown)
	}
}
