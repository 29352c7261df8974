-- Repairing runs (issue 18, §10): clear, mark and delete are commands any live daemon applies,
-- notes on runs and task instances, run deletion seen by other daemons, and the audit log.

-- Commands gain 'clear', 'mark' and 'delete', and their arguments as JSON in params ('' for
-- none: store.ClearParams, store.MarkParams). SQLite rebuilds the table to change its CHECK.
CREATE TABLE commands_v3 (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    kind       TEXT NOT NULL CHECK (kind IN ('fail', 'force', 'cancel', 'approve', 'reject', 'replace', 'clear', 'mark',
                   'delete')),
    run        INTEGER NOT NULL REFERENCES dag_runs (id) ON DELETE CASCADE,
    task_id    TEXT NOT NULL,
    who        TEXT NOT NULL DEFAULT '',
    note       TEXT NOT NULL DEFAULT '',
    params     TEXT NOT NULL DEFAULT '', -- a clear's or a mark's arguments as JSON
    created_at INTEGER NOT NULL,
    done_at    INTEGER,
    error      TEXT                      -- why the daemon refused it, NULL when applied
);
INSERT INTO commands_v3 (id, kind, run, task_id, who, note, created_at, done_at, error)
    SELECT id, kind, run, task_id, who, note, created_at, done_at, error FROM commands;
DROP TABLE commands;
ALTER TABLE commands_v3 RENAME TO commands;
CREATE INDEX commands_pending ON commands (run) WHERE done_at IS NULL;

-- Notes (§10.3) with who wrote them and when. Only Tx.SetNote writes them after a row is
-- created: the scheduler's writes of a run or a task instance leave them as they are. A run's
-- note written before came with its trigger, so it dates from the run's queueing.
ALTER TABLE dag_runs ADD COLUMN note_by TEXT NOT NULL DEFAULT '';
ALTER TABLE dag_runs ADD COLUMN note_at INTEGER;
UPDATE dag_runs SET note_at = queued_at WHERE note <> '';
ALTER TABLE task_instances ADD COLUMN note TEXT NOT NULL DEFAULT '';
ALTER TABLE task_instances ADD COLUMN note_by TEXT NOT NULL DEFAULT '';
ALTER TABLE task_instances ADD COLUMN note_at INTEGER;
-- A cleared task gets a fresh set of retries while its try numbers go on (§10.1): a failed try
-- k retries while k < max_tries; 0 = the task's retries + 1.
ALTER TABLE task_instances ADD COLUMN max_tries INTEGER NOT NULL DEFAULT 0 CHECK (max_tries >= 0);

-- A deleted run cannot carry a change stamp, so its deletion leaves a tombstone stamped with the
-- transaction's change number: Tx.ChangesSince reports it and other daemons forget the run.
-- Tombstones older than a day are pruned by the next deletion, except the one of the highest
-- run id: SQLite hands out MAX(id) + 1, and a deleted run's id must not be given again.
CREATE TABLE deleted_runs (
    run        INTEGER PRIMARY KEY,       -- the deleted run's id
    seq        INTEGER NOT NULL,          -- the change number of the deleting transaction
    deleted_at INTEGER NOT NULL
);
CREATE INDEX deleted_runs_seq ON deleted_runs (seq);
CREATE INDEX deleted_runs_at ON deleted_runs (deleted_at);

-- The audit log (§10.4): one row per change a person or a client asked for, done or refused,
-- and per scheduler decision a person should find later, written in the transaction of what it
-- records. Targets are '' (try_number 0) when the event has none. action is not CHECKed, unlike
-- states: states are what the code branches on, while actions are a record that grows with
-- nearly every later issue (backfills, users, notifications), and a CHECK would turn each new
-- word into a rebuild of what will be the largest table. Tx.InsertEvent refuses a word that is
-- not vocab.Actions(), so the binary that knows the list guards it.
CREATE TABLE events (
    id         INTEGER PRIMARY KEY,
    at         INTEGER NOT NULL,
    actor      TEXT NOT NULL,
    action     TEXT NOT NULL,
    dag_id     TEXT NOT NULL DEFAULT '',
    run_id     TEXT NOT NULL DEFAULT '',
    task_id    TEXT NOT NULL DEFAULT '',
    try_number INTEGER NOT NULL DEFAULT 0,
    pool       TEXT NOT NULL DEFAULT '',
    params     TEXT NOT NULL DEFAULT '',  -- the request's arguments as JSON
    outcome    TEXT NOT NULL DEFAULT ''   -- ok, or why it was refused
);
-- Newest first (at, then id), by each filter of GET /api/v1/eventLogs and of the DAG, run and
-- task pages: a DAG's events walk events_dag in order; a run's are few, found by events_target.
-- (Every SQLite index ends with the rowid, id: the order's tie-break.)
CREATE INDEX events_at ON events (at);
CREATE INDEX events_dag ON events (dag_id, at);
CREATE INDEX events_target ON events (dag_id, run_id, task_id, at);
CREATE INDEX events_action ON events (action, at);
CREATE INDEX events_actor ON events (actor, at);
