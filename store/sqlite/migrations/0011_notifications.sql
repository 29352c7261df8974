-- Notifications (issue 24, §13): the outbox. A row is one event for one notifier, written in
-- the transaction of the state change that causes it; a live daemon claims it under a lease
-- (sender, lease_until), sends it and records the outcome, or, when the try fails, when to try
-- again (next_at). A sender that dies leaves its lease to lapse and another daemon takes the row.
-- idem_key is the idempotency key the receiver gets: one occurrence of an event for one notifier has
-- one key, and a second insert of it is dropped (ON CONFLICT DO NOTHING), so no event is
-- produced twice.
CREATE TABLE notifications (
    id          INTEGER PRIMARY KEY,
    idem_key    TEXT NOT NULL UNIQUE,
    event       TEXT NOT NULL CHECK (event IN ('run_failed', 'run_succeeded', 'task_failed', 'task_succeeded',
                    'task_retry', 'queue_wait', 'deadline_miss', 'test')),
    notifier    TEXT NOT NULL,
    dag_id      TEXT NOT NULL DEFAULT '',
    run_id      TEXT NOT NULL DEFAULT '',
    task_id     TEXT NOT NULL DEFAULT '',
    try_number  INTEGER NOT NULL DEFAULT 0,
    payload     TEXT NOT NULL,             -- the event as JSON (notify.Event)
    state       TEXT NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'sending', 'delivered', 'failed')),
    created_at  INTEGER NOT NULL,
    next_at     INTEGER NOT NULL,          -- a pending row's next try
    tries       INTEGER NOT NULL DEFAULT 0 CHECK (tries >= 0),
    sender      TEXT NOT NULL DEFAULT '',  -- the daemon that claimed it last
    lease_until INTEGER,                   -- while sending: the sender's lease
    sent_at     INTEGER,                   -- when it was delivered, or failed for good
    last_error  TEXT NOT NULL DEFAULT ''
);
-- The senders look for due rows (pending by next_at, sending by lease) and the API lists the
-- newest first, by each filter.
CREATE INDEX notifications_due ON notifications (state, next_at) WHERE state IN ('pending', 'sending');
CREATE INDEX notifications_created ON notifications (created_at, id);
CREATE INDEX notifications_dag ON notifications (dag_id, created_at, id);
