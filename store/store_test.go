package store

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func openTemp(t *testing.T) (*Store, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "poolflow.db")
	st, err := Open(context.Background(), path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st, path
}

// seed creates a run with one task instance and a waiting entry needing two pools.
func seed(t *testing.T, st *Store) *Entry {
	t.Helper()
	now := time.Unix(1_700_000_000, 0).UTC()
	e := &Entry{TaskID: "transfer", TryNumber: 1, Label: "etl.transfer try 1", Priority: 1, Due: now, State: "waiting",
		CreatedAt: now, Needs: []Requirement{{Pool: "destination_db", Slots: 2}, {Pool: "source_db", Slots: 1},
			{Pool: "_global", Slots: 1, Implicit: true, Capacity: 32}}}
	err := st.WithTx(context.Background(), func(tx *Tx) error {
		r := &Run{DAGID: "etl", RunID: "r1", RunType: "manual", LogicalDate: now, State: "running", QueuedAt: now}
		if err := tx.InsertRun(r); err != nil {
			return err
		}
		if err := tx.InsertTI(&TaskInstance{Run: r.PK, TaskID: "transfer", State: "scheduled"}); err != nil {
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

// TestAdmitFailureLeavesNoClaim injects a failure in the middle of a multi-pool debit: the
// transaction rolls back and no pool keeps a partial claim (§4.3).
func TestAdmitFailureLeavesNoClaim(t *testing.T) {
	t.Parallel()
	for fail := 1; fail <= 3; fail++ {
		st, _ := openTemp(t)
		e := seed(t, st)
		now := time.Now()
		err := st.WithTx(context.Background(), func(tx *Tx) error {
			tx.FailClaimAfter(fail)
			return tx.Admit(e, "d1", 1, now, now.Add(30*time.Second))
		})
		if !errors.Is(err, errInjected) {
			t.Fatalf("fail at claim %d: err = %v", fail, err)
		}
		claims, err := st.ListClaims(context.Background())
		if err != nil || len(claims) != 0 {
			t.Fatalf("fail at claim %d: claims %v (%v), want none", fail, claims, err)
		}
		got, err := st.ListEntries(context.Background(), "waiting")
		if err != nil || len(got) != 1 || len(got[0].Needs) != 3 {
			t.Fatalf("fail at claim %d: waiting entries %+v (%v)", fail, got, err)
		}
	}
}

// TestAdmitDebitsEveryPool: a successful admission writes one claim per pool, and a completion
// under another epoch is refused (fencing, §4.8).
func TestAdmitDebitsEveryPool(t *testing.T) {
	t.Parallel()
	st, _ := openTemp(t)
	e := seed(t, st)
	now := time.Now()
	if err := st.WithTx(context.Background(), func(tx *Tx) error { return tx.Admit(e, "d1", 2, now, now.Add(time.Minute)) }); err != nil {
		t.Fatal(err)
	}
	claims, _ := st.ListClaims(context.Background())
	if len(claims) != 3 {
		t.Fatalf("claims = %+v", claims)
	}
	err := st.WithTx(context.Background(), func(tx *Tx) error {
		held, err := tx.ReleaseHeld(e.ID, "d1", 1, now)
		if held {
			t.Error("a completion under epoch 1 released claims taken under epoch 2")
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if claims, _ := st.ListClaims(context.Background()); len(claims) != 3 {
		t.Fatalf("claims after a fenced completion = %d, want 3", len(claims))
	}
	err = st.WithTx(context.Background(), func(tx *Tx) error {
		held, err := tx.ReleaseHeld(e.ID, "d1", 2, now)
		if !held {
			t.Error("the holder's completion was refused")
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if claims, _ := st.ListClaims(context.Background()); len(claims) != 0 {
		t.Fatalf("claims after completion = %+v", claims)
	}
}

// TestStatesAreChecked: the schema refuses a state that is not one of the known strings.
func TestStatesAreChecked(t *testing.T) {
	t.Parallel()
	st, _ := openTemp(t)
	e := seed(t, st)
	err := st.WithTx(context.Background(), func(tx *Tx) error {
		return tx.UpdateTI(&TaskInstance{Run: e.Run, TaskID: "transfer", State: "exploded"})
	})
	if err == nil || !strings.Contains(err.Error(), "CHECK constraint failed") {
		t.Fatalf("err = %v, want a CHECK constraint failure", err)
	}
}

// TestSchemaNewerThanBinary: a database migrated by a newer binary is refused with a clear error.
func TestSchemaNewerThanBinary(t *testing.T) {
	t.Parallel()
	st, path := openTemp(t)
	if _, err := st.w.Exec(`INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, 'future', 0)`,
		SchemaVersion()+1); err != nil {
		t.Fatal(err)
	}
	st.Close()
	_, err := Open(context.Background(), path, Options{})
	if !errors.Is(err, ErrSchemaTooNew) || !strings.Contains(err.Error(), "upgrade poolflow") {
		t.Fatalf("err = %v", err)
	}
}

// TestPragmas: WAL, synchronous=FULL (2) and foreign keys are on.
func TestPragmas(t *testing.T) {
	t.Parallel()
	st, _ := openTemp(t)
	var mode string
	var sync, fk int
	for q, dst := range map[string]any{"PRAGMA journal_mode": &mode, "PRAGMA synchronous": &sync, "PRAGMA foreign_keys": &fk} {
		if err := st.w.QueryRow(q).Scan(dst); err != nil && !errors.Is(err, sql.ErrNoRows) {
			t.Fatal(err)
		}
	}
	if mode != "wal" || sync != 2 || fk != 1 {
		t.Fatalf("journal_mode %s synchronous %d foreign_keys %d", mode, sync, fk)
	}
}

// TestSynchronousOption: normal is SQLite's NORMAL (1); anything but full and normal is refused.
func TestSynchronousOption(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	st, err := Open(context.Background(), filepath.Join(dir, "a.db"), Options{Synchronous: "normal"})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var sync int
	if err := st.w.QueryRow("PRAGMA synchronous").Scan(&sync); err != nil {
		t.Fatal(err)
	}
	if sync != 1 || st.Options().Synchronous != "normal" {
		t.Fatalf("synchronous %d, options %+v", sync, st.Options())
	}
	if _, err := Open(context.Background(), filepath.Join(dir, "b.db"), Options{Synchronous: "sometimes"}); !errors.Is(err, ErrInvalidOption) {
		t.Fatalf("synchronous sometimes: %v, want ErrInvalidOption", err)
	}
}

// TestScheduledRunsUnique: two daemons cannot create the same scheduled run.
func TestScheduledRunsUnique(t *testing.T) {
	t.Parallel()
	st, _ := openTemp(t)
	at := time.Unix(1_700_000_000, 0).UTC()
	mk := func(id string) error {
		return st.WithTx(context.Background(), func(tx *Tx) error {
			return tx.InsertRun(&Run{DAGID: "etl", RunID: id, RunType: "schedule", LogicalDate: at, State: "queued", QueuedAt: at})
		})
	}
	if err := mk("a"); err != nil {
		t.Fatal(err)
	}
	if err := mk("b"); !errors.Is(err, ErrConflict) {
		t.Fatalf("second fire: %v, want ErrConflict", err)
	}
}
