// Package server is poolflow's HTTP API (gorilla/mux, SPEC §7.2).
//
// Routes:
//   - /api/v1, modelled on Airflow's stable REST API v1 with the same resource and JSON field
//     names where they exist (snake_case, total_entries, limit/offset): dags, dagRuns (POST
//     triggers a run with conf), taskInstances (with poolflow's requirements, limits and
//     wait_reason), their dependencies and logs, approve/reject of approval gates, pools (CRUD),
//     importErrors, rules/test, eventLogs (the audit log, §10.4), health and openapi.yaml; and
//     the repairs of §10 (repair.go): clearTaskInstances and dagRuns/{id}/clear (Airflow's
//     bodies and defaults: dry_run true, and only_failed true on clearTaskInstances; the dry run
//     is explain.ClearPreview), PATCH of a task instance (new_state, note) and of a run (state,
//     note), DELETE of a run.
//   - The seed's routes: GET /pools (capacity, occupancy, holders, waiting entries in admission
//     order, the last 50 terminal entries per pool) and POST /pools/{name}/queue/{key}/cancel,
//     key being the queue ID. Their JSON names the queue ID queueId, as the seed does; so does the
//     202 answer of a manual start. Everything else is snake_case.
//   - /metrics: Prometheus metrics (see Metrics).
//
// Status codes are chosen explicitly from the error kind: an unknown resource in the path is
// 404; a bad body or query is 400 and the detail starts with the field ("conf: want a JSON
// object"); a pool's refusal or a state conflict is 409 with the pool's own message;
// store.ErrUnavailable is 503 "pool state is unavailable" (§4.9). Bodies are capped at 1 MiB and
// decoded with unknown fields refused. Errors are {"title", "status", "detail"}.
//
// Writes: a manual start and the commands on runs this process's daemon owns go through the
// daemon's loop (executor.Daemon.Trigger and Command), so their answers are immediate. Pause,
// pool changes and commands on runs another process owns are written through a store handle of
// the server's own (Config.Writer): a different SQLite connection from the daemon's, so the daemon
// sees them as outside writes and reloads, exactly as it does for the CLI. Commands to another
// process's run are awaited up to Config.CommandWait and answer 202 when not applied by then;
// commands tolerate replay (a second application is refused with 409, never applied twice).
//
// Audit (§10.4): the actor of a request is "api:<client IP>" (actor.go; the UI's actions, sent
// through Call with the browser's request context, carry the browser's address). A change the
// API writes itself (pause, pools, notes) writes its event in the same transaction; a command's
// event is written by the daemon's pass that applies or refuses it; a request refused here for
// what it names (404, 409) leaves an event with the refusal, a malformed one (400) none.
//
// Pools defined in poolflow.yaml are read-only over the API (409): change them in the file.
// Pools created over the API or the CLI are kept in the store.
//
// Auth: with a token configured, every mutating route and the log route need
// "Authorization: Bearer <token>" (compared in constant time); other reads, and POST
// /rules/test, which changes nothing, are open.
package server
