-- The pools page reads its waiting lines from one snapshot the server keeps (issue 21,
-- server/waiting_line.go) instead of paging the queue along queue_entries_line (0016): no read
-- uses the index any more, and every waiting entry written paid for it.
DROP INDEX IF EXISTS queue_entries_line;
-- The entries that hold slots (admitted ones, and sensors keeping their claims between pokes):
-- the pools page's timeline and holders (PoolHoldings, PoolHistory) walked every waiting entry
-- through queue_entries_waiting to find the few with an admission time, 100,000 rows a view
-- of a long queue.
CREATE INDEX queue_entries_held ON queue_entries (state) WHERE state IN ('waiting', 'admitted') AND admitted_at IS NOT NULL;
