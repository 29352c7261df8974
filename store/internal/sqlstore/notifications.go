package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/vocab"
)

// The outbox of notifications (§13): rows written in the transaction of the change that causes
// them, claimed under a lease by the daemon that sends them, settled with the outcome.

// InsertNotifications puts events in the outbox; a row whose key is stored already is dropped.
func (t *Tx) InsertNotifications(ns []*store.Notification) (int, error) {
	inserted := 0
	for _, n := range ns {
		if !n.Event.Valid() {
			return inserted, fmt.Errorf("%w: unknown notification event %q", store.ErrConstraint, n.Event)
		}
		if n.Key == "" || n.Notifier == "" {
			return inserted, fmt.Errorf("%w: notification %s without a key or a notifier", store.ErrConstraint, n.Event)
		}
		st := n.State
		if st == "" {
			st = vocab.DeliveryPending
		}
		next := n.NextAt
		if next.IsZero() {
			next = n.CreatedAt
		}
		// A row may be written settled already: a test sent at once (the API's "send test").
		id, ok, err := t.insertID(`INSERT INTO notifications (idem_key, event, notifier, dag_id, run_id, task_id, try_number,
			payload, state, created_at, next_at, tries, sender, sent_at, last_error)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (idem_key) DO NOTHING RETURNING id`, n.Key, string(n.Event), n.Notifier, n.DAGID, n.RunID, n.TaskID,
			n.Try, n.Payload, string(st), store.Micros(n.CreatedAt), store.Micros(next), n.Tries, n.Sender,
			nullMicros(n.SentAt), n.LastError)
		if err != nil {
			return inserted, err
		}
		n.ID = 0
		if ok {
			n.ID, n.State, n.NextAt = id, st, next
			inserted++
		}
	}
	return inserted, nil
}

const notificationCols = `id, idem_key, event, notifier, dag_id, run_id, task_id, try_number, payload, state, created_at,
	next_at, tries, sender, lease_until, sent_at, last_error`

func scanNotification(rows interface{ Scan(...any) error }) (store.Notification, error) {
	var n store.Notification
	var created, next int64
	var lease, sent sql.NullInt64
	err := rows.Scan(&n.ID, &n.Key, &n.Event, &n.Notifier, &n.DAGID, &n.RunID, &n.TaskID, &n.Try, &n.Payload, &n.State,
		&created, &next, &n.Tries, &n.Sender, &lease, &sent, &n.LastError)
	n.CreatedAt, n.NextAt, n.LeaseUntil, n.SentAt = store.FromMicros(created), store.FromMicros(next), timeOf(lease), timeOf(sent)
	return n, err
}

// ClaimNotifications claims the due rows for sender: pending ones whose next try has come and
// sending ones whose sender's lease lapsed, oldest first. It runs under the writers' lock, so
// two daemons never claim one row under the same try.
func (t *Tx) ClaimNotifications(sender string, now, leaseUntil time.Time, limit int) ([]store.Notification, error) {
	if limit <= 0 {
		return nil, nil
	}
	rows, err := t.query(`SELECT id FROM notifications WHERE (state = 'pending' AND next_at <= ?)
		OR (state = 'sending' AND lease_until <= ?) ORDER BY next_at, id LIMIT ?`, store.Micros(now), store.Micros(now), limit)
	if err != nil {
		return nil, err
	}
	var ids []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return nil, unavailable(err)
		}
		ids = append(ids, id)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, unavailable(err)
	}
	out := make([]store.Notification, 0, len(ids))
	for _, id := range ids {
		n, err := scanNotification(t.queryRow(`UPDATE notifications SET state = 'sending', sender = ?, lease_until = ?,
			tries = tries + 1 WHERE id = ? RETURNING `+notificationCols, sender, store.Micros(leaseUntil), id))
		if err != nil {
			return nil, t.fail("update notifications claim", err)
		}
		t.wrote = true
		out = append(out, n)
	}
	return out, nil
}

// SettleNotification records the outcome of the try sender began as try number tries.
func (t *Tx) SettleNotification(id int64, sender string, tries int, o store.NotificationOutcome) (bool, error) {
	switch o.State {
	case vocab.DeliveryDelivered, vocab.DeliveryFailed, vocab.DeliveryPending:
	default:
		return false, fmt.Errorf("%w: a try cannot leave a notification %s", store.ErrConstraint, o.State)
	}
	var sent any
	if o.State.Terminal() {
		sent = store.Micros(o.At)
	}
	next := o.NextAt
	if next.IsZero() {
		next = o.At
	}
	res, err := t.exec(`UPDATE notifications SET state = ?, next_at = ?, sent_at = ?, last_error = ?, lease_until = NULL
		WHERE id = ? AND state = 'sending' AND sender = ? AND tries = ?`,
		string(o.State), store.Micros(next), sent, o.Error, id, sender, tries)
	if err != nil {
		return false, err
	}
	n, _ := res.RowsAffected()
	return n == 1, nil
}

// Bounds of ListNotifications' page.
const (
	notificationsLimit    = 100
	notificationsMaxLimit = 1000
)

// ListNotifications lists the outbox rows f selects, newest first, and how many it selects.
func (s *DB) ListNotifications(ctx context.Context, f store.NotificationFilter) ([]store.Notification, int, error) {
	var w listWhere
	w.eq("dag_id", f.DAGID)
	w.eq("run_id", f.RunID)
	w.eq("task_id", f.TaskID)
	w.eq("notifier", f.Notifier)
	w.eq("event", string(f.Event))
	w.eq("state", string(f.State))
	w.since("created_at", f.After, f.Before)
	cond, args := w.sql(), w.args
	var total int
	if err := s.queryRow(ctx, `SELECT COUNT(*) FROM notifications`+cond, args...).Scan(&total); err != nil {
		return nil, 0, unavailable(err)
	}
	f.Limit, f.Offset = pageBounds(f.Limit, f.Offset, notificationsLimit, notificationsMaxLimit)
	rows, err := s.query(ctx, `SELECT `+notificationCols+` FROM notifications`+cond+
		` ORDER BY created_at DESC, id DESC LIMIT ? OFFSET ?`, append(args, f.Limit, f.Offset)...)
	if err != nil {
		return nil, 0, err
	}
	defer rows.Close()
	var out []store.Notification
	for rows.Next() {
		n, err := scanNotification(rows)
		if err != nil {
			return nil, 0, unavailable(err)
		}
		out = append(out, n)
	}
	return out, total, unavailable(rows.Err())
}

// NextNotification is the earliest next try of a pending row or lease end of a sending one.
func (s *DB) NextNotification(ctx context.Context) (time.Time, bool, error) {
	var at sql.NullInt64
	err := s.queryRow(ctx, `SELECT MIN(CASE WHEN state = 'pending' THEN next_at ELSE lease_until END) FROM notifications
		WHERE state IN ('pending', 'sending')`).Scan(&at)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return time.Time{}, false, nil
	case err != nil:
		return time.Time{}, false, unavailable(err)
	}
	return timeOf(at), at.Valid, nil
}
