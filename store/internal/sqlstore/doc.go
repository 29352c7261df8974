// Package sqlstore is the one implementation of store.Store and store.Tx over database/sql that
// both drivers share: every statement of poolflow, written once with ? placeholders in SQL that
// SQLite and PostgreSQL both accept (upserts with ON CONFLICT, RETURNING for new ids, TRUE and
// FALSE for flags). What differs — placeholders, how a write transaction takes its lock, how
// driver errors read, how outside commits are noticed, the migrations — is the Dialect and the
// Changes a driver hands to New. Drivers live in store/sqlite and store/postgres.
package sqlstore
