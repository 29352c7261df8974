package sqlstore

import (
	"errors"
	"time"

	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/vocab"
)

// What a live owner does with the work of an owner whose lease expired (§9). The decision of who
// is dead and what may move is the executor's; these statements apply it.

// ClaimsOf lists the claims owner holds under an epoch up to maxEpoch.
func (t *Tx) ClaimsOf(owner string, maxEpoch int64) ([]store.Claim, error) {
	rows, err := t.query(`SELECT c.entry, c.pool, c.slots, c.daemon, c.epoch, COALESCE(c.pgid, 0), c.lease_until,
		(SELECT e.label FROM queue_entries e WHERE e.id = c.entry)
		FROM claims c WHERE c.daemon = ? AND c.epoch <= ? ORDER BY c.entry, c.pool`,
		owner, maxEpoch)
	if err != nil {
		return nil, err
	}
	return scanClaims(rows)
}

// ReleaseOwnerClaims releases every claim owner holds under an epoch up to maxEpoch: admitted
// entries go back to the queue with their try number (their next run replays, §4.8), sensors
// between pokes lose the claims they kept. The caller has made sure the owner's processes on
// this host are gone. It returns the entries it released.
func (t *Tx) ReleaseOwnerClaims(owner string, maxEpoch int64) ([]int64, error) {
	claims, err := t.ClaimsOf(owner, maxEpoch)
	if err != nil {
		return nil, err
	}
	var out []int64
	for i, c := range claims {
		if i > 0 && claims[i-1].Entry == c.Entry {
			continue
		}
		if _, err := t.ReleaseEntry(c.Entry); err != nil {
			return nil, err
		}
		out = append(out, c.Entry)
	}
	return out, nil
}

// AdoptRuns moves owner from's open runs of the given types to owner to (a live daemon taking
// over a dead one's leader-owned work) and returns how many moved.
func (t *Tx) AdoptRuns(from, to string, runTypes ...vocab.RunType) (int, error) {
	q := `UPDATE dag_runs SET owner = ?, seq = ? WHERE owner = ? AND state IN ('queued', 'running') AND run_type IN (` +
		rowsOf(len(runTypes), "?") + `)`
	args := []any{to, t.stamp(), from}
	for _, rt := range runTypes {
		args = append(args, rt)
	}
	res, err := t.exec(q, args...)
	if err != nil {
		return 0, err
	}
	n, _ := res.RowsAffected()
	return int(n), nil
}

// FailOwnerRuns ends owner's open runs of runType as failed with reason: their waiting entries
// are retired, every unfinished task instance fails with the reason. Their claims must have been
// released first; a run that still has an admitted entry is left open and counted in skipped.
func (t *Tx) FailOwnerRuns(owner string, runType vocab.RunType, reason string, now time.Time) (ended []store.Run, skipped int, err error) {
	rows, err := t.query(`SELECT `+runCols+` FROM dag_runs WHERE owner = ? AND run_type = ? AND state IN ('queued', 'running')
		ORDER BY id`, owner, runType)
	if err != nil {
		return nil, 0, err
	}
	runs, err := scanRuns(rows)
	if err != nil {
		return nil, 0, err
	}
	for i := range runs {
		r := runs[i]
		switch err := t.FailRun(&r, reason, now); {
		case errors.Is(err, store.ErrConflict):
			skipped++
		case err != nil:
			return nil, 0, err
		default:
			ended = append(ended, r)
		}
	}
	return ended, skipped, nil
}

// FailRun ends an open run as failed with reason, whatever its DAG: waiting entries retired,
// unfinished task instances failed. It is for runs nobody can advance any more (their owner is
// gone for good); it refuses a run with an admitted entry, whose attempt may still be running.
func (t *Tx) FailRun(r *store.Run, reason string, now time.Time) error {
	var admitted int
	if err := t.queryRow(`SELECT COUNT(*) FROM queue_entries WHERE run = ? AND state = 'admitted'`,
		r.PK).Scan(&admitted); err != nil {
		return unavailable(err)
	}
	if admitted > 0 {
		return store.ErrConflict
	}
	const waiting = `run = ? AND state = 'waiting'`
	if _, err := t.exec(`DELETE FROM claims WHERE entry IN (SELECT id FROM queue_entries WHERE `+waiting+`)`, r.PK); err != nil {
		return err
	}
	if _, err := t.exec(`UPDATE queue_entries SET state = 'retired', reason_code = 'retired', reason = ?, ended_at = ?, seq = ?
		WHERE `+waiting, reason, store.Micros(now), t.stamp(), r.PK); err != nil {
		return err
	}
	if _, err := t.exec(`UPDATE task_instances SET state = 'failed', reason_code = NULL, reason = ?, next_at = NULL, seq = ?,
		end_date = CASE WHEN start_date IS NULL THEN NULL ELSE COALESCE(end_date, ?) END
		WHERE run = ? AND state NOT IN ('success', 'failed', 'skipped', 'upstream_failed')`, reason, t.stamp(), store.Micros(now), r.PK); err != nil {
		return err
	}
	r.State, r.EndDate, r.ReasonCode, r.Reason = vocab.RunFailed, now, "", reason
	return t.UpdateRun(r)
}
