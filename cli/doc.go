// Package cli is the poolflow command line (spf13/cobra): serve, dags, tasks, pools, rules,
// events, store and version, with the global flags of SPEC §7.1. It is a package rather than
// code in cmd/ so that a Go program that registers its own DAGs runs the very same CLI
// (poolflow.Main).
//
// Commands that change what a daemon holds (tasks clear, mark, fail, cancel, approve, reject,
// run --force; dags mark-run and delete-run) queue a store command for the daemon that applies
// it and wait for its outcome (audit.go); those that change the store alone (pause, pools,
// notes) write it in one transaction with its audit event. The actor is cli:<os user>@<host>.
package cli
