package ui

import (
	"encoding/json"

	"github.com/poolflow/poolflow/server"
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

// clearRow is one task instance a clear takes, as the API's dry run answers it (its state
// now, the try its next attempt runs as, what that attempt will need, and admitted at once or
// why it would wait); markRow one a mark takes, as the task instance it is now.
type (
	clearRow = server.ClearPreviewJSON
	markRow  = server.TaskInstanceJSON
)

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
