package sqlstore

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"slices"
	"sort"
	"strings"

	"github.com/poolflow/poolflow/store"
)

// The paged reads of the waiting queue (store/waiting.go). Most waiting entries are neither
// force starts nor sensors keeping claims; those are read along the index queue_entries_line
// (priority, due time, queue ID: the walk's order but for the backfill flag of their run), as
// two streams, the entries of fresh runs and those of backfills', merged as the walk orders
// them. Reading stops where the caller's page or bound ends, so a page near the head of a
// 100,000-entry line reads about a page of rows. The few force starts and claim keepers are read
// apart and put first. A DAG filter numbers the whole line once (its places are the whole
// line's).

// lineKey is an entry's place in the walk's order (pools.Compare).
type lineKey struct {
	g        int   // 0 force start, 1 keeps claims, 2 the rest
	negPrio  int64 // minus the priority (higher first); 0 for a force start
	backfill int   // 1 for an entry of a backfill's run; 0 for a force start
	due      int64 // due time (µs); 0 for a force start
	id       int64
}

func compareKeys(a, b lineKey) int {
	if c := cmp.Compare(a.g, b.g); c != 0 {
		return c
	}
	if c := cmp.Compare(a.negPrio, b.negPrio); c != 0 {
		return c
	}
	if c := cmp.Compare(a.backfill, b.backfill); c != 0 {
		return c
	}
	if c := cmp.Compare(a.due, b.due); c != 0 {
		return c
	}
	return cmp.Compare(a.id, b.id)
}

const (
	needsPool   = ` AND EXISTS (SELECT 1 FROM entry_requirements q WHERE q.entry = x.id AND q.pool = ?)`
	ofBackfill  = `EXISTS (SELECT 1 FROM dag_runs y WHERE y.id = x.run AND COALESCE(y.backfill, 0) <> 0)`
	keepsClaims = `x.id IN (SELECT c.entry FROM claims c)`
)

// specials are the waiting force starts and claim keepers (of pool, unless ""), in walk order.
func (s *DB) specials(ctx context.Context, pool string) ([]lineKey, error) {
	q := `SELECT x.id, x.priority, x.due, x.force, ` + keepsClaims + `, ` + ofBackfill + ` FROM queue_entries x
		WHERE x.state = 'waiting' AND (x.force = TRUE OR ` + keepsClaims + `)`
	var args []any
	if pool != "" {
		q, args = q+needsPool, append(args, pool)
	}
	rows, err := s.query(ctx, q, args...)
	if err != nil {
		return nil, unavailable(err)
	}
	defer rows.Close()
	var out []lineKey
	for rows.Next() {
		var k lineKey
		var prio int64
		var force, kept, bf bool
		if err := rows.Scan(&k.id, &prio, &k.due, &force, &kept, &bf); err != nil {
			return nil, unavailable(err)
		}
		switch {
		case force:
			k.due = 0
		case kept:
			k.g, k.negPrio = 1, -prio
		}
		if !force && bf {
			k.backfill = 1
		}
		out = append(out, k)
	}
	slices.SortFunc(out, compareKeys)
	return out, unavailable(rows.Err())
}

// stream reads the other waiting entries (of pool, unless ""), of fresh runs or of backfills',
// along queue_entries_line, until more returns false.
func (s *DB) stream(ctx context.Context, pool string, backfill bool, more func(lineKey) bool) error {
	q := `SELECT x.id, x.priority, x.due FROM queue_entries x WHERE x.state = 'waiting' AND x.force = FALSE
		AND NOT ` + keepsClaims + ` AND `
	if !backfill {
		q += `NOT `
	}
	q += ofBackfill
	var args []any
	if pool != "" {
		q, args = q+needsPool, append(args, pool)
	}
	rows, err := s.query(ctx, q+` ORDER BY -x.priority, x.due, x.id`, args...)
	if err != nil {
		return unavailable(err)
	}
	defer rows.Close()
	for rows.Next() {
		k := lineKey{g: 2}
		var prio int64
		if err := rows.Scan(&k.id, &prio, &k.due); err != nil {
			return unavailable(err)
		}
		k.negPrio = -prio
		if backfill {
			k.backfill = 1
		}
		if !more(k) {
			return nil
		}
	}
	return unavailable(rows.Err())
}

