-- Owners (§9): every process that can own work — a serve daemon or a dags test process — holds
-- a row with a liveness lease. A live daemon tells "held by someone alive" from "held by the
-- dead" by it, releases what the dead held and takes over what may move.
CREATE TABLE owners (
    id            TEXT PRIMARY KEY,
    kind          TEXT NOT NULL CHECK (kind IN ('daemon', 'test')),
    host          TEXT NOT NULL,
    pid           BIGINT NOT NULL,
    proc_start    BIGINT NOT NULL DEFAULT 0, -- the process's start in clock ticks after boot; 0 = unknown
    epoch         BIGINT NOT NULL,           -- fencing epoch, incremented at every start
    started_at    BIGINT NOT NULL,
    heartbeat     BIGINT NOT NULL,
    lease_until   BIGINT NOT NULL,           -- the owner is alive until then; a clean stop sets it to the stop time
    handled_epoch BIGINT                     -- the epoch whose end a live daemon has handled (claims released, work moved)
);
INSERT INTO owners (id, kind, host, pid, epoch, started_at, heartbeat, lease_until)
    SELECT id, CASE WHEN id LIKE 'test:%' THEN 'test' ELSE 'daemon' END, '', pid, epoch, heartbeat, heartbeat, heartbeat
    FROM daemons;
DROP TABLE daemons;

-- Commands gain 'replace': a run replaced by a newer fire on another daemon (§3.5) is stopped by
-- its own owner. task_id is '' for commands about a whole run. (SQLite rebuilds the table;
-- PostgreSQL swaps the constraint.)
ALTER TABLE commands DROP CONSTRAINT commands_kind_check,
    ADD CONSTRAINT commands_kind_check CHECK (kind IN ('fail', 'force', 'cancel', 'approve', 'reject', 'replace'));
CREATE INDEX commands_pending ON commands (run) WHERE done_at IS NULL;
