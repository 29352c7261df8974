-- Team pools and rules (issue 23, §15): migration 14.

-- The rules that matched an entry's attempt but were skipped because their pool is not open to
-- its DAG's team, with the reason ("rule heavy-etl skipped: pool warehouse is for team finance,
-- not team sales"), shown beside the rule that assigned the pool. NULL when none was.
ALTER TABLE queue_entries ADD COLUMN rule_skipped TEXT;
