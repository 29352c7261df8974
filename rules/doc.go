// Package rules assigns a pool to attempts that declare no requirements (§6).
//
// Rules are compiled once, when the configuration is loaded, with expr-lang/expr against a
// typed environment (Attrs: dag_id, task_id, run_id, owner, team, tags, trigger, params, try_number,
// kind, logical_date) and must yield a boolean, so a misspelt name or a type mismatch is a
// configuration error that names the rule and the position, not a surprise at run time. The
// builtin now() is disabled and date() parses in UTC: a condition sees only the attempt's
// attributes (use logical_date for time-of-day rules).
//
// Set.Assign evaluates the rules lowest priority first; the first whose condition holds gives
// the pool and slots (default 1). When none holds, the attempt goes to the default pool with
// one slot. A rule whose condition holds but whose pool is not open to the attempt's team
// (§15; Set.CheckTeams) is skipped: the next rule is tried, and the trace and Result.Skipped say
// why, so that the queue entry, `poolflow rules test` and the API can show it. A condition that fails at run time (for example `params.batch > 100` when params has
// no batch, so the left side is nil) does not match; the error is recorded in the trace and
// logged once per rule, never per call, so a bad rule cannot flood the log. A missing params
// key reads as nil, so `params.region == "eu"` is simply false.
//
// Assign is deterministic: the same attributes against the same Set always give the same
// Result, and it touches no state. Rules are nevertheless "sticky" (§6): the daemon stores the
// assignment with the attempt and keeps it until the attempt finishes, even if the rules are
// reloaded meanwhile. It calls Assign again only for a retry, with try_number set to the try
// the retry will run as, so a rule such as `try_number > 1` can move retries to another pool.
//
// Compile errors point at the `when` value in the file (its line and column) and give the
// position inside the expression in parentheses, e.g.
//
//	poolflow.yaml:12:11: rule heavy-etl: when: unknown name tagz (1:20)
//
// The two are not added together because the value may be quoted, escaped or a block scalar,
// which would make a single computed column wrong as often as right.
package rules
