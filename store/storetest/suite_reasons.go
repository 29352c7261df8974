package storetest

import (
	"io/fs"
	"testing"
	"time"

	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/vocab"
)

// testReasonCodes: the reason code of a run, a task instance and an attempt is written and read
// back by every write and read that carries its reason, and a write without one clears it.
func testReasonCodes(t *testing.T, h Harness) {
	st := h.New(t)
	e := seed(t, st)
	var seq int64
	must(t, st.WithTx(bg(), func(tx store.Tx) error {
		seq = tx.Seq()
		r := &store.Run{DAGID: "etl", RunID: "refused", RunType: vocab.RunManual, LogicalDate: day, State: vocab.RunFailed,
			QueuedAt: day, ReasonCode: vocab.ReasonRejected, Reason: "pool p cannot admit etl.x try 1 at once"}
		if err := tx.InsertRun(r); err != nil {
			return err
		}
		if err := tx.InsertTI(&store.TaskInstance{Run: r.PK, TaskID: "x", State: vocab.TaskFailed, TryNumber: 1,
			ReasonCode: vocab.ReasonRejected, Reason: r.Reason}); err != nil {
			return err
		}
		if err := tx.PutTIs([]*store.TaskInstance{{Run: e.Run, TaskID: "transfer", State: vocab.TaskUpForRetry, TryNumber: 1,
			ReasonCode: vocab.ReasonExpired, Reason: "queue_timeout 1s passed while waiting"}}); err != nil {
			return err
		}
		return tx.PutAttempts([]*store.Attempt{{Run: e.Run, TaskID: "transfer", TryNumber: 1, State: vocab.TaskFailed,
			ReasonCode: vocab.ReasonExpired, Reason: "queue_timeout 1s passed while waiting"}})
	}))
	refused, err := st.GetRun(bg(), "etl", "refused")
	if err != nil || refused.ReasonCode != vocab.ReasonRejected || refused.Reason != "pool p cannot admit etl.x try 1 at once" {
		t.Fatalf("refused run %+v %v", refused, err)
	}
	code := func(tis []store.TaskInstance, id string) (vocab.ReasonCode, string) {
		for _, ti := range tis {
			if ti.TaskID == id {
				return ti.ReasonCode, ti.Reason
			}
		}
		t.Fatalf("no task instance %s in %+v", id, tis)
		return "", ""
	}
	tis, err := st.ListTaskInstances(bg(), refused.PK)
	if c, why := code(tis, "x"); err != nil || c != vocab.ReasonRejected || why != refused.Reason {
		t.Errorf("rejected task instance: %s %q %v", c, why, err)
	}
	tis, err = st.ListTaskInstances(bg(), e.Run)
	if c, _ := code(tis, "transfer"); err != nil || c != vocab.ReasonExpired {
		t.Errorf("expired task instance: %s %v", c, err)
	}
	as, err := st.ListAttempts(bg(), e.Run, "transfer")
	if err != nil || len(as) != 1 || as[0].ReasonCode != vocab.ReasonExpired || as[0].Reason != "queue_timeout 1s passed while waiting" {
		t.Errorf("attempts %+v %v", as, err)
	}
	must(t, st.WithTx(bg(), func(tx store.Tx) error {
		c, err := tx.ChangesSince(seq)
		if err != nil {
			return err
		}
		if cc, _ := code(c.TaskInstances, "transfer"); cc != vocab.ReasonExpired {
			t.Errorf("changed task instance's code %s", cc)
		}
		for _, r := range c.Runs {
			if r.RunID == "refused" && r.ReasonCode != vocab.ReasonRejected {
				t.Errorf("changed run %+v", r)
			}
		}
		// Writes without a code clear it: the retry starts, the run is refused for a reason
		// without one.
		if err := tx.UpdateTI(&store.TaskInstance{Run: e.Run, TaskID: "transfer", State: vocab.TaskScheduled,
			TryNumber: 1}); err != nil {
			return err
		}
		refused.ReasonCode, refused.Reason = "", "dag removed"
		return tx.UpdateRun(&refused)
	}))
	tis, _ = st.ListTaskInstances(bg(), e.Run)
	if c, why := code(tis, "transfer"); c != "" || why != "" {
		t.Errorf("task instance after a write without a code: %s %q", c, why)
	}
	if r, _ := st.GetRun(bg(), "etl", "refused"); r.ReasonCode != "" || r.Reason != "dag removed" {
		t.Errorf("run after a write without a code: %+v", r)
	}

	// The end of an attempt recorded for a run not in memory carries its code to the task
	// instance; failing a run nobody can advance gives its task instances a reason with none.
	now := time.Now()
	must(t, st.WithTx(bg(), func(tx store.Tx) error {
		if err := tx.UpdateTI(&store.TaskInstance{Run: e.Run, TaskID: "transfer", State: vocab.TaskRunning, TryNumber: 2,
			ReasonCode: vocab.ReasonExpired, Reason: "stale"}); err != nil {
			return err
		}
		return tx.RecordEnd(e.ID, &store.Attempt{TryNumber: 2, State: vocab.TaskFailed, StartDate: now, EndDate: now,
			ReasonCode: vocab.ReasonTimeout, Reason: "sensor timeout 1s passed"})
	}))
	tis, _ = st.ListTaskInstances(bg(), e.Run)
	if c, why := code(tis, "transfer"); c != vocab.ReasonTimeout || why != "sensor timeout 1s passed" {
		t.Errorf("task instance after RecordEnd: %s %q", c, why)
	}
	as, _ = st.ListAttempts(bg(), e.Run, "transfer")
	if len(as) != 2 || as[1].ReasonCode != vocab.ReasonTimeout {
		t.Errorf("attempts after RecordEnd %+v", as)
	}
	must(t, st.WithTx(bg(), func(tx store.Tx) error {
		if err := tx.UpdateTI(&store.TaskInstance{Run: e.Run, TaskID: "transfer", State: vocab.TaskUpForRetry, TryNumber: 2,
			ReasonCode: vocab.ReasonExpired, Reason: "queue_timeout 1s passed while waiting"}); err != nil {
			return err
		}
		r, err := tx.RunByPK(e.Run)
		if err != nil {
			return err
		}
		return tx.FailRun(&r, "owner gone", now)
	}))
	tis, _ = st.ListTaskInstances(bg(), e.Run)
	if c, why := code(tis, "transfer"); c != "" || why != "owner gone" {
		t.Errorf("task instance of a failed run: %s %q", c, why)
	}
}

