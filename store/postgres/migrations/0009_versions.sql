-- DAG versions and retention (issue 19, §12).

-- Every distinct source of a DAG (a YAML file's text, a Go DAG's canonical JSON), kept once and
-- numbered per DAG from 1. first_seen is when a load recorded it first; last_seen when a load
-- last recorded it, or when another version replaced it as the current one. A version is found
-- again by its hash: a file changed back to an earlier text is that earlier version.
CREATE TABLE dag_versions (
    dag_id     TEXT NOT NULL,
    version    BIGINT NOT NULL CHECK (version >= 1),
    hash       TEXT NOT NULL,             -- SHA-256 of the format and the text, hex
    format     TEXT NOT NULL CHECK (format IN ('yaml', 'go')),
    file       TEXT NOT NULL DEFAULT '',  -- the YAML file it was read from; '' for a Go DAG
    source     TEXT NOT NULL,
    first_seen BIGINT NOT NULL,
    last_seen  BIGINT NOT NULL,
    PRIMARY KEY (dag_id, version),
    UNIQUE (dag_id, hash)
);

-- The current version of a DAG (the one the last load recorded); the version a run was created
-- with; the version in force when an entry was admitted, and so the one its attempt ran. NULL:
-- from before versions were kept, or (a run created by dags trigger) not yet taken by a daemon.
ALTER TABLE dags ADD COLUMN version BIGINT;
ALTER TABLE dag_runs ADD COLUMN version BIGINT;
ALTER TABLE queue_entries ADD COLUMN version BIGINT;
ALTER TABLE attempts ADD COLUMN version BIGINT;

-- Retention walks the ended runs by their end (their queueing when they have none), oldest
-- first; deleting a run cascades into its commands, which had no index on run but a partial one
-- for the pending ones (a scan of the whole table per deleted run).
CREATE INDEX dag_runs_ended ON dag_runs ((COALESCE(end_date, queued_at))) WHERE state IN ('success', 'failed');
CREATE INDEX commands_run ON commands (run);