// line is the first n entries of pool's line (all of it for n < 0), in walk order.
func (s *DB) line(ctx context.Context, pool string, n int) ([]lineKey, error) {
	out, err := s.specials(ctx, pool)
	if err != nil {
		return nil, err
	}
	var fresh, bf []lineKey
	rest := n - len(out)
	for _, half := range []struct {
		backfill bool
		into     *[]lineKey
	}{{false, &fresh}, {true, &bf}} {
		err := s.stream(ctx, pool, half.backfill, func(k lineKey) bool {
			*half.into = append(*half.into, k)
			return n < 0 || len(*half.into) < rest
		})
		if err != nil {
			return nil, err
		}
	}
	for len(fresh) > 0 || len(bf) > 0 {
		if len(bf) == 0 || (len(fresh) > 0 && compareKeys(fresh[0], bf[0]) < 0) {
			out, fresh = append(out, fresh[0]), fresh[1:]
		} else {
			out, bf = append(out, bf[0]), bf[1:]
		}
	}
	if n >= 0 && len(out) > n {
		out = out[:n]
	}
	return out, nil
}

// WaitingPage is a page of the entries waiting for q.Pool in admission order, with their places
// in the pool's whole line and how many the DAG filter keeps.
func (s *DB) WaitingPage(ctx context.Context, q store.WaitingQuery) (store.WaitingPage, error) {
	var out store.WaitingPage
	q.Offset = max(q.Offset, 0)
	pos := map[int64]int{}
	var ids []any
	if q.DAG == "" {
		if err := s.queryRow(ctx, `SELECT COUNT(*) FROM queue_entries x WHERE x.state = 'waiting'`+needsPool,
			q.Pool).Scan(&out.Total); err != nil {
			return out, unavailable(err)
		}
		if q.Limit <= 0 || q.Offset >= out.Total {
			return out, nil
		}
		keys, err := s.line(ctx, q.Pool, q.Offset+q.Limit)
		if err != nil {
			return out, err
		}
		for i := q.Offset; i < len(keys); i++ {
			pos[keys[i].id] = i + 1
			ids = append(ids, keys[i].id)
		}
	} else {
		var err error
		if ids, err = s.filteredPage(ctx, q, &out.Total, pos); err != nil {
			return out, err
		}
	}
	if len(ids) == 0 {
		return out, nil
	}
	es, err := s.entriesByID(ctx, ids, false)
	if err != nil {
		return out, err
	}
	sort.Slice(es, func(i, j int) bool { return pos[es[i].ID] < pos[es[j].ID] })
	out.Entries = es
	for _, e := range es {
		out.Positions = append(out.Positions, pos[e.ID])
	}
	return out, nil
}

// filteredPage numbers the pool's whole line, keeps the entries of the DAGs q.DAG names and
// returns the page of them, setting total and their places.
func (s *DB) filteredPage(ctx context.Context, q store.WaitingQuery, total *int, pos map[int64]int) ([]any, error) {
	keys, err := s.line(ctx, q.Pool, -1)
	if err != nil {
		return nil, err
	}
	place := make(map[int64]int, len(keys))
	for i, k := range keys {
		place[k.id] = i + 1
	}
	rows, err := s.query(ctx, `SELECT x.id FROM queue_entries x JOIN dag_runs y ON y.id = x.run
		WHERE x.state = 'waiting' AND LOWER(y.dag_id) LIKE ? ESCAPE '\'`+needsPool,
		"%"+likeEscaper.Replace(strings.ToLower(q.DAG))+"%", q.Pool)
	if err != nil {
		return nil, unavailable(err)
	}
	var kept []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return nil, unavailable(err)
		}
		if place[id] > 0 {
			kept = append(kept, id)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, unavailable(err)
	}
	slices.SortFunc(kept, func(a, b int64) int { return cmp.Compare(place[a], place[b]) })
	*total = len(kept)
	var ids []any
	for _, id := range kept[min(q.Offset, len(kept)):min(q.Offset+max(q.Limit, 0), len(kept))] {
		pos[id] = place[id]
		ids = append(ids, id)
	}
	return ids, nil
}

