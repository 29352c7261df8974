package sqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/poolflow/poolflow/store"
)

// A pool's use over time, kept aggregated (table pool_use) so the timeline of a week reads a
// few thousand rows whether the week had a thousand admissions or a million.
//
// pool_use holds one row per pool and time slice that has a change (an admission or an end)
// at two widths, 15 s and 5 min. A row is a function of the claim history in its slice alone
// (queue_entries' admitted_at and ended_at with their requirement rows), relative to the level
// at the slice's start. A transaction that changes the history in a slice marks it (markUse);
// Commit recomputes the marked slices from the history, in SQL, before it commits (flushUse).
// Out-of-order writes (a second daemon's clock, a requeue erasing an admission) need nothing
// special: a slice is recomputed whole. The level just before a window's start, the one number
// a slice cannot know, is the sum of the holders then, found through held_fork (below). A
// slice's start is an instant of its own, after what changes at it: rise counts it, and is
// below 0 when the slice begins with a release.

const (
	useFine   = int64(15 * time.Second / time.Microsecond)
	useCoarse = int64(5 * time.Minute / time.Microsecond)
)

// UseResolutions are the slice widths pool_use keeps, finest first: a timeline's bucket width
// must be a multiple of the finest.
var UseResolutions = []time.Duration{15 * time.Second, 5 * time.Minute}

// markUse marks the fine slices holding the instants (microseconds) as changed.
func (t *Tx) markUse(ats ...int64) {
	if t.useDirty == nil {
		t.useDirty = map[int64]bool{}
	}
	for _, at := range ats {
		t.useDirty[floorTo(at, useFine)] = true
	}
}

// markEntryUse marks the slices of entry id's admission and end, before a change erases them.
func (t *Tx) markEntryUse(id int64) error {
	var admitted, ended sql.NullInt64
	err := t.queryRow(`SELECT admitted_at, ended_at FROM queue_entries WHERE id = ?`, id).Scan(&admitted, &ended)
	switch {
	case err == sql.ErrNoRows:
		return nil
	case err != nil:
		return unavailable(err)
	}
	if admitted.Valid {
		t.markUse(admitted.Int64)
		if ended.Valid {
			t.markUse(ended.Int64)
		}
	}
	return nil
}

// markRunsUse marks the slices, from since on, of every admission and end of the entries of
// runs (a deletion).
func (t *Tx) markRunsUse(runs []any, since int64) error {
	rows, err := t.query(`SELECT admitted_at, ended_at FROM queue_entries WHERE run IN (?`+strings.Repeat(", ?", len(runs)-1)+`)
		AND admitted_at IS NOT NULL AND (admitted_at >= ? OR ended_at >= ?)`, append(slices.Clip(runs), since, since)...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var admitted int64
		var ended sql.NullInt64
		if err := rows.Scan(&admitted, &ended); err != nil {
			return unavailable(err)
		}
		if admitted >= since {
			t.markUse(admitted)
		}
		if ended.Valid && ended.Int64 >= since {
			t.markUse(ended.Int64)
		}
	}
	return unavailable(rows.Err())
}

// useFlushEvery is how often a store recomputes the slices its commits marked. Recomputing a
// slice reads its whole history, so doing it in every commit made a chain of 10,000 one-step
// passes 3.4 times slower (31 s → 106 s in make bench: each pass re-read the thousands of
// admissions and ends already in its 15 s slice). Marked slices wait in memory (useBacklog) and
// are recomputed, in the transaction that commits, at most once a second, and before this store
// answers a timeline (PoolUse). A kill -9 loses at most the last second's marks: those slices
// stay as they were until a later change in the same slice recomputes it whole. The timeline
// is a picture of the claims, which stay exact; admission never reads pool_use.
const useFlushEvery = time.Second

// useBacklog is the fine slices marked by this store's transactions and not yet recomputed.
type useBacklog struct {
	mu      sync.Mutex
	pending map[int64]bool
	flushed time.Time // the last recompute committed
}

