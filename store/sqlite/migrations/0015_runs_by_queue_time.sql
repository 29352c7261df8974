-- The runs list across DAGs (/ui/runs, GET /dags/~/dagRuns) walks every run newest first: an
-- index by queue time gives that order without sorting the whole history (the rowid, which is
-- the id, breaks ties inside the index). A DAG's runs already have dag_runs_dag_queued.
CREATE INDEX dag_runs_queued ON dag_runs (queued_at);
