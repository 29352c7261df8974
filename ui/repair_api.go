package ui

import (
	"encoding/json"

	"github.com/poolflow/poolflow/vocab"
)

// The bodies the repair actions send to the API and the answers they read (Airflow's names,
// SPEC §10.1-§10.2).

type clearBody struct {
	DAGRunID          string   `json:"dag_run_id"`
	TaskIDs           []string `json:"task_ids"`
	OnlyFailed        bool     `json:"only_failed"`
	IncludeUpstream   bool     `json:"include_upstream"`
	IncludeDownstream bool     `json:"include_downstream"`
	DryRun            bool     `json:"dry_run"`
}

type runClearBody struct {
	DryRun     bool `json:"dry_run"`
	OnlyFailed bool `json:"only_failed"`
}

type markBody struct {
	NewState          vocab.TaskState `json:"new_state"`
	IncludeUpstream   bool            `json:"include_upstream"`
	IncludeDownstream bool            `json:"include_downstream"`
	DryRun            bool            `json:"dry_run"`
}

// clearRow is one task instance a clear takes, as the dry run answers it: its state now, the
// try its next attempt runs as, the requirements that try needs, and whether it would be
// admitted at once or why it would wait.
type clearRow struct {
	TaskID       string          `json:"task_id"`
	DAGID        string          `json:"dag_id"`
	DAGRunID     string          `json:"dag_run_id"`
	State        vocab.TaskState `json:"state"`
	TryNumber    int             `json:"try_number"`
	Requirements map[string]int  `json:"requirements"`
	Admitted     bool            `json:"admitted"`
	WaitReason   *clearWait      `json:"wait_reason"`
}

// clearWait is why a cleared task would wait: the reason's code and words (those of tasks
// explain), and for a pool reason the pool, the slots of it the task lacks and its place in
// that pool's line (1: next).
type clearWait struct {
	Code      vocab.ReasonCode `json:"code"`
	Text      string           `json:"text"`
	Pool      string           `json:"pool"`
	Shortfall int              `json:"shortfall"`
	Place     int              `json:"place"`
}

// markRow is one task instance a mark takes.
type markRow struct {
	TaskID   string          `json:"task_id"`
	DAGID    string          `json:"dag_id"`
	DAGRunID string          `json:"dag_run_id"`
	State    vocab.TaskState `json:"state"`
}

type clearAnswer struct {
	TaskInstances []clearRow `json:"task_instances"`
}

type markAnswer struct {
	TaskInstances []markRow `json:"task_instances"`
}

func decodeClear(data []byte) []clearRow {
	var a clearAnswer
	_ = json.Unmarshal(data, &a)
	return a.TaskInstances
}

// decodeMark reads a mark's answer: a collection, or the one task instance task.
func decodeMark(data []byte, task string) []markRow {
	var a markAnswer
	if json.Unmarshal(data, &a) == nil && a.TaskInstances != nil {
		return a.TaskInstances
	}
	var one markRow
	if json.Unmarshal(data, &one) == nil && one.TaskID != "" {
		return []markRow{one}
	}
	return []markRow{{TaskID: task}}
}
