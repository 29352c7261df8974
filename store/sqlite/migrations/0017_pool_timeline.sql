-- The pool timeline at any size (issue 21): migration 17.
--
-- held_fork places an ended holding [admitted_at, ended_at] in a relational interval tree (the
-- RI-tree of Kriegel, Pötke and Seidl): the number within it with the most trailing zero bits.
-- Every holding that contains an instant p has its fork among the roundings of p, down and up,
-- to each power of two, so who held the slots at p is found by about a hundred probes of the
-- two indexes below whatever the history's length (sqlstore.forkProbes).
ALTER TABLE queue_entries ADD COLUMN held_fork BIGINT;
CREATE INDEX queue_entries_held_from ON queue_entries (held_fork, admitted_at) WHERE held_fork IS NOT NULL;
CREATE INDEX queue_entries_held_to ON queue_entries (held_fork, ended_at) WHERE held_fork IS NOT NULL;
-- The admissions of a time slice (a pool_use slice is recomputed from them and the ends).
CREATE INDEX queue_entries_admitted ON queue_entries (admitted_at) WHERE admitted_at IS NOT NULL;

CREATE TRIGGER queue_entries_fork_insert AFTER INSERT ON queue_entries
WHEN NEW.admitted_at IS NOT NULL AND NEW.ended_at IS NOT NULL
BEGIN
    UPDATE queue_entries SET held_fork = CASE WHEN NEW.ended_at >> 52 << 52 >= NEW.admitted_at THEN NEW.ended_at >> 52 << 52 WHEN NEW.ended_at >> 51 << 51 >= NEW.admitted_at THEN NEW.ended_at >> 51 << 51 WHEN NEW.ended_at >> 50 << 50 >= NEW.admitted_at THEN NEW.ended_at >> 50 << 50 WHEN NEW.ended_at >> 49 << 49 >= NEW.admitted_at THEN NEW.ended_at >> 49 << 49 WHEN NEW.ended_at >> 48 << 48 >= NEW.admitted_at THEN NEW.ended_at >> 48 << 48 WHEN NEW.ended_at >> 47 << 47 >= NEW.admitted_at THEN NEW.ended_at >> 47 << 47 WHEN NEW.ended_at >> 46 << 46 >= NEW.admitted_at THEN NEW.ended_at >> 46 << 46 WHEN NEW.ended_at >> 45 << 45 >= NEW.admitted_at THEN NEW.ended_at >> 45 << 45 WHEN NEW.ended_at >> 44 << 44 >= NEW.admitted_at THEN NEW.ended_at >> 44 << 44 WHEN NEW.ended_at >> 43 << 43 >= NEW.admitted_at THEN NEW.ended_at >> 43 << 43 WHEN NEW.ended_at >> 42 << 42 >= NEW.admitted_at THEN NEW.ended_at >> 42 << 42 WHEN NEW.ended_at >> 41 << 41 >= NEW.admitted_at THEN NEW.ended_at >> 41 << 41 WHEN NEW.ended_at >> 40 << 40 >= NEW.admitted_at THEN NEW.ended_at >> 40 << 40 WHEN NEW.ended_at >> 39 << 39 >= NEW.admitted_at THEN NEW.ended_at >> 39 << 39 WHEN NEW.ended_at >> 38 << 38 >= NEW.admitted_at THEN NEW.ended_at >> 38 << 38 WHEN NEW.ended_at >> 37 << 37 >= NEW.admitted_at THEN NEW.ended_at >> 37 << 37 WHEN NEW.ended_at >> 36 << 36 >= NEW.admitted_at THEN NEW.ended_at >> 36 << 36 WHEN NEW.ended_at >> 35 << 35 >= NEW.admitted_at THEN NEW.ended_at >> 35 << 35 WHEN NEW.ended_at >> 34 << 34 >= NEW.admitted_at THEN NEW.ended_at >> 34 << 34 WHEN NEW.ended_at >> 33 << 33 >= NEW.admitted_at THEN NEW.ended_at >> 33 << 33 WHEN NEW.ended_at >> 32 << 32 >= NEW.admitted_at THEN NEW.ended_at >> 32 << 32 WHEN NEW.ended_at >> 31 << 31 >= NEW.admitted_at THEN NEW.ended_at >> 31 << 31 WHEN NEW.ended_at >> 30 << 30 >= NEW.admitted_at THEN NEW.ended_at >> 30 << 30 WHEN NEW.ended_at >> 29 << 29 >= NEW.admitted_at THEN NEW.ended_at >> 29 << 29 WHEN NEW.ended_at >> 28 << 28 >= NEW.admitted_at THEN NEW.ended_at >> 28 << 28 WHEN NEW.ended_at >> 27 << 27 >= NEW.admitted_at THEN NEW.ended_at >> 27 << 27 WHEN NEW.ended_at >> 26 << 26 >= NEW.admitted_at THEN NEW.ended_at >> 26 << 26 WHEN NEW.ended_at >> 25 << 25 >= NEW.admitted_at THEN NEW.ended_at >> 25 << 25 WHEN NEW.ended_at >> 24 << 24 >= NEW.admitted_at THEN NEW.ended_at >> 24 << 24 WHEN NEW.ended_at >> 23 << 23 >= NEW.admitted_at THEN NEW.ended_at >> 23 << 23 WHEN NEW.ended_at >> 22 << 22 >= NEW.admitted_at THEN NEW.ended_at >> 22 << 22 WHEN NEW.ended_at >> 21 << 21 >= NEW.admitted_at THEN NEW.ended_at >> 21 << 21 WHEN NEW.ended_at >> 20 << 20 >= NEW.admitted_at THEN NEW.ended_at >> 20 << 20 WHEN NEW.ended_at >> 19 << 19 >= NEW.admitted_at THEN NEW.ended_at >> 19 << 19 WHEN NEW.ended_at >> 18 << 18 >= NEW.admitted_at THEN NEW.ended_at >> 18 << 18 WHEN NEW.ended_at >> 17 << 17 >= NEW.admitted_at THEN NEW.ended_at >> 17 << 17 WHEN NEW.ended_at >> 16 << 16 >= NEW.admitted_at THEN NEW.ended_at >> 16 << 16 WHEN NEW.ended_at >> 15 << 15 >= NEW.admitted_at THEN NEW.ended_at >> 15 << 15 WHEN NEW.ended_at >> 14 << 14 >= NEW.admitted_at THEN NEW.ended_at >> 14 << 14 WHEN NEW.ended_at >> 13 << 13 >= NEW.admitted_at THEN NEW.ended_at >> 13 << 13 WHEN NEW.ended_at >> 12 << 12 >= NEW.admitted_at THEN NEW.ended_at >> 12 << 12 WHEN NEW.ended_at >> 11 << 11 >= NEW.admitted_at THEN NEW.ended_at >> 11 << 11 WHEN NEW.ended_at >> 10 << 10 >= NEW.admitted_at THEN NEW.ended_at >> 10 << 10 WHEN NEW.ended_at >> 9 << 9 >= NEW.admitted_at THEN NEW.ended_at >> 9 << 9 WHEN NEW.ended_at >> 8 << 8 >= NEW.admitted_at THEN NEW.ended_at >> 8 << 8 WHEN NEW.ended_at >> 7 << 7 >= NEW.admitted_at THEN NEW.ended_at >> 7 << 7 WHEN NEW.ended_at >> 6 << 6 >= NEW.admitted_at THEN NEW.ended_at >> 6 << 6 WHEN NEW.ended_at >> 5 << 5 >= NEW.admitted_at THEN NEW.ended_at >> 5 << 5 WHEN NEW.ended_at >> 4 << 4 >= NEW.admitted_at THEN NEW.ended_at >> 4 << 4 WHEN NEW.ended_at >> 3 << 3 >= NEW.admitted_at THEN NEW.ended_at >> 3 << 3 WHEN NEW.ended_at >> 2 << 2 >= NEW.admitted_at THEN NEW.ended_at >> 2 << 2 WHEN NEW.ended_at >> 1 << 1 >= NEW.admitted_at THEN NEW.ended_at >> 1 << 1 WHEN NEW.ended_at >> 0 << 0 >= NEW.admitted_at THEN NEW.ended_at >> 0 << 0 END WHERE id = NEW.id;