// flushUse takes the transaction's marks into the backlog and, when a recompute is due (or
// force), recomputes the backlog's slices: each fine one from the history, then each coarse
// one holding a marked fine one from its fine rows. It returns the slices it recomputed, which
// leave the backlog once the transaction commits (useFlushed).
func (t *Tx) flushUse(force bool) ([]int64, error) {
	b := &t.s.use
	b.mu.Lock()
	if b.pending == nil {
		b.pending = map[int64]bool{}
	}
	for k := range t.useDirty {
		b.pending[k] = true
	}
	t.useDirty = nil
	if len(b.pending) == 0 || (!force && time.Since(b.flushed) < useFlushEvery) {
		b.mu.Unlock()
		return nil, nil
	}
	fine := make([]int64, 0, len(b.pending))
	for k := range b.pending {
		fine = append(fine, k)
	}
	b.mu.Unlock()
	slices.Sort(fine)
	for _, r := range runs(fine, useFine) {
		if err := t.recomputeUse(r[0], r[1], false); err != nil {
			return nil, err
		}
	}
	coarse := make([]int64, 0, len(fine))
	for _, b := range fine {
		if c := floorTo(b, useCoarse); len(coarse) == 0 || coarse[len(coarse)-1] != c {
			coarse = append(coarse, c)
		}
	}
	for _, r := range runs(coarse, useCoarse) {
		if err := t.recomputeUse(r[0], r[1], true); err != nil {
			return nil, err
		}
	}
	return fine, nil
}

// useFlushed drops the slices a committed transaction recomputed from the backlog.
func (s *DB) useFlushed(fine []int64) {
	if len(fine) == 0 {
		return
	}
	s.use.mu.Lock()
	for _, k := range fine {
		delete(s.use.pending, k)
	}
	s.use.flushed = time.Now()
	s.use.mu.Unlock()
}

// flushUseBacklog recomputes the backlog now, in a transaction of its own (a timeline read, a
// close); a read-only handle has none.
func (s *DB) flushUseBacklog(ctx context.Context) error {
	s.use.mu.Lock()
	n := len(s.use.pending)
	s.use.mu.Unlock()
	if n == 0 || s.opts.ReadOnly {
		return nil
	}
	t, err := s.begin(ctx)
	if err != nil {
		return err
	}
	t.forceUse = true
	return t.Commit()
}

// runs groups sorted slice starts into [lo, hi) ranges of consecutive slices.
func runs(starts []int64, width int64) [][2]int64 {
	var out [][2]int64
	for _, b := range starts {
		if n := len(out); n > 0 && out[n-1][1] == b {
			out[n-1][1] = b + width
			continue
		}
		out = append(out, [2]int64{b, b + width})
	}
	return out
}

// recomputeUse replaces the pool_use rows of the fine (or coarse) slices in [lo, hi).
func (t *Tx) recomputeUse(lo, hi int64, coarse bool) error {
	w := useFine
	q := fineUseSQL
	if coarse {
		w, q = useCoarse, coarseUseSQL
	}
	if _, err := t.exec(`DELETE FROM pool_use WHERE width = ? AND bucket >= ? AND bucket < ?`, w, lo, hi); err != nil {
		return err
	}
	args := []any{lo, hi, lo, hi}
	if coarse {
		args = args[:2]
	}
	_, err := t.exec(q, args...)
	return err
}

// fineUseSQL writes the fine rows of the slices in [?, ?) from the history: the changes at
// each instant (admissions up, ends down; what happens at one instant is one change, and the
// slice's start is an instant, with no change or those at it), their running sum within the
// slice, and its highest point, first reached (below 0 when the slice starts with a release).
var fineUseSQL = strings.NewReplacer("{W}", itoa64(useFine)).Replace(`INSERT INTO pool_use (pool, width, bucket, net, area, rise, rise_at)
	WITH ev AS (
		SELECT q.pool AS pool, e.admitted_at AS t, q.slots AS d
		FROM queue_entries e JOIN entry_requirements q ON q.entry = e.id
		WHERE e.admitted_at >= ? AND e.admitted_at < ? AND NOT q.implicit
		UNION ALL
		SELECT q.pool, e.ended_at, -q.slots
		FROM queue_entries e JOIN entry_requirements q ON q.entry = e.id
		WHERE e.ended_at >= ? AND e.ended_at < ? AND e.admitted_at IS NOT NULL
			AND e.state NOT IN ('waiting', 'admitted') AND NOT q.implicit),
	starts AS (SELECT DISTINCT pool, t - t % {W} AS t, 0 AS d FROM ev),
	inst AS (SELECT pool, t - t % {W} AS bucket, t, SUM(d) AS d FROM (SELECT pool, t, d FROM ev UNION ALL SELECT pool, t, d FROM starts) a
		GROUP BY pool, t),
	cum AS (SELECT pool, bucket, t, d, SUM(d) OVER (PARTITION BY pool, bucket ORDER BY t) AS c FROM inst),
	ranked AS (SELECT pool, bucket, t, d, c, ROW_NUMBER() OVER (PARTITION BY pool, bucket ORDER BY c DESC, t) AS n FROM cum)
	SELECT pool, {W}, bucket, SUM(d), SUM(d * (bucket + {W} - t)), MAX(CASE WHEN n = 1 THEN c END), MAX(CASE WHEN n = 1 THEN t END)
	FROM ranked GROUP BY pool, bucket`)