// testMigrateReasonCodes: a database at schema 4 whose reasons start with "rejected: " or
// "expired: " keeps the words after migration 5 and has the code in reason_code.
func testMigrateReasonCodes(t *testing.T, h Harness) {
	target := h.Target(t)
	h.Exec(t, target, `CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at BIGINT NOT NULL)`)
	for v, name := range []string{"0001_init.sql", "0002_owners.sql", "0003_read_indexes.sql", "0004_change_stamps.sql"} {
		body, err := fs.ReadFile(h.Migrations, name)
		if err != nil {
			t.Fatal(err)
		}
		h.Exec(t, target, string(body))
		h.Exec(t, target, `INSERT INTO schema_migrations VALUES (`+itoa(v+1)+`, '`+name+`', 0)`)
	}
	for _, q := range []string{
		`INSERT INTO dag_runs (id, dag_id, run_id, run_type, logical_date, state, queued_at, end_date, reason)
			VALUES (1, 'd', 'refused', 'manual', 0, 'failed', 0, 1, 'rejected: dag d cannot start a run at once'),
			(2, 'd', 'ok', 'manual', 0, 'failed', 0, 1, 'dag removed')`,
		`INSERT INTO task_instances (run, task_id, state, try_number, reason) VALUES
			(1, 'a', 'failed', 1, 'rejected: pool p: backlog full (max_queued 1)'),
			(2, 'b', 'up_for_retry', 1, 'expired: queue_timeout 1s passed while waiting'),
			(2, 'c', 'up_for_retry', 1, 'cancelled by operator'),
			(2, 'd', 'failed', 1, 'exit status 1')`,
		`INSERT INTO attempts (run, task_id, try_number, state, reason) VALUES
			(1, 'a', 1, 'failed', 'rejected: pool p: backlog full (max_queued 1)'),
			(2, 'b', 1, 'failed', 'expired: queue_timeout 1s passed while waiting'),
			(2, 'd', 1, 'failed', 'Rejected: not a prefix of ours')`,
		`INSERT INTO queue_entries (id, run, task_id, try_number, label, priority, due, state, reason_code, reason, created_at)
			VALUES (1, 1, 'a', 1, 'd.a try 1', 1, 0, 'rejected', 'rejected', 'rejected: pool p: backlog full (max_queued 1)', 0),
			(2, 2, 'b', 1, 'd.b try 1', 1, 0, 'expired', 'expired', 'expired: queue_timeout 1s passed while waiting', 0)`,
	} {
		h.Exec(t, target, q)
	}
	st := h.Open(t, target)
	for _, want := range []struct {
		run        string
		code       vocab.ReasonCode
		reason     string
		task, said string // a task instance of the run and its reason as shown
	}{
		{"refused", vocab.ReasonRejected, "dag d cannot start a run at once", "a", "rejected: pool p: backlog full (max_queued 1)"},
		{"ok", "", "dag removed", "b", "expired: queue_timeout 1s passed while waiting"},
	} {
		r, err := st.GetRun(bg(), "d", want.run)
		if err != nil || r.ReasonCode != want.code || r.Reason != want.reason {
			t.Errorf("run %s: %q %q %v", want.run, r.ReasonCode, r.Reason, err)
		}
		tis, err := st.ListTaskInstances(bg(), r.PK)
		if err != nil {
			t.Fatal(err)
		}
		for _, ti := range tis {
			if ti.TaskID == want.task && ti.ReasonCode.Say(ti.Reason) != want.said {
				t.Errorf("task instance %s: %q %q", ti.TaskID, ti.ReasonCode, ti.Reason)
			}
		}
	}
	tis, _ := st.ListTaskInstances(bg(), 2)
	for _, ti := range tis {
		switch {
		case ti.TaskID == "b" && (ti.ReasonCode != vocab.ReasonExpired || ti.Reason != "queue_timeout 1s passed while waiting"),
			ti.TaskID == "c" && (ti.ReasonCode != vocab.ReasonCancelled || ti.Reason != "cancelled by operator"),
			ti.TaskID == "d" && (ti.ReasonCode != "" || ti.Reason != "exit status 1"):
			t.Errorf("task instance %s: %q %q", ti.TaskID, ti.ReasonCode, ti.Reason)
		}
	}
	as, err := st.RunAttempts(bg(), 2)
	if err != nil || len(as) != 2 {
		t.Fatalf("attempts %+v %v", as, err)
	}
	for _, a := range as {
		if a.TaskID == "b" && (a.ReasonCode != vocab.ReasonExpired || a.Reason != "queue_timeout 1s passed while waiting") ||
			a.TaskID == "d" && (a.ReasonCode != "" || a.Reason != "Rejected: not a prefix of ours") {
			t.Errorf("attempt %+v", a)
		}
	}
	for id, want := range map[int64]string{1: "pool p: backlog full (max_queued 1)", 2: "queue_timeout 1s passed while waiting"} {
		e, err := st.EntryByID(bg(), id)
		if err != nil || e.Reason != want || e.ReasonCode.Say(e.Reason) != string(e.ReasonCode)+": "+want {
			t.Errorf("entry %d: %q %q %v", id, e.ReasonCode, e.Reason, err)
		}
	}
}
