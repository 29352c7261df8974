package executor

import "github.com/poolflow/poolflow/executor/decide"

// TriggerRequest is a manual start (CLI, API).
type TriggerRequest = decide.TriggerRequest

// TriggerResult describes a triggered run after its first pass.
type TriggerResult = decide.TriggerResult

// ErrRefused is a start a pool refused (HTTP 409 with the pool's message).
var ErrRefused = decide.ErrRefused

// TestRun describes the single run of `poolflow dags test`.
type TestRun = decide.TestRun
