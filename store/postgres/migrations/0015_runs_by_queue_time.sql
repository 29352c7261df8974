-- The runs lists walk runs newest first, ties broken by id: indexes on (queued_at, id) across
-- DAGs and (dag_id, queued_at, id) per DAG give that order without sorting the whole history
-- (the second replaces dag_runs_dag_queued, which lacked the id).
CREATE INDEX dag_runs_queued ON dag_runs (queued_at, id);
CREATE INDEX dag_runs_dag_queued_id ON dag_runs (dag_id, queued_at, id);
DROP INDEX dag_runs_dag_queued;
