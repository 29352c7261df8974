-- Change stamps (issue 13, work across hosts): every write transaction that changes a row
-- commits the next number of poolflow_changes.seq and stamps the runs, task instances and queue
-- entries it writes with it, so a daemon that saw the store up to number N reads only what was
-- written after N (Tx.ChangesSince) instead of every open run again. Writers are serialized by
-- the writers' lock, so the numbers follow commit order.
CREATE TABLE poolflow_changes (
    one INTEGER PRIMARY KEY CHECK (one = 1),
    seq INTEGER NOT NULL
);
INSERT INTO poolflow_changes (one, seq) VALUES (1, 0);
ALTER TABLE dag_runs ADD COLUMN seq INTEGER NOT NULL DEFAULT 0;
ALTER TABLE task_instances ADD COLUMN seq INTEGER NOT NULL DEFAULT 0;
ALTER TABLE queue_entries ADD COLUMN seq INTEGER NOT NULL DEFAULT 0;
CREATE INDEX dag_runs_seq ON dag_runs (seq);
CREATE INDEX task_instances_seq ON task_instances (seq);
CREATE INDEX queue_entries_seq ON queue_entries (seq);
-- Which daemon ran an attempt (its host keeps the attempt's log); NULL when none ran it (an
-- entry that expired, was cancelled or rejected) and for attempts recorded before.
ALTER TABLE attempts ADD COLUMN daemon TEXT;
