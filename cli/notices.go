package cli

import (
	"context"
	"log/slog"
	"time"

	"github.com/poolflow/poolflow/executor"
	"github.com/poolflow/poolflow/server"
)

// observe is serve's observer of its daemon's notices: they feed /metrics, and at debug level
// each is also a log line ("notice", kind=pass after every committed pass), so what a pass did
// can be followed from outside the process (the end-to-end tests wait on these lines). Below
// debug it costs one level check per notice.
func observe(m *server.Metrics, log *slog.Logger) func(executor.Notice) {
	if !log.Enabled(context.Background(), slog.LevelDebug) {
		return m.Observe
	}
	return func(n executor.Notice) {
		m.Observe(n)
		args := []any{"kind", string(n.Kind)}
		if n.DAGID != "" {
			args = append(args, "dag_id", n.DAGID, "run_id", n.RunID)
		}
		if n.TaskID != "" {
			args = append(args, "task_id", n.TaskID, "try_number", n.Try)
		}
		if n.State != "" {
			args = append(args, "state", n.State)
		}
		if n.Pool != "" {
			args = append(args, "pool", n.Pool)
		}
		if n.Reason != "" {
			args = append(args, "reason", n.Reason)
		}
		if !n.At.IsZero() {
			// A pass began after its clock read this: to the nanosecond, which slog's own
			// formatting of a time would cut to the millisecond.
			args = append(args, "at", n.At.Format(time.RFC3339Nano))
		}
		log.Debug("notice", args...)
	}
}
