-- Mapped tasks' lines (§14). A mapped task's instances are queued a window at a time, in map
-- index order (its line), and an instance gets its row when it is queued (or changed otherwise):
-- the rows of the others are read from the mapped task's own row, which keeps the line.
-- map_length is the length of the list it expanded, map_first the queue ID reserved for
-- instance 0 (instance i's first entry takes map_first + i, so an instance queued late keeps
-- the place in the order the expansion had), map_next the map index of the next instance to
-- queue. Readers list instance i in [map_next, map_length) without a row as none, reason code
-- map_line. 0 on every other row.
ALTER TABLE task_instances ADD COLUMN map_first BIGINT NOT NULL DEFAULT 0;
ALTER TABLE task_instances ADD COLUMN map_next BIGINT NOT NULL DEFAULT 0;
ALTER TABLE task_instances ADD COLUMN map_length BIGINT NOT NULL DEFAULT 0;
