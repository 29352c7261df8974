// Package dag is poolflow's DAG model and everything that can be decided about a DAG without
// I/O: loading YAML DAG files, the Go authoring API, validation, schedules, trigger rules, the
// end state of a run, effective priority weights, retry delays and task fingerprints.
//
// # Loading
//
// [Parse] reads one YAML file and [LoadDir] every *.yaml / *.yml file of a folder; a [Loader]
// does the same repeatedly, decoding only the files that changed. The file is parsed by
// go.yaml.in/yaml/v3 (internal/yamlfile, which also checks the limits) and its nodes walked
// once, so that every problem of a file is reported at once, each as an [ImportError] carrying
// the file:line:column of the offending token, the DAG id, the task id, the field and the
// value; a file reports at most 20, then "... and N more". Anchors, aliases and merge keys
// (<<) are resolved. A DAG with any error is not returned. A file is refused when it is over
// 8 MiB (it is read with that bound) or about 1.5 million tokens, nests deeper than 100
// levels, has a mapping of over 50,000 keys (a block mapping of over 5,000), a key over 1,024
// bytes, a duplicate key, or aliases that add over 100,000 nodes or sit inside their own
// anchor. A folder, FIFO or device named like a DAG file is an import error.
//
// # Adding a task field
//
// The task fields are one table, taskFields (task_fields.go). A new field costs these edits
// in dag/, and nothing else there:
//
//  1. model.go: the field of [Task], e.g. `Team string`.
//  2. task_fields.go: its row, e.g.
//     `field("team", all, "Team,omitempty", (*reader).str, func(s *taskSpec) *string { return &s.t.Team })`:
//     the YAML key; where it may be written (all = tasks, default_args and jobs; add
//     notApproval when an approval gate must not take it from default_args); its key in the
//     fingerprint, with ",omitempty" so that the tasks that do not set it keep theirs ("" when
//     it does not change how a task runs); how its value is read (str, integer, boolean,
//     duration, strList, strMap, intMap, or a method of its own); where it is kept.
//  3. validate.go, only when its values need a check beyond their type (a name that must
//     exist, a number that must be positive).
//
// The unknown-field check, default_args inheritance, the job form, the approval skips and the
// fingerprint follow from the row (TestEveryTaskFieldIsDrivenByTheTable); outside dag/, the
// list of docs/design.md is regenerated with `go test ./dag/ -run TestDesignDocListsTaskFields
// -update`, and SPEC §2.1 names the field.
//
// Choices made where SPEC §2 is silent:
//   - Top-level keys starting with "x-" are ignored, as Compose's extension fields: a place to
//     define anchors that tasks merge with <<.
//   - A null value (`retries:` or `retries: ~`) means the field is not set.
//   - Scalars are accepted for string fields by their text, so `command: [sleep, 2]` is argv
//     ["sleep", "2"]; `command` must be a list (argv), never a shell line (use `bash`).
//   - Durations are Go durations or integer seconds and may not be negative. `start_date`
//     is RFC 3339 or a plain date (midnight UTC).
//   - `default_args` takes every task field except id, depends_on and the kind fields
//     (command, bash, sensor, approval). A task that declares pool_requirements ignores the
//     default pool fields; a task that declares pool or pool_slots ignores the default
//     pool_requirements. Approval tasks take none of retries, execution_timeout,
//     queue_timeout, the pool fields or the max_active_tis_* limits from default_args, and
//     may not set them (an approval gate needs no pool, §5.2). A problem of an inherited
//     field is reported once, under default_args, not once per task.
//   - An explicit `retry_delay: 0` or `priority_weight: 0` is kept; an unset one gets the
//     default (the same holds for the Go options [RetryDelayOpt] and [Priority]).
//   - DAG and task ids are made of letters, digits, '_', '.' and '-' (as Airflow's), at most
//     250 characters, and neither "." nor "..", because they name log folders and implicit pools.
//   - A schedule that never fires (e.g. "0 0 30 2 *") and `@every` below one second are
//     invalid. The same upstream listed twice in depends_on is an error.
//   - A cycle is reported once per dependency that closes it, naming every task of that cycle
//     in run order, starting from the task that comes first in the file.
//
// # Running
//
// [Trigger] decides a task's next state from its upstream states exactly as Airflow's
// trigger_rule_dep does (with flag_upstream_failed), [RunEndState] the end of a run,
// [DAG.Weights] the effective priority under each task's weight rule, [DAG.Order] a
// topological order, [RetryDelay] the wait before the next attempt and [Task.Fingerprint]
// whether a task definition changed. Weights, Order and Task are computed once per DAG and
// shared, so a DAG must not change after it is loaded (adding a task to a Go DAG resets them).
package dag
