-- The pools page reads its waiting lines from one snapshot the server keeps (issue 21,
-- server/waiting_line.go) instead of paging the queue along queue_entries_line (0016): no read
-- uses the index any more, and every waiting entry written paid for it.
DROP INDEX IF EXISTS queue_entries_line;
