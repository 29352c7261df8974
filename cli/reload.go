package cli

import (
	"context"
	"log/slog"

	"github.com/poolflow/poolflow/executor"
	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/vocab"
)

// watchReload re-reads poolflow.yaml in the daemon on every value of e.reload (SIGHUP, turned
// into values by main) until ctx ends. The daemon also watches the file; the signal is for
// when a change must apply now, or was made where file times do not help. A reload asked so is
// a person's request: its audit event (§10.4) records the file and the outcome, with the actor
// of serve's own user (who else may signal it).
func (e *env) watchReload(ctx context.Context, dm *executor.Daemon, st store.Store, log *slog.Logger) {
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
			err := dm.Reload(ctx)
			if err != nil {
				log.Warn("SIGHUP: configuration not reloaded", "err", err)
			} else {
				log.Info("SIGHUP: configuration in force", "file", dm.ConfigStatus().File)
			}
			ev := e.event(vocab.ActionReload)
			ev.Params = params(map[string]string{"signal": "SIGHUP", "file": dm.ConfigStatus().File})
			if err != nil {
				ev.Outcome = err.Error()
			}
			if werr := st.WithTx(ctx, func(tx store.Tx) error { return tx.InsertEvent(&ev) }); werr != nil {
				log.Warn("SIGHUP: the reload's audit event could not be written", "err", werr)
			}
		}
	}
}
