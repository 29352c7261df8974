-- Times are INTEGER microseconds since the Unix epoch (UTC); NULL means "not yet".
-- States are strings with CHECK constraints so their meaning never depends on code order.

CREATE TABLE daemons (
    id        TEXT PRIMARY KEY,
    epoch     INTEGER NOT NULL,          -- fencing epoch, incremented at every start
    pid       INTEGER NOT NULL,
    heartbeat INTEGER NOT NULL
);

CREATE TABLE dags (
    dag_id     TEXT PRIMARY KEY,
    paused     INTEGER NOT NULL DEFAULT 0 CHECK (paused IN (0, 1)),
    file       TEXT NOT NULL DEFAULT '',
    schedule   TEXT NOT NULL DEFAULT '',
    checkpoint INTEGER,                  -- last scheduled/catch-up fire turned into a run
    updated_at INTEGER NOT NULL
);

CREATE TABLE import_errors (
    file       TEXT PRIMARY KEY,
    message    TEXT NOT NULL,
    updated_at INTEGER NOT NULL
);

CREATE TABLE dag_runs (
    id           INTEGER PRIMARY KEY,
    dag_id       TEXT NOT NULL,
    run_id       TEXT NOT NULL,
    run_type     TEXT NOT NULL CHECK (run_type IN ('schedule', 'catchup', 'manual', 'test')),
    logical_date INTEGER NOT NULL,
    state        TEXT NOT NULL CHECK (state IN ('queued', 'running', 'success', 'failed')),
    conf         TEXT NOT NULL DEFAULT '{}',
    note         TEXT NOT NULL DEFAULT '',
    no_queue     INTEGER NOT NULL DEFAULT 0 CHECK (no_queue IN (0, 1)), -- refuse unless admitted at once
    owner        TEXT,                   -- daemon that runs it; NULL = the next daemon takes it
    queued_at    INTEGER NOT NULL,
    start_date   INTEGER,
    end_date     INTEGER,
    reason       TEXT,
    UNIQUE (dag_id, run_id)
);
-- Two daemons cannot create the same scheduled run (§3.5).
CREATE UNIQUE INDEX dag_runs_fire ON dag_runs (dag_id, logical_date)
    WHERE run_type IN ('schedule', 'catchup');
CREATE INDEX dag_runs_open ON dag_runs (state) WHERE state IN ('queued', 'running');

CREATE TABLE task_instances (
    run         INTEGER NOT NULL REFERENCES dag_runs (id) ON DELETE CASCADE,
    task_id     TEXT NOT NULL,
    state       TEXT NOT NULL CHECK (state IN ('none', 'scheduled', 'running', 'up_for_retry',
                    'up_for_reschedule', 'awaiting_approval', 'success', 'failed', 'skipped',
                    'upstream_failed')),
    try_number  INTEGER NOT NULL DEFAULT 0, -- the latest attempt's number; 0 = none yet
    start_date  INTEGER,
    end_date    INTEGER,
    next_at     INTEGER,                  -- up_for_retry: when it is due again
    reason      TEXT,
    PRIMARY KEY (run, task_id)
) WITHOUT ROWID;

