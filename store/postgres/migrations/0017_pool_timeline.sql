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

CREATE FUNCTION queue_entries_fork() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.held_fork := NULL;
    IF NEW.admitted_at IS NOT NULL AND NEW.ended_at IS NOT NULL THEN
        FOR h IN REVERSE 52..0 LOOP
            IF NEW.ended_at >> h << h >= NEW.admitted_at THEN
                NEW.held_fork := NEW.ended_at >> h << h;
                EXIT;
            END IF;
        END LOOP;
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER queue_entries_fork BEFORE INSERT OR UPDATE OF admitted_at, ended_at ON queue_entries
FOR EACH ROW EXECUTE FUNCTION queue_entries_fork();
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
);

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