// coarseUseSQL writes the coarse rows of the slices in [?, ?) from their fine rows: the level
// before each fine slice within the coarse one, the highest of those plus the fine slice's
// rise (and the start, 0, when no fine slice begins there), the area carried to the coarse
// slice's end.
var coarseUseSQL = strings.NewReplacer("{WF}", itoa64(useFine), "{WC}", itoa64(useCoarse)).Replace(`INSERT INTO pool_use (pool, width, bucket, net, area, rise, rise_at)
	WITH f AS (
		SELECT pool, bucket - bucket % {WC} AS cb, bucket, net, area, rise, rise_at,
			SUM(net) OVER (PARTITION BY pool, bucket - bucket % {WC} ORDER BY bucket) - net AS before
		FROM pool_use WHERE width = {WF} AND bucket >= ? AND bucket < ?),
	ranked AS (SELECT f.*, ROW_NUMBER() OVER (PARTITION BY pool, cb ORDER BY before + rise DESC, bucket) AS n FROM f)
	SELECT pool, {WC}, cb, SUM(net), SUM(area + net * (cb + {WC} - bucket - {WF})),
		CASE WHEN MIN(bucket) > cb AND MAX(CASE WHEN n = 1 THEN before + rise END) <= 0 THEN 0
			ELSE MAX(CASE WHEN n = 1 THEN before + rise END) END,
		CASE WHEN MIN(bucket) > cb AND MAX(CASE WHEN n = 1 THEN before + rise END) <= 0 THEN cb
			ELSE MAX(CASE WHEN n = 1 THEN rise_at END) END
	FROM ranked GROUP BY pool, cb`)

func floorTo(at, w int64) int64 {
	r := at % w
	if r < 0 {
		r += w
	}
	return at - r
}

func itoa64(v int64) string { return fmt.Sprint(v) }

// forkProbes are the held_fork values a holding that contains instant p can have: p rounded
// down and up to each power of two up to 2^52 (a fork is the one number of its holding with the
// most trailing zero bits, so it is the rounding of p, one way or the other, at that power).
// left are those at or before p (their holdings contain p when they end after it), right those
// after it (when they began by p).
func forkProbes(p int64) (left, right []any) {
	seenL, seenR := map[int64]bool{}, map[int64]bool{}
	for h := 0; h <= 52; h++ {
		down := p >> h << h
		up := down
		if down < p {
			up = down + 1<<h
		}
		if !seenL[down] {
			seenL[down] = true
			left = append(left, down)
		}
		if up > p && !seenR[up] {
			seenR[up] = true
			right = append(right, up)
		}
	}
	return left, right
}

// heldAtSQL selects cols of the holders of pool at instant at: the open admissions by
// queue_entries_waiting, the ended ones by held_fork's two indexes; with its arguments.
func heldAtSQL(cols, join, pool string, at int64) (string, []any) {
	left, right := forkProbes(at)
	in := func(n int) string { return "(?" + strings.Repeat(", ?", n-1) + ")" }
	from := ` FROM queue_entries e JOIN entry_requirements q ON q.entry = e.id AND q.pool = ? AND NOT q.implicit` + join
	q := `SELECT ` + cols + from + ` WHERE e.state IN ('waiting', 'admitted') AND e.admitted_at IS NOT NULL AND e.admitted_at <= ?
		UNION ALL SELECT ` + cols + from + ` WHERE e.held_fork IS NOT NULL AND e.held_fork IN ` + in(len(left)) + ` AND e.ended_at > ?
		UNION ALL SELECT ` + cols + from + ` WHERE e.held_fork IS NOT NULL AND e.held_fork IN ` + in(len(right)) + ` AND e.admitted_at <= ?`
	args := []any{pool, at, pool}
	args = append(append(args, left...), at, pool)
	return q, append(append(args, right...), at)
}

