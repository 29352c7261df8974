package sqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/poolflow/poolflow/store"
)

// A table of the schema as Copy moves it: columns in order, each an integer (i), a text (t) or
// a flag (b), every one read as nullable. Parents come before children.
type table struct {
	name string
	cols []string
	kind string // one letter per column
	key  string // ORDER BY
}

var tables = []table{
	{"owners", strings.Fields("id kind host pid proc_start epoch started_at heartbeat lease_until handled_epoch api"), "tttiiiiiiit", "id"},
	{"dags", strings.Fields("dag_id paused file schedule checkpoint updated_at version"), "tbttiii", "dag_id"},
	{"dag_versions", strings.Fields("dag_id version hash format file source first_seen last_seen"), "tittttii", "dag_id, version"},
	{"import_errors", strings.Fields("file message updated_at"), "tti", "file"},
	{"pools", strings.Fields("name slots target_slots ordering max_queued starvation_after include_deferred on_resize description source updated_at teams"),
		"tiitiibtttit", "name"},
	{"backfills", strings.Fields("id dag_id from_date to_date reprocess max_active_runs run_backwards conf max_slots paused state owner created_by created_at updated_at completed_at"),
		"itiitibttbtttiii", "id"},
	{"dag_runs", strings.Fields("id dag_id run_id run_type logical_date state conf note note_by note_at no_queue owner queued_at start_date end_date reason_code reason version backfill"),
		"itttittttibtiiittii", "id"},
	{"backfill_dates", strings.Fields("backfill ordinal logical_date action run reason"), "iiitit", "backfill, ordinal"},
	{"task_instances", strings.Fields("run task_id state try_number max_tries start_date end_date next_at reason_code reason note note_by note_at map_first map_next map_length"),
		"ittiiiiittttiiii", "run, task_id"},
	{"attempts", strings.Fields("run task_id try_number state start_date end_date reason_code reason daemon version output"), "ititiitttit", "run, task_id, try_number"},
	{"queue_entries", strings.Fields("id run task_id try_number label priority due deadline state force reason_code reason rule rule_skipped replay not_before fingerprint created_at admitted_at ended_at version"),
		"iititiiitbttttbitiiii", "id"},
	{"entry_requirements", strings.Fields("entry pool slots implicit capacity"), "itibi", "entry, pool"},
	{"pool_capacity", strings.Fields("id pool at slots"), "itii", "id"},
	{"pool_use", strings.Fields("pool width bucket net area rise rise_at"), "tiiiiii", "pool, width, bucket"},
	{"claims", strings.Fields("entry pool slots daemon epoch pgid lease_until"), "ititiii", "entry, pool"},
	{"users", strings.Fields("name password_hash roles created_at updated_at"), "tttii", "name"},
	{"api_tokens", strings.Fields("id user_name name hash prefix created_at expires_at revoked_at"), "ittttiii", "id"},
	{"commands", strings.Fields("id kind run task_id who note params created_at done_at error"), "itittttiit", "id"},
	{"events", strings.Fields("id at actor action dag_id run_id task_id try_number pool params outcome"), "iitttttittt", "id"},
	{"notifications", strings.Fields("id idem_key event notifier dag_id run_id task_id try_number payload state created_at next_at tries sender lease_until sent_at last_error"),
		"ittttttittiiitiit", "id"},
}

// uncopied are the tables a copy leaves behind, but empties in the target with replace (and
// counts when it checks the target is empty): deleted_runs' tombstones are for the daemons
// running on the source, whose change numbers the target does not share; daemons started on the
// target load everything.
var uncopied = []string{"deleted_runs", "sessions"}

func init() {
	for _, tb := range tables {
		if len(tb.kind) != len(tb.cols) {
			panic("sqlstore: table " + tb.name + ": kinds do not match columns")
		}
	}
}

