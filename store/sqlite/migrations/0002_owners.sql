-- Owners (§9): every process that can own work — a serve daemon or a dags test process — holds
-- a row with a liveness lease. A live daemon tells "held by someone alive" from "held by the
-- dead" by it, releases what the dead held and takes over what may move.
CREATE TABLE owners (
    id            TEXT PRIMARY KEY,
    kind          TEXT NOT NULL CHECK (kind IN ('daemon', 'test')),
    host          TEXT NOT NULL,
    pid           INTEGER NOT NULL,
    proc_start    INTEGER NOT NULL DEFAULT 0, -- the process's start in clock ticks after boot; 0 = unknown
    epoch         INTEGER NOT NULL,           -- fencing epoch, incremented at every start
    started_at    INTEGER NOT NULL,
    heartbeat     INTEGER NOT NULL,
    lease_until   INTEGER NOT NULL,           -- the owner is alive until then; a clean stop sets it to the stop time
    handled_epoch INTEGER                     -- the epoch whose end a live daemon has handled (claims released, work moved)
);
INSERT INTO owners (id, kind, host, pid, epoch, started_at, heartbeat, lease_until)
    SELECT id, CASE WHEN id LIKE 'test:%' THEN 'test' ELSE 'daemon' END, '', pid, epoch, heartbeat, heartbeat, heartbeat
    FROM daemons;
DROP TABLE daemons;

-- Commands gain 'replace': a run replaced by a newer fire on another daemon (§3.5) is stopped by
-- its own owner. task_id is '' for commands about a whole run.
CREATE TABLE commands_v2 (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    kind       TEXT NOT NULL CHECK (kind IN ('fail', 'force', 'cancel', 'approve', 'reject', 'replace')),
    run        INTEGER NOT NULL REFERENCES dag_runs (id) ON DELETE CASCADE,
    task_id    TEXT NOT NULL,
    who        TEXT NOT NULL DEFAULT '',
    note       TEXT NOT NULL DEFAULT '',
    created_at INTEGER NOT NULL,
    done_at    INTEGER,
    error      TEXT                      -- why the daemon refused it, NULL when applied
);
INSERT INTO commands_v2 (id, kind, run, task_id, who, note, created_at, done_at, error)
    SELECT id, kind, run, task_id, who, note, created_at, done_at, error FROM commands;
DROP TABLE commands;
ALTER TABLE commands_v2 RENAME TO commands;
CREATE INDEX commands_pending ON commands (run) WHERE done_at IS NULL;
