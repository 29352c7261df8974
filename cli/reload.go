package cli

import (
	"context"
	"log/slog"

	"github.com/poolflow/poolflow/executor"
)

// watchReload re-reads poolflow.yaml in the daemon on every value of e.reload (SIGHUP, turned
// into values by main) until ctx ends. The daemon also watches the file; the signal is for
// when a change must apply now, or was made where file times do not help.
func (e *env) watchReload(ctx context.Context, dm *executor.Daemon, log *slog.Logger) {
	if e.reload == nil {
		return
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-dm.Done():
			return
		case <-e.reload:
			if err := dm.Reload(ctx); err != nil {
				log.Warn("SIGHUP: configuration not reloaded", "err", err)
			} else {
				log.Info("SIGHUP: configuration in force", "file", dm.ConfigStatus().File)
			}
		}
	}
}
