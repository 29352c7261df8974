// Package store is poolflow's storage seam: the Store and Tx interfaces the executor, the
// server, the UI and the CLI use, the domain types they read and write (Run, TaskInstance,
// Entry, Claim, Pool, Owner, …; their states and kinds are package vocab's types), the typed
// errors drivers turn their own into (ErrNotFound, ErrConflict, ErrConstraint, ErrUnavailable,
// ErrSchemaTooNew, ErrFenced, ErrEntryState), and Open, which picks a driver by the target:
// store/sqlite (the embedded default, a file) or store/postgres (several machines). Both share their statements through store/internal/sqlstore and pass the conformance suite of
// store/storetest.
//
// Conventions every driver keeps: times are integer microseconds since the Unix epoch in UTC;
// states are strings guarded by CHECK constraints; occupancy is derived from claim rows, never
// from a counter; write transactions of every process sharing a database are serialized, so a
// pass re-reads the claims it debits against under the lock and commits all of an admission or
// nothing.
package store
