// Package decide is the scheduler's decision: one pass of the loop is
//
//	plan := d.Decide(in)   // in: the pass's time, events and what was read under the writers' lock
//	apply(tx, plan)        // package apply: the one place that writes during a pass
//
// Decide folds the pass's events (attempts that started and ended, triggers, operator
// commands) into memory (package state), creates the runs that are due, advances runs by their
// trigger rules, queues the tasks that became ready, admits what fits in every pool it needs
// (pools.Queue, exactly as pools.Admit decides), settles manual starts and ends runs, and
// returns everything the pass does as a Plan: the store writes in order (Ops), the attempts to
// start once they are committed, the attempts to stop, the replies, notices and log lines.
//
// It is pure in the sense that matters for testing it: it reads no store, no clock and no OS
// state — the time, the claims and every row come in through Input — so the same memory, input
// and time always give the same plan. It does change memory as it decides (memory is the
// decision's working state); when the plan cannot be committed, the daemon loads memory again
// from the store.
package decide
