-- Backfills (issue 19, §11): re-processing a range of past dates as an object of its own.

-- One backfill: its request (Airflow 3's body, plus max_slots as JSON {pool: slots}), whether a
-- person paused it, its state, and the daemon that drives it (NULL: the next daemon's pass takes
-- it; a dead owner's is taken over with its leader-owned runs, §9).
CREATE TABLE backfills (
    id              INTEGER PRIMARY KEY,
    dag_id          TEXT NOT NULL,
    from_date       INTEGER NOT NULL,
    to_date         INTEGER NOT NULL,
    reprocess       TEXT NOT NULL CHECK (reprocess IN ('none', 'failed', 'completed')),
    max_active_runs INTEGER NOT NULL CHECK (max_active_runs >= 1),
    run_backwards   INTEGER NOT NULL DEFAULT 0 CHECK (run_backwards IN (0, 1)),
    conf            TEXT NOT NULL DEFAULT '{}',
    max_slots       TEXT NOT NULL DEFAULT '{}',
    paused          INTEGER NOT NULL DEFAULT 0 CHECK (paused IN (0, 1)),
    state           TEXT NOT NULL CHECK (state IN ('running', 'cancelling', 'completed', 'cancelled')),
    owner           TEXT,
    created_by      TEXT NOT NULL DEFAULT '',
    created_at      INTEGER NOT NULL,
    updated_at      INTEGER NOT NULL,
    completed_at    INTEGER
);
CREATE INDEX backfills_open ON backfills (state) WHERE state IN ('running', 'cancelling');
CREATE INDEX backfills_dag ON backfills (dag_id, id);

-- The dates of a backfill, in the order it takes them (ordinal: oldest first, or newest first
-- with run_backwards), and what it did with each: the run it created or cleared, or why it
-- skipped the date. A date is taken in the pass that creates or clears its run, so no date is
-- run twice, whatever daemon drives the backfill after a crash.
CREATE TABLE backfill_dates (
    backfill     INTEGER NOT NULL REFERENCES backfills (id) ON DELETE CASCADE,
    ordinal      INTEGER NOT NULL,
    logical_date INTEGER NOT NULL,
    action       TEXT NOT NULL DEFAULT 'pending' CHECK (action IN ('pending', 'created', 'cleared', 'skipped')),
    run          INTEGER REFERENCES dag_runs (id) ON DELETE SET NULL,
    reason       TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (backfill, ordinal)
);
CREATE INDEX backfill_dates_pending ON backfill_dates (backfill, ordinal) WHERE action = 'pending';
CREATE INDEX backfill_dates_run ON backfill_dates (run);

-- The backfill a run belongs to: one it created, or an existing run it cleared (§11).
ALTER TABLE dag_runs ADD COLUMN backfill INTEGER REFERENCES backfills (id) ON DELETE SET NULL;
CREATE INDEX dag_runs_backfill ON dag_runs (backfill) WHERE backfill IS NOT NULL;

-- The run type 'backfill'. As in 0008, the CHECK's IN list is widened in place.
PRAGMA writable_schema = ON;
UPDATE sqlite_schema SET sql = replace(sql,
    'CHECK (run_type IN (''schedule'', ''catchup'', ''manual'', ''test'', ''node''))',
    'CHECK (run_type IN (''schedule'', ''catchup'', ''manual'', ''test'', ''node'', ''backfill''))')
    WHERE type = 'table' AND name = 'dag_runs';
PRAGMA writable_schema = RESET;

-- A backfill's run is unique per (DAG, logical date) with the scheduled ones (§11).
DROP INDEX dag_runs_fire;
CREATE UNIQUE INDEX dag_runs_fire ON dag_runs (dag_id, logical_date)
    WHERE run_type IN ('schedule', 'catchup', 'backfill');