-- One row per attempt that ended (for the UI's history and the retry accounting of §3.3).
CREATE TABLE attempts (
    run        INTEGER NOT NULL REFERENCES dag_runs (id) ON DELETE CASCADE,
    task_id    TEXT NOT NULL,
    try_number INTEGER NOT NULL,
    state      TEXT NOT NULL CHECK (state IN ('success', 'failed', 'skipped')),
    start_date INTEGER,
    end_date   INTEGER,
    reason     TEXT,
    PRIMARY KEY (run, task_id, try_number)
) WITHOUT ROWID;

CREATE TABLE pools (
    name             TEXT PRIMARY KEY,
    slots            INTEGER NOT NULL CHECK (slots >= -1), -- capacity admission uses now
    target_slots     INTEGER,                              -- on_resize: drain, capacity after the drain
    ordering         TEXT NOT NULL DEFAULT 'backfill' CHECK (ordering IN ('strict', 'backfill')),
    max_queued       INTEGER NOT NULL DEFAULT 0 CHECK (max_queued >= 0),
    starvation_after INTEGER NOT NULL DEFAULT 0,            -- microseconds; 0 = off
    include_deferred INTEGER NOT NULL DEFAULT 0 CHECK (include_deferred IN (0, 1)),
    on_resize        TEXT NOT NULL DEFAULT 'immediate' CHECK (on_resize IN ('immediate', 'drain')),
    description      TEXT NOT NULL DEFAULT '',
    source           TEXT NOT NULL CHECK (source IN ('file', 'store')),
    updated_at       INTEGER NOT NULL
);

CREATE TABLE queue_entries (
    id          INTEGER PRIMARY KEY AUTOINCREMENT, -- the queue ID (§4.4)
    run         INTEGER NOT NULL REFERENCES dag_runs (id) ON DELETE CASCADE,
    task_id     TEXT NOT NULL,
    try_number  INTEGER NOT NULL,
    label       TEXT NOT NULL,
    priority    INTEGER NOT NULL,
    due         INTEGER NOT NULL,
    deadline    INTEGER,
    state       TEXT NOT NULL CHECK (state IN ('waiting', 'admitted', 'done', 'expired',
                    'cancelled', 'rejected', 'retired')),
    force       INTEGER NOT NULL DEFAULT 0 CHECK (force IN (0, 1)),
    reason_code TEXT,
    reason      TEXT,
    rule        TEXT,                     -- the pool rule that assigned its pool, if any
    replay      INTEGER NOT NULL DEFAULT 0 CHECK (replay IN (0, 1)),
    not_before  INTEGER,                  -- a reschedule sensor's next poke: not admitted before
    fingerprint TEXT NOT NULL DEFAULT '', -- the task definition it was queued under (§3.5)
    created_at  INTEGER NOT NULL,
    admitted_at INTEGER,
    ended_at    INTEGER
);
CREATE INDEX queue_entries_waiting ON queue_entries (state) WHERE state IN ('waiting', 'admitted');
CREATE INDEX queue_entries_ti ON queue_entries (run, task_id);

-- Requirements and limits as normalized rows (entry, pool, slots). capacity is set for implicit
-- pools, whose limit comes from the DAG or max_running rather than the pools table.
CREATE TABLE entry_requirements (
    entry    INTEGER NOT NULL REFERENCES queue_entries (id) ON DELETE CASCADE,
    pool     TEXT NOT NULL,
    slots    INTEGER NOT NULL CHECK (slots >= 1),
    implicit INTEGER NOT NULL CHECK (implicit IN (0, 1)),
    capacity INTEGER,
    PRIMARY KEY (entry, pool)
) WITHOUT ROWID;

-- Held slots, one row per pool of an admitted entry. Occupancy is always derived from these rows.
CREATE TABLE claims (
    entry       INTEGER NOT NULL REFERENCES queue_entries (id) ON DELETE CASCADE,
    pool        TEXT NOT NULL,
    slots       INTEGER NOT NULL CHECK (slots >= 1),
    daemon      TEXT NOT NULL,
    epoch       INTEGER NOT NULL,
    pgid        INTEGER,
    lease_until INTEGER NOT NULL,
    PRIMARY KEY (entry, pool)
) WITHOUT ROWID;
CREATE INDEX claims_daemon ON claims (daemon);

-- Commands from other processes (CLI) to the daemon that owns a run.
CREATE TABLE commands (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    kind       TEXT NOT NULL CHECK (kind IN ('fail', 'force', 'cancel', 'approve', 'reject')),
    run        INTEGER NOT NULL REFERENCES dag_runs (id) ON DELETE CASCADE,
    task_id    TEXT NOT NULL,
    who        TEXT NOT NULL DEFAULT '',
    note       TEXT NOT NULL DEFAULT '',
    created_at INTEGER NOT NULL,
    done_at    INTEGER,
    error      TEXT                      -- why the daemon refused it, NULL when applied
);