// CopyTo copies every row of every table of this store into dst, keeping ids, and makes dst's
// id generators continue after them. dst must be empty unless replace, which deletes its rows
// first. The source is read in one snapshot; dst is written in one transaction under its
// writers' lock, so a failed copy leaves dst as it was. It returns the rows copied per table.
func (s *DB) CopyTo(ctx context.Context, to store.Store, replace bool) ([]store.TableCount, error) {
	dst, ok := to.(*DB)
	if !ok {
		return nil, fmt.Errorf("%w: cannot copy into a %T", store.ErrInvalidOption, to)
	}
	if s.known != dst.known {
		return nil, fmt.Errorf("%w: source schema %d, target %d", store.ErrInvalidOption, s.known, dst.known)
	}
	src, err := s.r.BeginTx(ctx, s.d.Snapshot)
	if err != nil {
		return nil, unavailable(s.d.Classify(err))
	}
	defer src.Rollback()
	tx, err := dst.w.BeginTx(ctx, nil)
	if err != nil {
		return nil, unavailable(dst.d.Classify(err))
	}
	defer tx.Rollback()
	if err := dst.d.Lock(ctx, tx); err != nil {
		return nil, unavailable(dst.d.Classify(err))
	}
	names := make([]string, 0, len(tables)+len(uncopied))
	for _, tb := range tables {
		names = append(names, tb.name)
	}
	names = append(names, uncopied...)
	for _, name := range names {
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM `+name).Scan(&n); err != nil {
			return nil, dst.d.Classify(err)
		}
		if n > 0 && !replace {
			return nil, fmt.Errorf("%w: the target is not empty (%s has %d rows); copy into a new database, or replace its rows",
				store.ErrConflict, name, n)
		}
	}
	if replace {
		for i := len(names) - 1; i >= 0; i-- {
			if _, err := tx.ExecContext(ctx, `DELETE FROM `+names[i]); err != nil {
				return nil, dst.d.Classify(err)
			}
		}
	}
	var out []store.TableCount
	for _, tb := range tables {
		n, err := copyTable(ctx, s, src, dst, tx, tb)
		if err != nil {
			return nil, fmt.Errorf("copy %s: %w", tb.name, err)
		}
		out = append(out, store.TableCount{Table: tb.name, Rows: n})
	}
	if err := dst.d.ResetSequences(ctx, tx); err != nil {
		return nil, dst.d.Classify(err)
	}
	mark, err := dst.ch.Wrote(rawRows{ctx, tx})
	if err != nil {
		return nil, unavailable(dst.d.Classify(err))
	}
	if err := tx.Commit(); err != nil {
		return nil, unavailable(dst.d.Classify(err))
	}
	dst.ch.Committed(mark)
	return out, nil
}

// copyBatch is how many rows one INSERT carries (at most 19 columns: well under both servers'
// bound on parameters).
const copyBatch = 200

func copyTable(ctx context.Context, s *DB, src *sql.Tx, dst *DB, tx *sql.Tx, tb table) (int, error) {
	rows, err := src.QueryContext(ctx, `SELECT `+strings.Join(tb.cols, ", ")+` FROM `+tb.name+` ORDER BY `+tb.key)
	if err != nil {
		return 0, unavailable(s.d.Classify(err))
	}
	defer rows.Close()
	tuple := "(" + strings.TrimSuffix(strings.Repeat("?, ", len(tb.cols)), ", ") + ")"
	insert := func(args []any, n int) error {
		q := `INSERT INTO ` + tb.name + ` (` + strings.Join(tb.cols, ", ") + `) VALUES ` + rowsOf(n, tuple)
		_, err := tx.ExecContext(ctx, dst.bind(q), args...)
		return dst.d.Classify(err)
	}
	total, pending := 0, 0
	args := make([]any, 0, copyBatch*len(tb.cols))
	for rows.Next() {
		vals := make([]any, len(tb.cols))
		for i := range vals {
			switch tb.kind[i] {
			case 'i':
				vals[i] = new(sql.NullInt64)
			case 'b':
				vals[i] = new(sql.NullBool)
			default:
				vals[i] = new(sql.NullString)
			}
		}
		if err := rows.Scan(vals...); err != nil {
			return total, unavailable(err)
		}
		for _, v := range vals {
			args = append(args, value(v))
		}
		pending++
		total++
		if pending == copyBatch {
			if err := insert(args, pending); err != nil {
				return total, err
			}
			args, pending = args[:0], 0
		}
	}
	if err := rows.Err(); err != nil {
		return total, unavailable(err)
	}
	if pending > 0 {
		return total, insert(args, pending)
	}
	return total, nil
}

// value is a scanned nullable column as a statement argument.
func value(v any) any {
	switch v := v.(type) {
	case *sql.NullInt64:
		if v.Valid {
			return v.Int64
		}
	case *sql.NullBool:
		if v.Valid {
			return v.Bool
		}
	case *sql.NullString:
		if v.Valid {
			return v.String
		}
	}
	return nil
}
