package storetest

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/vocab"
)

// Run runs the conformance suite against the harness's driver. Every test opens stores of its
// own, so they run in parallel.
func Run(t *testing.T, h Harness) {
	tests := []struct {
		name string
		fn   func(t *testing.T, h Harness)
	}{
		{"AdmitFailureLeavesNoClaim", testAdmitFailureLeavesNoClaim},
		{"AdmitDebitsEveryPool", testAdmitDebitsEveryPool},
		{"EntryStateMachine", testEntryStateMachine},
		{"StatesAreChecked", testStatesAreChecked},
		{"DuplicateKeyIsConflict", testDuplicateKeyIsConflict},
		{"ScheduledRunsUnique", testScheduledRunsUnique},
		{"IDsInInsertionOrder", testIDsInInsertionOrder},
		{"InsertEntries", testInsertEntries},
		{"MappedLines", testMappedLines},
		{"ReserveEntryIDs", testReserveEntryIDs},
		{"PutAttempts", testPutAttempts},
		{"AttemptReplaced", testAttemptReplaced},
		{"Outputs", testOutputs},
		{"OwnerRows", testOwnerRows},
		{"Takeover", testTakeover},
		{"Reads", testReads},
		{"RunText", testRunText},
		{"RunPages", testRunPages},
		{"TaskCells", testTaskCells},
		{"RunWaits", testRunWaits},
		{"SchemaNewerAtOpen", testSchemaNewerAtOpen},
		{"SchemaNewerWhileRunning", testSchemaNewerWhileRunning},
		{"SchemaNewerGoneAgain", testSchemaNewerGoneAgain},
		{"MigrateDaemonsToOwners", testMigrateDaemonsToOwners},
		{"MigrationsReachSchemaVersion", testMigrationsReachSchemaVersion},
		{"DataVersion", testDataVersion},
		{"WakeUp", testWakeUp},
		{"LockTimeoutIsUnavailable", testLockTimeoutIsUnavailable},
		{"ConcurrentAdmission", testConcurrentAdmission},
		{"ChangeStamps", testChangeStamps},
		{"NextIDs", testNextIDs},
		{"ReasonCodes", testReasonCodes},
		{"MigrateReasonCodes", testMigrateReasonCodes},
		{"CommandParams", testCommandParams},
		{"MaxTries", testMaxTries},
		{"Notes", testNotes},
		{"DeleteRun", testDeleteRun},
		{"Events", testEvents},
		{"MigrateRepair", testMigrateRepair},
		{"CopyRepair", testCopyRepair},
		{"DAGVersions", testDAGVersions},
		{"RunVersions", testRunVersions},
		{"CopyVersions", testCopyVersions},
		{"PruneRuns", testPruneRuns},
		{"PruneHighestRun", testPruneHighestRun},
		{"PruneEventsAndVersions", testPruneEventsAndVersions},
		{"Vacuum", testVacuum},
		{"PruneShrinks", testPruneShrinks},
		{"Notifications", testNotifications},
		{"Users", testUsers},
		{"Sessions", testSessions},
		{"MigrateUsers", testMigrateUsers},
		{"PoolTeams", testPoolTeams},
		{"RuleSkipped", testRuleSkipped},
		{"DeleteExpiredTokens", testDeleteExpiredTokens},
		{"Backfills", testBackfills},
		{"BackfillManyDates", testBackfillManyDates},
		{"WaitingReads", testWaitingReads},
		{"QueueSeq", testQueueSeq},
		{"PoolHistory", testPoolHistory},
		{"PoolUse", testPoolUse},
		{"PoolUseBacklog", testPoolUseBacklog},
		{"PoolCapacity", testPoolCapacity},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.fn(t, h)
		})
	}
}

var day = time.Unix(1_700_000_000, 0).UTC()

func bg() context.Context { return context.Background() }

