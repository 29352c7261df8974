package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/poolflow/poolflow/vocab"
)

// Clears and marks (issue 18) at random: on a run the store has (none of a dags test process,
// which only that process applies commands to), of a task of its DAG, through a daemon's API or
// the CLI. A clear reopens an ended run, stops a running attempt and runs its next try; a mark
// stops a running attempt too. The checks need nothing new: a stopped attempt whose next try
// started before its processes were gone is an attempt running twice, a slot it kept past its
// end is a pool over capacity, a reopened run of a max_active_runs 1 DAG started beside another
// is two runs at once, and every reopened run must end again in the quiet period.

// repair carries out a clear or a mark.
func (h *harness) repair(a action) {
	addr := h.r.anyReady(a.target)
	if addr == "" {
		h.count(fmt.Sprintf("skipped: %s with no daemon answering", a.kind))
		return
	}
	runs, err := h.r.runs(addr)
	if err != nil {
		h.count(fmt.Sprintf("skipped: %s, runs not read", a.kind))
		h.logf("%s: %v", a, err)
		return
	}
	var pool []runJSON
	for _, r := range runs {
		if t, _ := vocab.ParseRunType(r.RunType); t != vocab.RunTest {
			pool = append(pool, r)
		}
	}
	if len(pool) == 0 {
		h.count(fmt.Sprintf("skipped: %s with no run yet", a.kind))
		return
	}
	run := pool[a.pick%len(pool)]
	var tasks []string
	for _, d := range h.p.defs {
		if d.id == run.DAGID {
			for _, t := range d.tasks {
				tasks = append(tasks, t.id)
			}
		}
	}
	if len(tasks) == 0 {
		return
	}
	task := tasks[a.task%len(tasks)]
	whole := a.kind == kClear && a.onlyFailed // a clear of the run's failed tasks names none
	what := fmt.Sprintf("%s %s/%s", a, run.DAGID, run.RunID)
	if !whole {
		what += "/" + task
	}
	if a.http && h.r.readyDaemon(a.target) != "" {
		h.repairHTTP(a, h.r.readyDaemon(a.target), run, task, whole, what)
		return
	}
	h.repairCLI(a, run, task, whole, what)
}

func (h *harness) repairHTTP(a action, addr string, run runJSON, task string, whole bool, what string) {
	var req *http.Request
	var err error
	path := "http://" + addr + "/api/v1/dags/" + url.PathEscape(run.DAGID)
	if a.kind == kClear {
		body := map[string]any{"dag_run_id": run.RunID, "include_downstream": a.downstream, "only_failed": a.onlyFailed,
			"dry_run": false}
		if !whole {
			body["task_ids"] = []string{task}
		}
		b, _ := json.Marshal(body)
		req, err = http.NewRequest(http.MethodPost, path+"/clearTaskInstances", strings.NewReader(string(b)))
	} else {
		b, _ := json.Marshal(map[string]any{"new_state": a.state, "include_downstream": a.downstream})
		req, err = http.NewRequest(http.MethodPatch, path+"/dagRuns/"+url.PathEscape(run.RunID)+"/taskInstances/"+
			url.PathEscape(task), strings.NewReader(string(b)))
	}
	if err != nil {
		h.logf("%s: %v", what, err)
		return
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := h.r.http.Do(req)
	if err != nil {
		h.count(fmt.Sprintf("%ss over HTTP: no answer", a.kind))
		h.logf("%s: %v", what, err)
		return
	}
	defer resp.Body.Close()
	var out struct {
		Detail string `json:"detail"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&out)
	h.count(fmt.Sprintf("%ss over HTTP: %d", a.kind, resp.StatusCode))
	if resp.StatusCode/100 == 2 {
		h.repaired(run.DAGID, run.RunID)
	}
	h.logf("%s: %d %s", what, resp.StatusCode, out.Detail)
}

func (h *harness) repairCLI(a action, run runJSON, task string, whole bool, what string) {
	var args []string
	if a.kind == kClear {
		args = []string{"tasks", "clear", run.DAGID, run.RunID}
		if !whole {
			args = append(args, task)
		}
		if a.onlyFailed {
			args = append(args, "--only-failed")
		}
	} else {
		args = []string{"tasks", "mark", run.DAGID, run.RunID, task, "--state", string(a.state)}
	}
	if a.downstream {
		args = append(args, "--downstream")
	}
	out, errOut, err := h.r.cli(30*time.Second, args...)
	switch {
	case err != nil:
		h.count(fmt.Sprintf("%ss by the CLI: refused or failed", a.kind))
		h.logf("%s: %v: %s", what, err, strings.TrimSpace(errOut))
	case strings.Contains(out, "queued;"):
		h.repaired(run.DAGID, run.RunID)
		h.count(fmt.Sprintf("%ss by the CLI: queued", a.kind))
		h.logf("%s: %s", what, strings.TrimSpace(out))
	default:
		h.repaired(run.DAGID, run.RunID)
		h.count(fmt.Sprintf("%ss by the CLI: applied", a.kind))
		h.logf("%s: %s", what, strings.TrimSpace(out))
	}
}
