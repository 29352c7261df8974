// Package executor is the daemon: it runs DAGs on a store with its scheduler loop, the only
// writer of state, and its runners.
//
// The loop is event-driven. Every event — an attempt that started or finished, a manual
// trigger, a command, a timer (retry, deadline, cron fire, lease renewal), a change another
// process committed to the store — wakes it; one pass then takes every pending event and, in
// one write transaction, reads what memory needs (read.go), has the decider make the plan
// (package decide: pure, over memory in package state), writes it (package apply, the one
// writer), and commits (group commit). Only after that commit are admitted attempts handed to
// the runner (package runner), so a process never runs without its claims.
//
// When a pass fails (the store is unavailable, or memory was behind the store), it rolls back,
// keeps the completions it could not write, and loads memory from the store on the next pass,
// so memory never runs ahead of what was committed.
//
// Replay: after a crash, a restarted daemon kills the process groups its previous life left
// running and runs those attempts again with the same try number, appending to the same log after
// a "--- replay ---" line. Commands must therefore tolerate running twice.
//
// Harness steps a daemon's passes by hand for tests, over a real store and a fake clock.
package executor
