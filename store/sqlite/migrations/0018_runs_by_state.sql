-- A DAG's runs in one state (the runs list filtered by state, the limits cards, the DAG page's
-- counts) walk an index on (dag_id, state, queued_at): the filtered page comes in order and its
-- count reads index entries only, instead of every run of the DAG (the rowid, which is the id,
-- breaks ties inside the index).
CREATE INDEX dag_runs_dag_state ON dag_runs (dag_id, state, queued_at);
