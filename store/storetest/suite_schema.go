package storetest

import (
	"context"
	"errors"
	"io/fs"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/vocab"
)

// testSchemaNewerAtOpen: a database migrated by a newer binary is refused at open, clearly.
func testSchemaNewerAtOpen(t *testing.T, h Harness) {
	target := h.Target(t)
	st := h.Open(t, target)
	st.Close()
	h.Exec(t, target, `INSERT INTO schema_migrations (version, name, applied_at) VALUES (`+
		itoa(store.SchemaVersion()+1)+`, 'future', 0)`)
	_, err := store.Open(context.Background(), target, h.Options)
	if !errors.Is(err, store.ErrSchemaTooNew) || !strings.Contains(err.Error(), "upgrade poolflow") {
		t.Fatalf("err = %v", err)
	}
}

// testSchemaNewerWhileRunning: a newer binary migrating while a handle is open makes its next
// transaction, its reads and its DataVersion ErrUnavailable (wrapping ErrSchemaTooNew): the
// daemon stops admitting and answers 503 instead of writing under a schema it does not know.
func testSchemaNewerWhileRunning(t *testing.T, h Harness) {
	target := h.Target(t)
	st := h.Open(t, target)
	seed(t, st)
	idle := h.Open(t, target) // a second handle, as an idle daemon's
	before, err := idle.DataVersion(bg())
	must(t, err)
	h.Exec(t, target, `INSERT INTO schema_migrations (version, name, applied_at) VALUES (`+
		itoa(store.SchemaVersion()+1)+`, 'future', 0)`)
	_, err = st.Begin(bg())
	if !errors.Is(err, store.ErrUnavailable) || !errors.Is(err, store.ErrSchemaTooNew) {
		t.Fatalf("begin after a newer migration: %v", err)
	}
	if _, err := st.ListPools(bg()); !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("read after a newer migration: %v", err)
	}
	if _, err := st.DataVersion(bg()); !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("data version after a newer migration: %v", err)
	}
	// The idle handle's poll sees an outside change or the schema itself (within the bounded
	// poll), which makes its loop pass; the pass's transaction is refused.
	deadline := time.Now().Add(10 * time.Second)
	for {
		v, err := idle.DataVersion(bg())
		if errors.Is(err, store.ErrUnavailable) || (err == nil && v != before) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("an idle handle did not notice the newer schema: version %d (%v)", v, err)
		}
		select {
		case <-idle.Changed():
		case <-time.After(50 * time.Millisecond):
		}
	}
	if _, err := idle.Begin(bg()); !errors.Is(err, store.ErrSchemaTooNew) {
		t.Fatalf("idle handle's begin: %v", err)
	}
}

// testSchemaNewerGoneAgain: once the newer version row is gone again (an upgrade rolled back, a
// row inserted by mistake), a handle that refused its operations for it serves them again
// without a restart: its reads, its DataVersion and its transactions, the idle handle's too.
func testSchemaNewerGoneAgain(t *testing.T, h Harness) {
	target := h.Target(t)
	st := h.Open(t, target)
	seed(t, st)
	idle := h.Open(t, target)
	future := itoa(store.SchemaVersion() + 1)
	h.Exec(t, target, `INSERT INTO schema_migrations (version, name, applied_at) VALUES (`+future+`, 'future', 0)`)
	if _, err := st.Begin(bg()); !errors.Is(err, store.ErrSchemaTooNew) {
		t.Fatalf("begin after a newer migration: %v", err)
	}
	if _, err := st.ListPools(bg()); !errors.Is(err, store.ErrSchemaTooNew) {
		t.Fatalf("read after a newer migration: %v", err)
	}
	if _, err := idle.Begin(bg()); !errors.Is(err, store.ErrSchemaTooNew) {
		t.Fatalf("idle handle's begin after a newer migration: %v", err)
	}
	h.Exec(t, target, `DELETE FROM schema_migrations WHERE version = `+future)
	ops := map[string]func(store.Store) error{
		"read":         func(s store.Store) error { _, err := s.ListPools(bg()); return err },
		"data version": func(s store.Store) error { _, err := s.DataVersion(bg()); return err },
		"transaction": func(s store.Store) error {
			return s.WithTx(bg(), func(tx store.Tx) error { _, err := tx.Pools(); return err })
		},
	}
	for _, name := range []string{"read", "data version", "transaction"} {
		for who, s := range map[string]store.Store{"handle": st, "idle handle": idle} {
			deadline := time.Now().Add(10 * time.Second)
			for {
				err := ops[name](s)
				if err == nil {
					break
				}
				if !errors.Is(err, store.ErrSchemaTooNew) || time.Now().After(deadline) {
					t.Fatalf("%s of the %s after the newer row is gone: %v", name, who, err)
				}
				time.Sleep(20 * time.Millisecond)
			}
		}
	}
}

