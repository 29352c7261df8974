-- A run type for issue 25: 'node', the fire of an every_node job on one daemon, bound to it.
-- Every daemon fires the same logical date, so node runs stay out of dag_runs_fire.
-- SQLite cannot alter a CHECK, and rebuilding dag_runs would cascade into every table that
-- references it; widening an IN list only lets more rows in, so the table's definition is
-- edited in place (SQLite's documented procedure for loosening a constraint), and RESET makes
-- the connection read it again.
PRAGMA writable_schema = ON;
UPDATE sqlite_schema SET sql = replace(sql,
    'CHECK (run_type IN (''schedule'', ''catchup'', ''manual'', ''test''))',
    'CHECK (run_type IN (''schedule'', ''catchup'', ''manual'', ''test'', ''node''))')
    WHERE type = 'table' AND name = 'dag_runs';
PRAGMA writable_schema = RESET;
