// Package executor runs DAGs: the daemon, its scheduler loop (the only writer of state), the
// local executor that runs attempts as process groups or Go functions, cron schedules and
// catch-up, retries, leases and crash recovery.
//
// The loop is event-driven. Every event — an attempt that finished, a manual trigger, a command,
// a timer (retry, deadline, cron fire, lease renewal), a change another process committed to the
// store — wakes it; one pass then drains every pending event, advances the affected runs (trigger
// rules make downstream tasks ready and queue them), asks pools.Admit for a decision over the whole
// queue, and applies it all in one BEGIN IMMEDIATE transaction (group commit). Only after that
// commit are admitted attempts started, so a process never runs without its claims.
//
// The loop keeps the runs it owns in memory and writes them through to the store. When a pass
// fails (the store is unavailable), it rolls back, keeps the completions it could not write, and
// rebuilds its memory from the store on the next pass, so memory never runs ahead of what was
// committed.
//
// Replay: after a crash, a restarted daemon kills the process groups its previous life left
// running and runs those attempts again with the same try number, appending to the same log after
// a "--- replay ---" line. Commands must therefore tolerate running twice.
package executor
