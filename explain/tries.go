package explain

import (
	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/vocab"
)

// TryNumber is the try a task instance reports everywhere (API, UI, `tasks explain`): while its
// newest queue entry waits or runs, the try that entry runs as (a queued retry shows its new
// number, a first try waiting for a pool shows 1); otherwise the task's latest attempt (0 when
// it never had one).
func TryNumber(ti store.TaskInstance, e *store.Entry) int {
	if e != nil && (e.State == vocab.EntryWaiting || e.State == vocab.EntryAdmitted) {
		return max(ti.TryNumber, e.TryNumber)
	}
	return ti.TryNumber
}
