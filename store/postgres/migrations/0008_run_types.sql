-- A run type for issue 25: 'node', the fire of an every_node job on one daemon, bound to it.
-- Every daemon fires the same logical date, so node runs stay out of dag_runs_fire.
ALTER TABLE dag_runs DROP CONSTRAINT dag_runs_run_type_check,
    ADD CONSTRAINT dag_runs_run_type_check
    CHECK (run_type IN ('schedule', 'catchup', 'manual', 'test', 'node'));
