// Package config reads poolflow.yaml: the state path, max_running, pools (§4.1), pool rules
// (§6) and the API token. It is its own package because pools, rules and the daemon all
// consume it, and neither pools nor rules should depend on the other.
//
// The file is parsed by internal/yamlfile, the DAG files' parser and limits, and its nodes
// walked rather than decoded into structs, so every error names file:line:column and the
// dotted field, e.g.
//
//	poolflow.yaml:4:3: pools.warehouse.ordering: invalid value "x" (want strict or backfill)
//
// Unknown fields are errors. Durations are Go durations ("10m") or integer seconds. Pools are
// validated and completed by pools.Resolve; rule expressions are compiled by package rules.
package config
