// Package vocab is poolflow's vocabulary: the typed words every other package says states,
// kinds and reasons with (as River's rivertype does for River). It holds the task instance
// states (TaskState), the DAG run states (RunState), the queue entry states and the moves
// between them (EntryState, CanMove, MovesFrom), what created a run (RunType), the commands one
// process sends the owner of a run (CommandKind), a pool's admission order (Ordering) and
// resize policy (OnResize), the kinds of owners (OwnerKind), and the codes of why an entry
// waits or why an attempt, a task instance or a run ended the way it did (ReasonCode).
//
// It is a leaf: it imports nothing of the project, so the store, the pools, the DAG model, the
// executor, the server, the UI and the CLI all import it and none of them declares a state of
// its own.
//
// Every value is written exactly as it is stored (strings guarded by CHECK constraints in
// both stores' schemas) and as the JSON API shows it; renaming a constant is free, changing a
// value is a migration. Each type has a function listing every value in a documented order
// (TaskStates, RunStates, EntryStates, RunTypes, CommandKinds, Orderings, OnResizes,
// OwnerKinds, ReasonCodes) and Valid; the states have Terminal and Open.
//
// Outside this package no Go code spells a state as a string literal: TestNoRawStateLiterals
// (run by make test) parses every other non-test file of the module and fails on one.
package vocab
