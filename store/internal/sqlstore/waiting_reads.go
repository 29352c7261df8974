package sqlstore

import (
	"cmp"
	"context"
	"slices"
	"strings"

	"github.com/poolflow/poolflow/store"
)

// The reads the pools page's snapshot of the waiting lines needs besides the whole queue
// (server/waiting_line.go): the queue's change stamp, which says whether a snapshot is
// current, and the entries of a page by ID.

// EntriesByID reads the entries of ids, by queue ID.
func (s *DB) EntriesByID(ctx context.Context, ids []int64) ([]store.Entry, error) {
	args := make([]any, len(ids))
	for i, id := range ids {
		args[i] = id
	}
	out, err := s.entriesByID(ctx, args, false)
	if err != nil {
		return nil, err
	}
	slices.SortFunc(out, func(a, b store.Entry) int { return cmp.Compare(a.ID, b.ID) })
	return out, nil
}

// QueueSeq reads the queue entries' newest change stamp (along queue_entries_seq).
func (s *DB) QueueSeq(ctx context.Context) (int64, error) {
	if err := s.schemaErr(ctx); err != nil {
		return 0, err
	}
	var seq int64
	if err := s.queryRow(ctx, `SELECT COALESCE(MAX(seq), 0) FROM queue_entries`).Scan(&seq); err != nil {
		return 0, unavailable(err)
	}
	return seq, nil
}

// entriesByID reads the entries of ids (waiting ones only, if waiting), 500 at a time: a
// reason filter's whole line is more than SQLite's bound on variables.
func (s *DB) entriesByID(ctx context.Context, ids []any, waiting bool) ([]store.Entry, error) {
	cond := ""
	if waiting {
		cond = `e.state = 'waiting' AND `
	}
	var out []store.Entry
	const chunk = 500
	for len(ids) > 0 {
		n := min(len(ids), chunk)
		es, err := entriesWhere(ctx, s.readers(), cond+`e.id IN (?`+strings.Repeat(", ?", n-1)+`)`, ids[:n]...)
		if err != nil {
			return nil, err
		}
		out = append(out, es...)
		ids = ids[n:]
	}
	return out, nil
}

// ClaimEntries lists the entries that hold claims (admitted ones, and sensors keeping claims
// between pokes), by queue ID.
func (s *DB) ClaimEntries(ctx context.Context) ([]store.Entry, error) {
	return entriesWhere(ctx, s.readers(), `e.id IN (SELECT c.entry FROM claims c)`)
}