END;
CREATE TRIGGER queue_entries_fork_update AFTER UPDATE OF admitted_at, ended_at ON queue_entries
WHEN (NEW.admitted_at IS NOT NULL AND NEW.ended_at IS NOT NULL) OR OLD.held_fork IS NOT NULL
BEGIN
    UPDATE queue_entries SET held_fork = CASE WHEN NEW.admitted_at IS NULL OR NEW.ended_at IS NULL THEN NULL ELSE CASE WHEN NEW.ended_at >> 52 << 52 >= NEW.admitted_at THEN NEW.ended_at >> 52 << 52 WHEN NEW.ended_at >> 51 << 51 >= NEW.admitted_at THEN NEW.ended_at >> 51 << 51 WHEN NEW.ended_at >> 50 << 50 >= NEW.admitted_at THEN NEW.ended_at >> 50 << 50 WHEN NEW.ended_at >> 49 << 49 >= NEW.admitted_at THEN NEW.ended_at >> 49 << 49 WHEN NEW.ended_at >> 48 << 48 >= NEW.admitted_at THEN NEW.ended_at >> 48 << 48 WHEN NEW.ended_at >> 47 << 47 >= NEW.admitted_at THEN NEW.ended_at >> 47 << 47 WHEN NEW.ended_at >> 46 << 46 >= NEW.admitted_at THEN NEW.ended_at >> 46 << 46 WHEN NEW.ended_at >> 45 << 45 >= NEW.admitted_at THEN NEW.ended_at >> 45 << 45 WHEN NEW.ended_at >> 44 << 44 >= NEW.admitted_at THEN NEW.ended_at >> 44 << 44 WHEN NEW.ended_at >> 43 << 43 >= NEW.admitted_at THEN NEW.ended_at >> 43 << 43 WHEN NEW.ended_at >> 42 << 42 >= NEW.admitted_at THEN NEW.ended_at >> 42 << 42 WHEN NEW.ended_at >> 41 << 41 >= NEW.admitted_at THEN NEW.ended_at >> 41 << 41 WHEN NEW.ended_at >> 40 << 40 >= NEW.admitted_at THEN NEW.ended_at >> 40 << 40 WHEN NEW.ended_at >> 39 << 39 >= NEW.admitted_at THEN NEW.ended_at >> 39 << 39 WHEN NEW.ended_at >> 38 << 38 >= NEW.admitted_at THEN NEW.ended_at >> 38 << 38 WHEN NEW.ended_at >> 37 << 37 >= NEW.admitted_at THEN NEW.ended_at >> 37 << 37 WHEN NEW.ended_at >> 36 << 36 >= NEW.admitted_at THEN NEW.ended_at >> 36 << 36 WHEN NEW.ended_at >> 35 << 35 >= NEW.admitted_at THEN NEW.ended_at >> 35 << 35 WHEN NEW.ended_at >> 34 << 34 >= NEW.admitted_at THEN NEW.ended_at >> 34 << 34 WHEN NEW.ended_at >> 33 << 33 >= NEW.admitted_at THEN NEW.ended_at >> 33 << 33 WHEN NEW.ended_at >> 32 << 32 >= NEW.admitted_at THEN NEW.ended_at >> 32 << 32 WHEN NEW.ended_at >> 31 << 31 >= NEW.admitted_at THEN NEW.ended_at >> 31 << 31 WHEN NEW.ended_at >> 30 << 30 >= NEW.admitted_at THEN NEW.ended_at >> 30 << 30 WHEN NEW.ended_at >> 29 << 29 >= NEW.admitted_at THEN NEW.ended_at >> 29 << 29 WHEN NEW.ended_at >> 28 << 28 >= NEW.admitted_at THEN NEW.ended_at >> 28 << 28 WHEN NEW.ended_at >> 27 << 27 >= NEW.admitted_at THEN NEW.ended_at >> 27 << 27 WHEN NEW.ended_at >> 26 << 26 >= NEW.admitted_at THEN NEW.ended_at >> 26 << 26 WHEN NEW.ended_at >> 25 << 25 >= NEW.admitted_at THEN NEW.ended_at >> 25 << 25 WHEN NEW.ended_at >> 24 << 24 >= NEW.admitted_at THEN NEW.ended_at >> 24 << 24 WHEN NEW.ended_at >> 23 << 23 >= NEW.admitted_at THEN NEW.ended_at >> 23 << 23 WHEN NEW.ended_at >> 22 << 22 >= NEW.admitted_at THEN NEW.ended_at >> 22 << 22 WHEN NEW.ended_at >> 21 << 21 >= NEW.admitted_at THEN NEW.ended_at >> 21 << 21 WHEN NEW.ended_at >> 20 << 20 >= NEW.admitted_at THEN NEW.ended_at >> 20 << 20 WHEN NEW.ended_at >> 19 << 19 >= NEW.admitted_at THEN NEW.ended_at >> 19 << 19 WHEN NEW.ended_at >> 18 << 18 >= NEW.admitted_at THEN NEW.ended_at >> 18 << 18 WHEN NEW.ended_at >> 17 << 17 >= NEW.admitted_at THEN NEW.ended_at >> 17 << 17 WHEN NEW.ended_at >> 16 << 16 >= NEW.admitted_at THEN NEW.ended_at >> 16 << 16 WHEN NEW.ended_at >> 15 << 15 >= NEW.admitted_at THEN NEW.ended_at >> 15 << 15 WHEN NEW.ended_at >> 14 << 14 >= NEW.admitted_at THEN NEW.ended_at >> 14 << 14 WHEN NEW.ended_at >> 13 << 13 >= NEW.admitted_at THEN NEW.ended_at >> 13 << 13 WHEN NEW.ended_at >> 12 << 12 >= NEW.admitted_at THEN NEW.ended_at >> 12 << 12 WHEN NEW.ended_at >> 11 << 11 >= NEW.admitted_at THEN NEW.ended_at >> 11 << 11 WHEN NEW.ended_at >> 10 << 10 >= NEW.admitted_at THEN NEW.ended_at >> 10 << 10 WHEN NEW.ended_at >> 9 << 9 >= NEW.admitted_at THEN NEW.ended_at >> 9 << 9 WHEN NEW.ended_at >> 8 << 8 >= NEW.admitted_at THEN NEW.ended_at >> 8 << 8 WHEN NEW.ended_at >> 7 << 7 >= NEW.admitted_at THEN NEW.ended_at >> 7 << 7 WHEN NEW.ended_at >> 6 << 6 >= NEW.admitted_at THEN NEW.ended_at >> 6 << 6 WHEN NEW.ended_at >> 5 << 5 >= NEW.admitted_at THEN NEW.ended_at >> 5 << 5 WHEN NEW.ended_at >> 4 << 4 >= NEW.admitted_at THEN NEW.ended_at >> 4 << 4 WHEN NEW.ended_at >> 3 << 3 >= NEW.admitted_at THEN NEW.ended_at >> 3 << 3 WHEN NEW.ended_at >> 2 << 2 >= NEW.admitted_at THEN NEW.ended_at >> 2 << 2 WHEN NEW.ended_at >> 1 << 1 >= NEW.admitted_at THEN NEW.ended_at >> 1 << 1 WHEN NEW.ended_at >> 0 << 0 >= NEW.admitted_at THEN NEW.ended_at >> 0 << 0 END END
    WHERE id = NEW.id;
