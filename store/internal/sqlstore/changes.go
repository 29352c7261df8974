package sqlstore

import (
	"fmt"

	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/vocab"
)

// ChangesSince reads the runs, task instances and queue entries stamped after seq, and the
// tombstones of the runs deleted since (DeleteRun). Each table has an index on its stamp, so the
// cost follows what changed, not the history or the open runs.
//
// The stamps are bounded above too (by this transaction's own stamp, which no row can pass):
// PostgreSQL has no statistics on tables that just grew, and guesses a third of the rows for
// "seq > N" — a full scan — but a small share for a range, so it takes the index.
func (t *Tx) ChangesSince(seq int64) (store.Changes, error) {
	var c store.Changes
	upto := t.stamp()
	// Through IN (…): ordered by id, SQLite would rather walk the whole table in id order than
	// use the stamp index.
	rows, err := t.query(`SELECT `+runCols+` FROM dag_runs WHERE id IN (SELECT id FROM dag_runs WHERE seq > ? AND seq <= ?)
		ORDER BY id`, seq, upto)
	if err != nil {
		return c, err
	}
	if c.Runs, err = scanRuns(rows); err != nil {
		return c, err
	}
	rows, err = t.query(`SELECT `+tiCols+` FROM task_instances WHERE seq > ? AND seq <= ?`, seq, upto)
	if err != nil {
		return c, err
	}
	if c.TaskInstances, err = scanTIs(rows); err != nil {
		return c, err
	}
	if c.Entries, err = entriesWhere(t.ctx, t.q(), "e.id IN (SELECT id FROM queue_entries WHERE seq > ? AND seq <= ?)", seq,
		upto); err != nil {
		return c, err
	}
	c.DeletedRuns, err = t.deletedSince(seq, upto)
	return c, err
}

// RequestStop marks an admitted entry for its runner to stop (reason code stop_requested). The
// mark stays when the entry is put back in the queue (its runner died), so its owner fails it.
func (t *Tx) RequestStop(id int64, code vocab.ReasonCode, reason string) error {
	res, err := t.exec(`UPDATE queue_entries SET reason_code = ?, reason = ?, seq = ? WHERE id = ? AND state = 'admitted'`,
		code, reason, t.stamp(), id)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("%w: entry %d is not admitted", store.ErrEntryState, id)
	}
	return nil
}
