// Package ui is poolflow's web UI (SPEC §7.3): server-side rendered pages (html/template) under
// /ui/, with their templates, stylesheet, script and pictures embedded in the binary. Nothing is
// fetched at run time and there is no build step.
//
// Pages: the DAG list (with import errors), a DAG (graph view and grid of recent runs × tasks,
// trigger form, pause), a run (tasks and a Gantt chart of its attempts; clear failed tasks,
// clear the run, mark it success or failed, delete it, its note), a task instance (its attempts
// and logs, the wait reason, cancel, approve/reject; clear with its downstream or upstream or
// only the failed ones, mark success, failed or skipped, its note), the Resource pools page
// (capacity, occupancy, holders, the queue in admission order with reasons and cancel buttons,
// recent terminal entries, and a timeline of slots used over the last hour) and the events page
// (the audit log of §10.4, filtered and paged; the DAG, run and task pages show their own).
//
// Repairing runs (§10): a clear and a task's mark first post the API's dry run and show its
// preview — for each task its state, its next try, the pools it will need and whether it would
// be admitted at once or what it would wait for (pool, shortfall, place in line) — in a dialog
// (without the script, on a page), and post again when the user confirms. Marking a run and
// deleting it ask with the browser's confirmation, saying what happens to what is unfinished or
// running. A note is saved with who wrote it and when.
//
// Reads go through the server's read models (server.Server's DAGs, TaskInstances, PoolBoard…),
// so a page shows exactly what the API answers, wait reasons in the words of `poolflow tasks
// explain`. Actions are form posts that the UI sends through the API's own handler
// (server.Server.Call) with the token of the sign-in cookie: one code path for a click and a
// request. Pictures (graph, Gantt, occupancy bars, pool timeline) are SVG drawn here on the server.
//
// Every page reads without JavaScript. The small script of static/app.js makes them live: it
// re-fetches the page it shows every couple of seconds (a 304 while nothing changed; a big page
// less often, about 15 KB a second at most) and changes, in the regions marked data-live, only
// the elements that differ (a morph: focus, selected text, open details and typed text stay),
// follows a running attempt's log, keeps relative times fresh, and submits action forms without
// leaving the page. static/graph.js pans, zooms and searches the DAG graph and follows its run's
// states through a compact JSON read.
//
// Security: all output goes through html/template (SVG text is escaped by the builder of
// svg.go). The sign-in form stores the API token in an HttpOnly, SameSite=Strict cookie; every
// POST must carry an Origin (or Sec-Fetch-Site) of this server. Without a configured token the UI
// acts as the API does: open, same origin only.
package ui