END;
UPDATE queue_entries SET ended_at = ended_at WHERE admitted_at IS NOT NULL AND ended_at IS NOT NULL;

-- A pool's use per time slice of width 15 s and 5 min (microseconds), kept by every write that
-- changes the claim history (sqlstore.Tx.flushUse recomputes the slices it touched), so a
-- timeline reads a few hundred rows whatever the number of admissions. Relative to the slots
-- held at the slice's start: net is the change over it, area the slot-microseconds added
-- (each change times the time from it to the slice's end), rise the highest level reached
-- (0: the start) and rise_at when it was first reached.
CREATE TABLE pool_use (
    pool    TEXT NOT NULL,
    width   BIGINT NOT NULL,
    bucket  BIGINT NOT NULL,
    net     BIGINT NOT NULL,
    area    BIGINT NOT NULL,
    rise    BIGINT NOT NULL,
    rise_at BIGINT NOT NULL,
    PRIMARY KEY (pool, width, bucket)
) WITHOUT ROWID;

-- The use of the history already kept.
INSERT INTO pool_use (pool, width, bucket, net, area, rise, rise_at)
WITH ev AS (
	SELECT q.pool AS pool, e.admitted_at AS t, q.slots AS d
	FROM queue_entries e JOIN entry_requirements q ON q.entry = e.id
	WHERE e.admitted_at >= 0 AND e.admitted_at < 9223372036854775807 AND NOT q.implicit
	UNION ALL
	SELECT q.pool, e.ended_at, -q.slots
	FROM queue_entries e JOIN entry_requirements q ON q.entry = e.id
	WHERE e.ended_at >= 0 AND e.ended_at < 9223372036854775807 AND e.admitted_at IS NOT NULL
		AND e.state NOT IN ('waiting', 'admitted') AND NOT q.implicit),
inst AS (SELECT pool, t - t % 15000000 AS bucket, t, SUM(d) AS d FROM ev GROUP BY pool, t),
cum AS (SELECT pool, bucket, t, d, SUM(d) OVER (PARTITION BY pool, bucket ORDER BY t) AS c FROM inst),
ranked AS (SELECT pool, bucket, t, d, c, ROW_NUMBER() OVER (PARTITION BY pool, bucket ORDER BY c DESC, t) AS n FROM cum)
SELECT pool, 15000000, bucket, SUM(d), SUM(d * (bucket + 15000000 - t)),
	MAX(CASE WHEN n = 1 AND c > 0 THEN c ELSE 0 END), MAX(CASE WHEN n = 1 AND c > 0 THEN t ELSE bucket END)
FROM ranked GROUP BY pool, bucket;
INSERT INTO pool_use (pool, width, bucket, net, area, rise, rise_at)
WITH f AS (
	SELECT pool, bucket - bucket % 300000000 AS cb, bucket, net, area, rise, rise_at,
		SUM(net) OVER (PARTITION BY pool, bucket - bucket % 300000000 ORDER BY bucket) - net AS before
	FROM pool_use WHERE width = 15000000 AND bucket >= 0 AND bucket < 9223372036854775807),
ranked AS (SELECT f.*, ROW_NUMBER() OVER (PARTITION BY pool, cb ORDER BY before + rise DESC, bucket) AS n FROM f)
SELECT pool, 300000000, cb, SUM(net), SUM(area + net * (cb + 300000000 - bucket - 15000000)),
	MAX(CASE WHEN n = 1 AND before + rise > 0 THEN before + rise ELSE 0 END),
	MAX(CASE WHEN n = 1 AND before + rise > 0 THEN rise_at ELSE cb END)
FROM ranked GROUP BY pool, cb;
