package sqlstore

import (
	"github.com/poolflow/poolflow/store"

	"context"
	"database/sql"
	"errors"
	"time"
)

const ownerCols = `id, kind, host, pid, proc_start, epoch, started_at, heartbeat, lease_until, COALESCE(handled_epoch, 0), api`

func scanOwner(sc interface{ Scan(...any) error }) (store.Owner, error) {
	var o store.Owner
	var started, hb, lease int64
	err := sc.Scan(&o.ID, &o.Kind, &o.Host, &o.PID, &o.ProcStart, &o.Epoch, &started, &hb, &lease, &o.HandledEpoch, &o.API)
	o.StartedAt, o.Heartbeat, o.LeaseUntil = store.FromMicros(started), store.FromMicros(hb), store.FromMicros(lease)
	return o, err
}

func scanOwners(rows *sql.Rows) ([]store.Owner, error) {
	defer rows.Close()
	var out []store.Owner
	for rows.Next() {
		o, err := scanOwner(rows)
		if err != nil {
			return nil, unavailable(err)
		}
		out = append(out, o)
	}
	return out, unavailable(rows.Err())
}

// Owners lists every owner row by id.
func (t *Tx) Owners() ([]store.Owner, error) {
	rows, err := t.query(`SELECT ` + ownerCols + ` FROM owners ORDER BY id`)
	if err != nil {
		return nil, err
	}
	return scanOwners(rows)
}

// OwnerByID reads one owner; ErrNotFound for an id never registered.
func (t *Tx) OwnerByID(id string) (store.Owner, error) {
	o, err := scanOwner(t.queryRow(`SELECT `+ownerCols+` FROM owners WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return o, store.ErrNotFound
	}
	return o, unavailable(err)
}

// PutOwner records an owner's start under the next fencing epoch (one more than the row's, if
// it had one) and sets o.Epoch to it. Whether the id may be taken is the caller's decision.
func (t *Tx) PutOwner(o *store.Owner) error {
	var epoch int64
	err := t.queryRow(`SELECT epoch FROM owners WHERE id = ?`, o.ID).Scan(&epoch)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return unavailable(err)
	}
	o.Epoch = epoch + 1
	_, err = t.exec(`INSERT INTO owners (id, kind, host, pid, proc_start, epoch, started_at, heartbeat, lease_until, api)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (id) DO UPDATE SET kind = excluded.kind, host = excluded.host, pid = excluded.pid,
		proc_start = excluded.proc_start, epoch = excluded.epoch, started_at = excluded.started_at,
		heartbeat = excluded.heartbeat, lease_until = excluded.lease_until, handled_epoch = NULL, api = excluded.api`,
		o.ID, o.Kind, o.Host, o.PID, o.ProcStart, o.Epoch, store.Micros(o.StartedAt), store.Micros(o.Heartbeat), store.Micros(o.LeaseUntil),
		o.API)
	return err
}

// Heartbeat renews an owner's lease and the leases of every claim it holds under epoch. It
// returns the owner's row as it was before the renewal, so the caller sees whether another
// process took its id (a newer epoch) or handled its end while it could not renew; it renews
// nothing then.
func (t *Tx) Heartbeat(id string, epoch int64, now, leaseUntil time.Time) (store.Owner, error) {
	o, err := t.OwnerByID(id)
	if err != nil || o.Epoch != epoch || o.HandledEpoch >= epoch {
		return o, err
	}
	if _, err := t.exec(`UPDATE owners SET heartbeat = ?, lease_until = ? WHERE id = ? AND epoch = ?`,
		store.Micros(now), store.Micros(leaseUntil), id, epoch); err != nil {
		return o, err
	}
	_, err = t.exec(`UPDATE claims SET lease_until = ? WHERE daemon = ? AND epoch = ?`, store.Micros(leaseUntil), id, epoch)
	return o, err
}

// ReleaseOwner ends an owner's lease at now (a clean stop): live daemons handle what it left at
// once instead of waiting for the lease to run out. It changes nothing if another process took
// the id since.
func (t *Tx) ReleaseOwner(id string, epoch int64, now time.Time) error {
	_, err := t.exec(`UPDATE owners SET lease_until = ?, heartbeat = ? WHERE id = ? AND epoch = ?`,
		store.Micros(now), store.Micros(now), id, epoch)
	return err
}

// DeleteOwner removes an owner row whose process will never come back (a dags test process)
// once nothing it owned is left open.
func (t *Tx) DeleteOwner(id string, epoch int64) error {
	_, err := t.exec(`DELETE FROM owners WHERE id = ? AND epoch = ?`, id, epoch)
	return err
}

// MarkOwnerHandled records that the end of owner id's epoch has been handled.
func (t *Tx) MarkOwnerHandled(id string, epoch int64) error {
	_, err := t.exec(`UPDATE owners SET handled_epoch = ? WHERE id = ? AND epoch = ?`, epoch, id, epoch)
	return err
}

// ListOwners lists every owner row, for /health, the UI and the CLI.
func (s *DB) ListOwners(ctx context.Context) ([]store.Owner, error) {
	rows, err := s.query(ctx, `SELECT `+ownerCols+` FROM owners ORDER BY id`)
	if err != nil {
		return nil, unavailable(err)
	}
	return scanOwners(rows)
}

// GetOwner reads one owner row; ErrNotFound for an id never registered.
func (s *DB) GetOwner(ctx context.Context, id string) (store.Owner, error) {
	o, err := scanOwner(s.queryRow(ctx, `SELECT `+ownerCols+` FROM owners WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return o, store.ErrNotFound
	}
	return o, unavailable(err)
}
