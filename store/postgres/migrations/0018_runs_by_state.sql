-- A DAG's runs in one state (the runs list filtered by state, the limits cards, the DAG page's
-- counts) walk an index on (dag_id, state, queued_at, id): the filtered page comes in order,
-- ties broken by id, and its count reads the index instead of every run of the DAG.
CREATE INDEX dag_runs_dag_state ON dag_runs (dag_id, state, queued_at, id);
