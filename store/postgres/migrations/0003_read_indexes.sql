-- Indexes for the reads of the web UI and GET /pools, so that their cost follows what they show,
-- not the whole history: recent terminal entries and the pool timeline walk entries by end time;
-- a DAG's latest runs walk its runs by queue time.
CREATE INDEX queue_entries_ended ON queue_entries (ended_at) WHERE ended_at IS NOT NULL;
CREATE INDEX dag_runs_dag_queued ON dag_runs (dag_id, queued_at);
