package store

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"
)

// TestMigrateDaemonsToOwners: a database at schema 1 (daemons table, commands without
// 'replace') keeps its daemon rows as owners and its commands after migration 2.
func TestMigrateDaemonsToOwners(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "poolflow.db")
	db, err := sql.Open("sqlite3", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	v1, err := migrations.ReadFile("migrations/0001_init.sql")
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)`,
		string(v1),
		`INSERT INTO schema_migrations VALUES (1, '0001_init.sql', 0)`,
		`INSERT INTO daemons VALUES ('host:/state', 3, 99, 1000), ('test:host:7', 1, 7, 2000)`,
		`INSERT INTO dag_runs (id, dag_id, run_id, run_type, logical_date, state, queued_at) VALUES (1, 'd', 'r', 'manual', 0, 'running', 0)`,
		`INSERT INTO commands (kind, run, task_id, created_at) VALUES ('cancel', 1, 't', 5)`,
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	db.Close()
	st, err := Open(context.Background(), path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	owners, err := st.ListOwners(context.Background())
	if err != nil || len(owners) != 2 {
		t.Fatalf("owners %+v %v", owners, err)
	}
	if o := owners[0]; o.ID != "host:/state" || o.Kind != OwnerDaemon || o.Epoch != 3 || o.PID != 99 {
		t.Errorf("daemon row became %+v", o)
	}
	if o := owners[1]; o.Kind != OwnerTest {
		t.Errorf("test row became %+v", o)
	}
	err = st.WithTx(context.Background(), func(tx *Tx) error {
		cmds, err := tx.PendingCommands([]string{"nobody"})
		if err == nil && len(cmds) != 0 {
			t.Errorf("a command of an open run of another owner is pending for nobody: %+v", cmds)
		}
		if err := tx.UpdateRun(&Run{PK: 1, State: "running", Owner: "host:/state"}); err != nil {
			return err
		}
		cmds, err = tx.PendingCommands([]string{"host:/state"})
		if err == nil && (len(cmds) != 1 || cmds[0].Kind != "cancel") {
			t.Errorf("commands after the migration: %+v", cmds)
		}
		if err != nil {
			return err
		}
		return tx.InsertCommand(&Command{Kind: "replace", Run: 1}, FromMicros(6))
	})
	if err != nil {
		t.Fatal(err)
	}
}
