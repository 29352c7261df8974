-- Capacity history and pool_use recomputed (issue 21): migration 20.

-- Every change of a pool's capacity (the slots admission uses) with its time, written in the
-- transaction of the change: a pool created, resized (API, CLI, UI, poolflow.yaml reload), its
-- drain finished, deleted (slots NULL). The timeline draws the capacity as it was. Retention
-- deletes the changes before its cutoff but the last one of each pool, so a window's line
-- starts right. The pools there are now are taken to have had their capacity all along (time 0):
-- what they had before is not known.
CREATE TABLE pool_capacity (
    id    INTEGER PRIMARY KEY AUTOINCREMENT,
    pool  TEXT NOT NULL,
    at    INTEGER NOT NULL,
    slots INTEGER CHECK (slots >= -1)
);
CREATE INDEX pool_capacity_pool ON pool_capacity (pool, at, id);
CREATE INDEX pool_capacity_at ON pool_capacity (at);
INSERT INTO pool_capacity (pool, at, slots) SELECT name, 0, slots FROM pools ORDER BY name;

-- pool_use again: a slice's start is an instant of its own, after what changed at it (a
-- release as a slice begins is not a peak of the slice).
DELETE FROM pool_use;
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
starts AS (SELECT DISTINCT pool, t - t % 15000000 AS t, 0 AS d FROM ev),
inst AS (SELECT pool, t - t % 15000000 AS bucket, t, SUM(d) AS d FROM (SELECT pool, t, d FROM ev UNION ALL SELECT pool, t, d FROM starts) a
	GROUP BY pool, t),
cum AS (SELECT pool, bucket, t, d, SUM(d) OVER (PARTITION BY pool, bucket ORDER BY t) AS c FROM inst),
ranked AS (SELECT pool, bucket, t, d, c, ROW_NUMBER() OVER (PARTITION BY pool, bucket ORDER BY c DESC, t) AS n FROM cum)
SELECT pool, 15000000, bucket, SUM(d), SUM(d * (bucket + 15000000 - t)), MAX(CASE WHEN n = 1 THEN c END), MAX(CASE WHEN n = 1 THEN t END)
FROM ranked GROUP BY pool, bucket;
INSERT INTO pool_use (pool, width, bucket, net, area, rise, rise_at)
WITH f AS (
	SELECT pool, bucket - bucket % 300000000 AS cb, bucket, net, area, rise, rise_at,
		SUM(net) OVER (PARTITION BY pool, bucket - bucket % 300000000 ORDER BY bucket) - net AS before
	FROM pool_use WHERE width = 15000000 AND bucket >= 0 AND bucket < 9223372036854775807),
ranked AS (SELECT f.*, ROW_NUMBER() OVER (PARTITION BY pool, cb ORDER BY before + rise DESC, bucket) AS n FROM f)
SELECT pool, 300000000, cb, SUM(net), SUM(area + net * (cb + 300000000 - bucket - 15000000)),
	CASE WHEN MIN(bucket) > cb AND MAX(CASE WHEN n = 1 THEN before + rise END) <= 0 THEN 0
		ELSE MAX(CASE WHEN n = 1 THEN before + rise END) END,
	CASE WHEN MIN(bucket) > cb AND MAX(CASE WHEN n = 1 THEN before + rise END) <= 0 THEN cb
		ELSE MAX(CASE WHEN n = 1 THEN rise_at END) END
FROM ranked GROUP BY pool, cb;
