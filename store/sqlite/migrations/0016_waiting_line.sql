-- The waiting line in admission order (issue 21): the order of a pass's walk for entries that
-- are neither force starts nor sensors keeping claims, less the backfill flag of their run
-- (priority, higher first; due time; queue ID). A page of one pool's line in the UI reads 50
-- entries along it instead of sorting every waiting entry.
CREATE INDEX queue_entries_line ON queue_entries ((-priority), due, id) WHERE state = 'waiting';