// PoolUse is named pool's use over [from, to) cut into buckets of width, from pool_use: from
// and width must be multiples of 15 s, to − from a multiple of width. A bucket that now falls
// in is measured up to now. The level at from is the sum of its holders then; each bucket adds
// its rows (of the coarsest width that divides the bucket's) to it in order.
func (s *DB) PoolUse(ctx context.Context, pool string, from, to time.Time, width time.Duration, now time.Time) ([]store.UseBucket, error) {
	f, t, w, n := store.Micros(from), store.Micros(to), width.Microseconds(), store.Micros(now)
	if w <= 0 || f%useFine != 0 || w%useFine != 0 || (t-f)%w != 0 || t <= f {
		return nil, fmt.Errorf("%w: pool use from %s to %s by %s: want 15 s multiples", store.ErrInvalidOption, from, to, width)
	}
	res := useFine
	if w%useCoarse == 0 && f%useCoarse == 0 {
		res = useCoarse
	}
	if err := s.schemaErr(ctx); err != nil {
		return nil, err
	}
	if err := s.flushUseBacklog(ctx); err != nil {
		return nil, err
	}
	tx, err := s.r.BeginTx(ctx, s.d.Snapshot)
	if err != nil {
		return nil, unavailable(s.d.Classify(err))
	}
	defer tx.Rollback()
	// The level just before from: the rows count what changes at from itself.
	q, args := heldAtSQL(`q.slots`, ``, pool, f-1)
	var level int64
	if err := tx.QueryRowContext(ctx, s.bind(`SELECT COALESCE(SUM(slots), 0) FROM (`+q+`) h`), args...).Scan(&level); err != nil {
		return nil, unavailable(err)
	}
	rows, err := tx.QueryContext(ctx, s.bind(`SELECT bucket, net, area, rise, rise_at FROM pool_use
		WHERE pool = ? AND width = ? AND bucket >= ? AND bucket < ? ORDER BY bucket`), pool, res, f, t)
	if err != nil {
		return nil, unavailable(err)
	}
	defer rows.Close()
	var use []useRow
	for rows.Next() {
		var r useRow
		if err := rows.Scan(&r.bucket, &r.net, &r.area, &r.rise, &r.riseAt); err != nil {
			return nil, unavailable(err)
		}
		use = append(use, r)
	}
	if err := rows.Err(); err != nil {
		return nil, unavailable(err)
	}
	return composeUse(level, use, f, t, w, res, n), nil
}

// useRow is a pool_use row.
type useRow struct{ bucket, net, area, rise, riseAt int64 }

// composeUse cuts [f, t) into buckets of w from level at f and the rows (of width res, sorted)
// within it; a bucket holding now is measured up to now.
func composeUse(level int64, use []useRow, f, t, w, res, now int64) []store.UseBucket {
	out := make([]store.UseBucket, 0, (t-f)/w)
	for start := f; start < t; start += w {
		end := start + w
		// The level at the start is a candidate unless a row begins there: its rise counts the
		// start with what changed at it.
		peak, peakAt, first := level, start, true
		if len(use) > 0 && use[0].bucket == start {
			first = false
		}
		var area, net int64 // slot-µs over the bucket (to its end) and the change, both from its rows
		for len(use) > 0 && use[0].bucket < end {
			r := use[0]
			use = use[1:]
			if top := level + net + r.rise; top > peak || !first {
				peak, peakAt, first = top, r.riseAt, true
			}
			area += r.area + r.net*(end-r.bucket-res)
			net += r.net
		}
		span := w
		if now > start && now < end {
			// Measured to now: what the rows add from now to the end is not there yet.
			span, area = now-start, area-net*(end-now)
		}
		b := store.UseBucket{Start: store.FromMicros(start), Peak: int(peak), PeakAt: store.FromMicros(peakAt)}
		if now > start {
			b.Mean = (float64(level*span) + float64(area)) / float64(span)
		}
		out = append(out, b)
		level += net
	}
	return out
}
