-- Task outputs (issue 20, §14): the JSON object an attempt wrote to POOLFLOW_OUTPUT (or a Go
-- task set on its TaskContext), at most 64 KiB, stored with the attempt in the transaction of
-- its end. NULL: it wrote none, or it did not succeed (a failed try's output is not published).
-- A task instance's output is that of its successful attempt.
ALTER TABLE attempts ADD COLUMN output TEXT;