// seed creates a run with one task instance and a waiting entry needing two pools and _global.
func seed(t testing.TB, st store.Store) *store.Entry {
	t.Helper()
	e := &store.Entry{TaskID: "transfer", TryNumber: 1, Label: "etl.transfer try 1", Priority: 1, Due: day,
		State: vocab.EntryWaiting, CreatedAt: day, Needs: []store.Requirement{{Pool: "destination_db", Slots: 2},
			{Pool: "source_db", Slots: 1}, {Pool: "_global", Slots: 1, Implicit: true, Capacity: 32}}}
	err := st.WithTx(bg(), func(tx store.Tx) error {
		r := &store.Run{DAGID: "etl", RunID: "r1", RunType: vocab.RunManual, LogicalDate: day, State: vocab.RunRunning, QueuedAt: day}
		if err := tx.InsertRun(r); err != nil {
			return err
		}
		if err := tx.InsertTI(&store.TaskInstance{Run: r.PK, TaskID: "transfer", State: vocab.TaskScheduled}); err != nil {
			return err
		}
		e.Run = r.PK
		return tx.InsertEntry(e)
	})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// testAdmitFailureLeavesNoClaim injects a failure in the middle of a multi-pool debit: the
// transaction rolls back and no pool keeps a partial claim (§4.3).
func testAdmitFailureLeavesNoClaim(t *testing.T, h Harness) {
	for fail := 1; fail <= 3; fail++ {
		st := h.New(t)
		e := seed(t, st)
		now := time.Now()
		err := st.WithTx(bg(), func(tx store.Tx) error {
			tx.FailClaimAfter(fail)
			return tx.Admit(e, "d1", 1, now, now.Add(30*time.Second))
		})
		if !errors.Is(err, store.ErrInjected) {
			t.Fatalf("fail at claim %d: err = %v", fail, err)
		}
		claims, err := st.ListClaims(bg())
		if err != nil || len(claims) != 0 {
			t.Fatalf("fail at claim %d: claims %v (%v), want none", fail, claims, err)
		}
		got, err := st.ListEntries(bg(), vocab.EntryWaiting)
		if err != nil || len(got) != 1 || len(got[0].Needs) != 3 {
			t.Fatalf("fail at claim %d: waiting entries %+v (%v)", fail, got, err)
		}
	}
}

// testAdmitDebitsEveryPool: a successful admission writes one claim per pool, and a completion
// under another epoch is refused (fencing, §4.8).
func testAdmitDebitsEveryPool(t *testing.T, h Harness) {
	st := h.New(t)
	e := seed(t, st)
	now := time.Now()
	must(t, st.WithTx(bg(), func(tx store.Tx) error { return tx.Admit(e, "d1", 2, now, now.Add(time.Minute)) }))
	if claims, _ := st.ListClaims(bg()); len(claims) != 3 {
		t.Fatalf("claims = %+v", claims)
	}
	// The attempt's process group goes on every claim of the holder's epoch, and only there.
	pgids := func() []int {
		t.Helper()
		claims, err := st.ListClaims(bg())
		must(t, err)
		var out []int
		for _, c := range claims {
			out = append(out, c.PGID)
		}
		return out
	}
	must(t, st.WithTx(bg(), func(tx store.Tx) error { return tx.SetPGIDs(map[int64]int{e.ID: 4242}, "d1", 1) }))
	if got := pgids(); got[0] != 0 || got[1] != 0 || got[2] != 0 {
		t.Fatalf("pgids after a write under another epoch = %v, want none", got)
	}
	must(t, st.WithTx(bg(), func(tx store.Tx) error {
		return tx.SetPGIDs(map[int64]int{e.ID: 4242, e.ID + 1000: 7}, "d1", 2)
	}))
	if got := pgids(); got[0] != 4242 || got[1] != 4242 || got[2] != 4242 {
		t.Fatalf("pgids = %v, want 4242 on every claim", got)
	}
	must(t, st.WithTx(bg(), func(tx store.Tx) error {
		held, err := tx.ReleaseHeld(e.ID, "d1", 1, now)
		if held {
			t.Error("a completion under epoch 1 released claims taken under epoch 2")
		}
		return err
	}))
	if claims, _ := st.ListClaims(bg()); len(claims) != 3 {
		t.Fatalf("claims after a fenced completion = %d, want 3", len(claims))
	}
	must(t, st.WithTx(bg(), func(tx store.Tx) error {
		held, err := tx.ReleaseHeld(e.ID, "d1", 2, now)
		if !held {
			t.Error("the holder's completion was refused")
		}
		return err
	}))
	if claims, _ := st.ListClaims(bg()); len(claims) != 0 {
		t.Fatalf("claims after completion = %+v", claims)
	}
}

// testEntryStateMachine: an entry moves only along the state machine; a late or repeated call
// (a requeue after the end, a second release) is ErrEntryState, changes nothing, and leaves the
// transaction usable.
func testEntryStateMachine(t *testing.T, h Harness) {
	st := h.New(t)
	e := seed(t, st)
	now := time.Now()
	tx := func(fn func(tx store.Tx) error) error { return st.WithTx(bg(), fn) }
	must(t, tx(func(tx store.Tx) error { return tx.Admit(e, "d1", 1, now, now.Add(time.Minute)) }))
	if err := tx(func(tx store.Tx) error { return tx.Admit(e, "d1", 1, now, now.Add(time.Minute)) }); !errors.Is(err, store.ErrEntryState) {
		t.Fatalf("second admission: %v, want ErrEntryState", err)
	}
	must(t, tx(func(tx store.Tx) error {
		held, err := tx.ReleaseHeld(e.ID, "d1", 1, now)
		if !held {
			t.Error("the holder's release was refused")
		}
		return err
	}))
	for name, fn := range map[string]func(tx store.Tx) error{
		"requeue": func(tx store.Tx) error { return tx.RequeueEntry(e.ID) },
		"retire": func(tx store.Tx) error {
			return tx.EndEntry(e.ID, vocab.EntryRetired, vocab.ReasonRetired, "late", now)
		},
		"admit": func(tx store.Tx) error { return tx.Admit(e, "d1", 1, now, now.Add(time.Minute)) },
		"poke":  func(tx store.Tx) error { return tx.Reschedule(e.ID, nil, now) },
		"cancel": func(tx store.Tx) error {
			return tx.EndEntry(e.ID, vocab.EntryCancelled, vocab.ReasonCancelled, "late", now)
		},
	} {
		err := tx(func(tx store.Tx) error {
			err := fn(tx)
			// The refusal leaves the transaction usable: the same transaction reads on.
			if _, rerr := tx.Claims(); rerr != nil {
				t.Errorf("%s: the transaction after a refusal: %v", name, rerr)
			}
			return err
		})
		if !errors.Is(err, store.ErrEntryState) {
			t.Errorf("%s of a done entry: %v, want ErrEntryState", name, err)
		}
	}
	got, err := st.EntryByID(bg(), e.ID)
	if err != nil || got.State != vocab.EntryDone {
		t.Fatalf("entry after refused moves: %+v %v", got, err)
	}
	if claims, _ := st.ListClaims(bg()); len(claims) != 0 {
		t.Fatalf("a refused move left claims: %+v", claims)
	}
}

// testStatesAreChecked: the schema refuses a state that is not one of the known strings.
func testStatesAreChecked(t *testing.T, h Harness) {
	st := h.New(t)
	e := seed(t, st)
	err := st.WithTx(bg(), func(tx store.Tx) error {
		return tx.UpdateTI(&store.TaskInstance{Run: e.Run, TaskID: "transfer", State: "exploded"})
	})
	if !errors.Is(err, store.ErrConstraint) || errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("err = %v, want ErrConstraint", err)
	}
}

