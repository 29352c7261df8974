// Package cli is the poolflow command line (spf13/cobra): serve, dags, tasks, pools, rules and
// version, with the global flags of SPEC §7.1. It is a package rather than code in cmd/ so that a
// Go program that registers its own DAGs runs the very same CLI (poolflow.Main).
package cli
