package server

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/poolflow/poolflow/dag"
	"github.com/poolflow/poolflow/vocab"
)

// dependencyJSON is one of Airflow's unmet dependencies: what is not met, and why.
type dependencyJSON struct {
	Name   string `json:"name"`
	Reason string `json:"reason"`
}

type dependenciesJSON struct {
	Dependencies []dependencyJSON `json:"dependencies"`
}

// dependencyNames gives each wait reason of §4.5 the name Airflow would show for it (its own
// where one exists: "Pool Slots Available", "Task Concurrency", …).
var dependencyNames = map[vocab.ReasonCode]string{
	vocab.ReasonPoolFull:      "Pool Slots Available",
	vocab.ReasonBehind:        "Pool Admission Order",
	vocab.ReasonStarvedHead:   "Pool Starvation Guard",
	vocab.ReasonGlobalLimit:   "Global Concurrency (max_running)",
	vocab.ReasonDAGLimit:      "Dag Run Task Concurrency (max_active_tasks)",
	vocab.ReasonTaskLimit:     "Task Concurrency",
	vocab.ReasonBackfillLimit: "Backfill Pool Share (max_slots)",
	vocab.ReasonForbid:        "Dag Run Concurrency Policy",
	vocab.ReasonPaused:        "Dag Not Paused",
	vocab.ReasonNodeAway:      "Daemon Available",
	vocab.ReasonDraining:      "Pool Not Draining",
	vocab.ReasonUnknownPool:   "Pool Exists",
	vocab.ReasonOverCapacity:  "Pool Capacity",
	vocab.ReasonQueued:        "Pool Slots Available",
	vocab.ReasonRunQueued:     "Dag Run Limit",
	vocab.ReasonRetry:         "Not In Retry Period",
	vocab.ReasonReschedule:    "Ready To Reschedule",
	vocab.ReasonApproval:      "Approval",
	vocab.ReasonMapLine:       "Mapped Task Queue Window",
}

// getDependencies is GET .../taskInstances/{task_id}/dependencies: the unmet dependencies of a
// task instance, filled from its wait reason (§4.5); empty when nothing holds it back.
func (s *Server) getDependencies(w http.ResponseWriter, r *http.Request) {
	t, err := s.taskInstanceOf(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, dependenciesJSON{Dependencies: t.dependencies()})
}

func (t *taskInstance) dependencies() []dependencyJSON {
	out := []dependencyJSON{}
	state := t.ti.State
	if state == vocab.TaskNone && t.run.State != vocab.RunQueued && t.ti.ReasonCode != vocab.ReasonMapLine {
		return append(out, dependencyJSON{Name: "Trigger Rule", Reason: t.upstreamReason()})
	}
	if wr := waitReason(t.run, t.ti, t.entry); wr != nil {
		name := dependencyNames[wr.Code]
		if name == "" {
			name = string(wr.Code)
		}
		return append(out, dependencyJSON{Name: name, Reason: strings.TrimPrefix(wr.Text, "waiting: ")})
	}
	if state == vocab.TaskRunning || state.Terminal() {
		out = append(out, dependencyJSON{Name: "Task Instance State",
			Reason: fmt.Sprintf("task is in the '%s' state", state)})
	}
	return out
}

// upstreamReason names the upstream tasks that have not finished, under the task's trigger rule.
func (t *taskInstance) upstreamReason() string {
	if t.task == nil {
		return "upstream tasks have not finished"
	}
	states := map[string]vocab.TaskState{}
	for _, ti := range t.all {
		states[ti.TaskID] = ti.State
	}
	var open []string
	for _, up := range t.task.DependsOn {
		if st := states[up]; !st.Terminal() {
			open = append(open, fmt.Sprintf("%s (%s)", up, orText(st, vocab.TaskNone)))
		}
	}
	rule := string(t.task.TriggerRule)
	if rule == "" {
		rule = string(dag.AllSuccess)
	}
	if len(open) == 0 {
		return fmt.Sprintf("trigger rule %s is evaluated at the next pass", rule)
	}
	return fmt.Sprintf("trigger rule %s waits for upstream tasks to finish: %s", rule, strings.Join(open, ", "))
}