// testDuplicateKeyIsConflict: a duplicate key is ErrConflict, typed at the seam.
func testDuplicateKeyIsConflict(t *testing.T, h Harness) {
	st := h.New(t)
	e := seed(t, st)
	err := st.WithTx(bg(), func(tx store.Tx) error {
		return tx.InsertTI(&store.TaskInstance{Run: e.Run, TaskID: "transfer", State: vocab.TaskScheduled})
	})
	if !errors.Is(err, store.ErrConflict) {
		t.Fatalf("err = %v, want ErrConflict", err)
	}
}

// testScheduledRunsUnique: two daemons cannot create the same scheduled run, and the refusal
// leaves the pass's transaction usable (its other work still commits).
func testScheduledRunsUnique(t *testing.T, h Harness) {
	st := h.New(t)
	mk := func(tx store.Tx, id string) error {
		return tx.InsertRun(&store.Run{DAGID: "etl", RunID: id, RunType: vocab.RunSchedule, LogicalDate: day, State: vocab.RunQueued, QueuedAt: day})
	}
	must(t, st.WithTx(bg(), func(tx store.Tx) error { return mk(tx, "a") }))
	err := st.WithTx(bg(), func(tx store.Tx) error {
		if err := mk(tx, "b"); !errors.Is(err, store.ErrConflict) {
			t.Errorf("second fire: %v, want ErrConflict", err)
		}
		return tx.UpsertDAG("etl", "etl.yaml", "@daily", day)
	})
	must(t, err)
	if rows, err := st.ListDAGRows(bg()); err != nil || len(rows) != 1 {
		t.Fatalf("the pass's other write after a refused fire: %+v %v", rows, err)
	}
}

