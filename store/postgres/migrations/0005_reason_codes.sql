-- Reason codes (issue 22): a run, a task instance or an attempt that ended for a reason with a
-- code (rejected, expired, cancelled, timeout; package vocab's ReasonCode) carries it in
-- reason_code, as queue entries already did, so nothing parses the reason's words for it. The
-- words stay in reason, without the code's own word before them where the code says it
-- (vocab's ReasonCode.Say puts "rejected: " and "expired: " back when they are shown).
-- Codes are an open list that grows with the code, so no CHECK constraint guards them.
ALTER TABLE dag_runs ADD COLUMN reason_code TEXT;
ALTER TABLE task_instances ADD COLUMN reason_code TEXT;
ALTER TABLE attempts ADD COLUMN reason_code TEXT;

-- Existing rows: "rejected: x" becomes code rejected and reason x, and so for "expired: ".
UPDATE dag_runs SET reason_code = 'rejected', reason = substr(reason, 11) WHERE substr(reason, 1, 10) = 'rejected: ';
UPDATE task_instances SET reason_code = 'rejected', reason = substr(reason, 11) WHERE substr(reason, 1, 10) = 'rejected: ';
UPDATE task_instances SET reason_code = 'expired', reason = substr(reason, 10) WHERE substr(reason, 1, 9) = 'expired: ';
UPDATE task_instances SET reason_code = 'cancelled' WHERE reason = 'cancelled by operator';
UPDATE attempts SET reason_code = 'rejected', reason = substr(reason, 11) WHERE substr(reason, 1, 10) = 'rejected: ';
UPDATE attempts SET reason_code = 'expired', reason = substr(reason, 10) WHERE substr(reason, 1, 9) = 'expired: ';
UPDATE attempts SET reason_code = 'cancelled' WHERE reason = 'cancelled by operator';
UPDATE queue_entries SET reason = substr(reason, 11) WHERE reason_code = 'rejected' AND substr(reason, 1, 10) = 'rejected: ';
UPDATE queue_entries SET reason = substr(reason, 10) WHERE reason_code = 'expired' AND substr(reason, 1, 9) = 'expired: ';