// testMigrateDaemonsToOwners: a database at schema 1 (daemons table, commands without
// 'replace') keeps its daemon rows as owners and its commands after migration 2.
func testMigrateDaemonsToOwners(t *testing.T, h Harness) {
	target := h.Target(t)
	v1, err := fs.ReadFile(h.Migrations, "0001_init.sql")
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at BIGINT NOT NULL)`,
		string(v1),
		`INSERT INTO schema_migrations VALUES (1, '0001_init.sql', 0)`,
		`INSERT INTO daemons VALUES ('host:/state', 3, 99, 1000), ('test:host:7', 1, 7, 2000)`,
		`INSERT INTO dag_runs (dag_id, run_id, run_type, logical_date, state, queued_at) VALUES ('d', 'r', 'manual', 0, 'running', 0)`,
		`INSERT INTO commands (kind, run, task_id, created_at) VALUES ('cancel', 1, 't', 5)`,
	} {
		h.Exec(t, target, q)
	}
	st := h.Open(t, target)
	owners, err := st.ListOwners(bg())
	if err != nil || len(owners) != 2 {
		t.Fatalf("owners %+v %v", owners, err)
	}
	if o := owners[0]; o.ID != "host:/state" || o.Kind != vocab.OwnerDaemon || o.Epoch != 3 || o.PID != 99 {
		t.Errorf("daemon row became %+v", o)
	}
	if o := owners[1]; o.Kind != vocab.OwnerTest {
		t.Errorf("test row became %+v", o)
	}
	must(t, st.WithTx(bg(), func(tx store.Tx) error {
		cmds, err := tx.PendingCommands([]string{"nobody"})
		if err == nil && len(cmds) != 0 {
			t.Errorf("a command of an open run of another owner is pending for nobody: %+v", cmds)
		}
		if err := tx.UpdateRun(&store.Run{PK: 1, State: vocab.RunRunning, Owner: "host:/state"}); err != nil {
			return err
		}
		cmds, err = tx.PendingCommands([]string{"host:/state"})
		if err == nil && (len(cmds) != 1 || cmds[0].Kind != vocab.CommandCancel) {
			t.Errorf("commands after the migration: %+v", cmds)
		}
		if err != nil {
			return err
		}
		// 'replace' is a kind since schema 2; ids go on after the copied row's.
		c := &store.Command{Kind: vocab.CommandReplace, Run: 1}
		if err := tx.InsertCommand(c, store.FromMicros(6)); err != nil {
			return err
		}
		if c.ID <= 1 {
			t.Errorf("new command id %d", c.ID)
		}
		r := &store.Run{DAGID: "d", RunID: "r2", RunType: vocab.RunManual, State: vocab.RunQueued}
		if err := tx.InsertRun(r); err != nil {
			return err
		}
		if r.PK <= 1 {
			t.Errorf("new run id %d after a row with id 1", r.PK)
		}
		// 'node' is a run type since schema 8, added to a table that already has rows.
		if err := tx.InsertRun(&store.Run{DAGID: "d", RunID: "n", RunType: vocab.RunNode, State: vocab.RunQueued, Owner: "host:/state"}); err != nil {
			return err
		}
		return nil
	}))
}

// testMigrationsReachSchemaVersion: the driver's migrations are numbered 1…SchemaVersion.
func testMigrationsReachSchemaVersion(t *testing.T, h Harness) {
	files, err := fs.Glob(h.Migrations, "*.sql")
	if err != nil || len(files) != store.SchemaVersion() {
		t.Fatalf("%s migrations %v (%v), want %d", h.Driver, files, err, store.SchemaVersion())
	}
}

func itoa(n int) string { return strconv.Itoa(n) }