// WaitingCounts counts the waiting entries of each pool and the slots they ask of it.
func (s *DB) WaitingCounts(ctx context.Context) (map[string]store.WaitingCount, error) {
	rows, err := s.query(ctx, `SELECT q.pool, COUNT(*), SUM(q.slots) FROM queue_entries x
		JOIN entry_requirements q ON q.entry = x.id WHERE x.state = 'waiting' GROUP BY q.pool`)
	if err != nil {
		return nil, unavailable(err)
	}
	defer rows.Close()
	out := map[string]store.WaitingCount{}
	for rows.Next() {
		var pool string
		var c store.WaitingCount
		if err := rows.Scan(&pool, &c.Entries, &c.Slots); err != nil {
			return nil, unavailable(err)
		}
		out[pool] = c
	}
	return out, unavailable(rows.Err())
}

// WaitingThrough lists the waiting entries walked at or before b.Through, the force starts, the
// entries that keep claims and those b.Starved says a pool may promote, by queue ID.
func (s *DB) WaitingThrough(ctx context.Context, b store.WalkBound) ([]store.Entry, error) {
	sp, err := s.specials(ctx, "")
	if err != nil {
		return nil, err
	}
	want := map[int64]bool{}
	for _, k := range sp {
		want[k.id] = true
	}
	if b.Through != 0 {
		var bound lineKey
		var prio int64
		var force, kept, bf bool
		err := s.queryRow(ctx, `SELECT x.id, x.priority, x.due, x.force, `+keepsClaims+`, `+ofBackfill+`
			FROM queue_entries x WHERE x.id = ? AND x.state = 'waiting'`, b.Through).Scan(&bound.id, &prio, &bound.due, &force, &kept, &bf)
		switch {
		case err == nil:
			bound.g, bound.negPrio = 2, -prio
			if bf {
				bound.backfill = 1
			}
			if force || kept {
				bound.g = 0 // every force start and keeper is read anyway; no other entry is before it
			}
		case errors.Is(err, sql.ErrNoRows): // no longer waiting: nothing is needed by place
		default:
			return nil, unavailable(err)
		}
		if bound.g == 2 {
			for _, backfill := range []bool{false, true} {
				err := s.stream(ctx, "", backfill, func(k lineKey) bool {
					if compareKeys(k, bound) > 0 {
						return false
					}
					want[k.id] = true
					return true
				})
				if err != nil {
					return nil, err
				}
			}
		}
	}
	if len(b.Starved) > 0 {
		pools := make([]string, 0, len(b.Starved))
		for p := range b.Starved {
			pools = append(pools, p)
		}
		sort.Strings(pools)
		var or []string
		var args []any
		for _, p := range pools {
			or = append(or, `(s.pool = ? AND (CASE WHEN x.not_before > x.created_at THEN x.not_before ELSE x.created_at END) < ?)`)
			args = append(args, p, store.Micros(b.Starved[p]))
		}
		rows, err := s.query(ctx, `SELECT x.id FROM queue_entries x WHERE x.state = 'waiting'
			AND EXISTS (SELECT 1 FROM entry_requirements s WHERE s.entry = x.id AND (`+strings.Join(or, " OR ")+`))`, args...)
		if err != nil {
			return nil, unavailable(err)
		}
		for rows.Next() {
			var id int64
			if err := rows.Scan(&id); err != nil {
				rows.Close()
				return nil, unavailable(err)
			}
			want[id] = true
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, unavailable(err)
		}
	}
	ids := make([]any, 0, len(want))
	for id := range want {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, func(a, b any) int { return cmp.Compare(a.(int64), b.(int64)) })
	return s.entriesByID(ctx, ids, true)
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

// ClaimEntries lists the entries that hold claims (admitted ones, and sensors keeping claims
// between pokes), by queue ID.
func (s *DB) ClaimEntries(ctx context.Context) ([]store.Entry, error) {
	return entriesWhere(ctx, s.readers(), `e.id IN (SELECT c.entry FROM claims c)`)
}
