// Package store is poolflow's only SQL speaker: the SQLite schema and its embedded, versioned
// migrations, every statement, the transactions that apply an admission pass, and leases.
//
// It is a package of its own (the design card has none) because three consumers share it: the
// scheduler loop writes through it, and the CLI and the HTTP server read from it and write their
// own short transactions. Keeping SQL here lets pools and dag stay pure.
//
// Conventions: times are INTEGER microseconds since the Unix epoch in UTC; states are strings
// guarded by CHECK constraints; occupancy is derived from claim rows, never from a counter.
// The database runs in WAL mode with synchronous=FULL, foreign keys on and a busy timeout; every
// transaction that changes state starts with BEGIN IMMEDIATE, so SQLite's write lock orders the
// writers of several processes sharing one file.
package store