// testIDsInInsertionOrder: queue IDs follow insertion order (§4.4) and command ids are set.
func testIDsInInsertionOrder(t *testing.T, h Harness) {
	st := h.New(t)
	e := seed(t, st)
	var ids []int64
	must(t, st.WithTx(bg(), func(tx store.Tx) error {
		for i := 0; i < 5; i++ {
			n := &store.Entry{Run: e.Run, TaskID: "transfer", TryNumber: 2 + i, Label: "x", Due: day, State: vocab.EntryWaiting, CreatedAt: day}
			if err := tx.InsertEntry(n); err != nil {
				return err
			}
			ids = append(ids, n.ID)
		}
		c := &store.Command{Kind: vocab.CommandCancel, Run: e.Run, TaskID: "transfer"}
		if err := tx.InsertCommand(c, day); err != nil {
			return err
		}
		if c.ID == 0 {
			t.Error("command id not set")
		}
		return nil
	}))
	for i, id := range ids {
		if id <= e.ID || (i > 0 && id <= ids[i-1]) {
			t.Fatalf("ids %v after %d: not increasing", ids, e.ID)
		}
	}
}

// testAttemptReplaced: a replayed try replaces the attempt row of the same try.
func testAttemptReplaced(t *testing.T, h Harness) {
	st := h.New(t)
	e := seed(t, st)
	for _, state := range []vocab.TaskState{vocab.TaskFailed, vocab.TaskSuccess} {
		must(t, st.WithTx(bg(), func(tx store.Tx) error {
			return tx.InsertAttempt(&store.Attempt{Run: e.Run, TaskID: "transfer", TryNumber: 1, State: state,
				StartDate: day, EndDate: day.Add(time.Second)})
		}))
	}
	as, err := st.ListAttempts(bg(), e.Run, "transfer")
	if err != nil || len(as) != 1 || as[0].State != vocab.TaskSuccess || !as[0].EndDate.Equal(day.Add(time.Second)) {
		t.Fatalf("attempts %+v %v", as, err)
	}
}

// testOutputs: an attempt's output is stored with it, and a task instance's output is its
// successful attempt's: none while it runs again after a clear, none from a failed try (§14).
func testOutputs(t *testing.T, h Harness) {
	st := h.New(t)
	e := seed(t, st)
	end := func(try int, state vocab.TaskState, out string) {
		t.Helper()
		must(t, st.WithTx(bg(), func(tx store.Tx) error {
			if err := tx.PutAttempts([]*store.Attempt{{Run: e.Run, TaskID: "transfer", TryNumber: try, State: state,
				StartDate: day, EndDate: day.Add(time.Second), Output: out}}); err != nil {
				return err
			}
			return tx.PutTIs([]*store.TaskInstance{{Run: e.Run, TaskID: "transfer", State: state, TryNumber: try}})
		}))
	}
	output := func() string {
		t.Helper()
		tis, err := st.ListTaskInstances(bg(), e.Run)
		if err != nil || len(tis) != 1 {
			t.Fatalf("task instances %+v %v", tis, err)
		}
		return tis[0].Output
	}
	end(1, vocab.TaskFailed, "")
	if got := output(); got != "" {
		t.Fatalf("failed try: output %q", got)
	}
	big := `{"files":["` + strings.Repeat("x", 60<<10) + `"]}`
	end(2, vocab.TaskSuccess, big)
	if got := output(); got != big {
		t.Fatalf("success: output of %d bytes, want %d", len(got), len(big))
	}
	as, err := st.ListAttempts(bg(), e.Run, "transfer")
	if err != nil || len(as) != 2 || as[0].Output != "" || as[1].Output != big {
		t.Fatalf("attempts %+v %v", as, err)
	}
	// Cleared: it is none again at the same try, and has no output until it succeeds again.
	must(t, st.WithTx(bg(), func(tx store.Tx) error {
		return tx.PutTIs([]*store.TaskInstance{{Run: e.Run, TaskID: "transfer", State: vocab.TaskNone, TryNumber: 2}})
	}))
	if got := output(); got != "" {
		t.Fatalf("cleared: output %q", got)
	}
}
