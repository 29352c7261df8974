package cli

import (
	"context"

	"github.com/poolflow/poolflow/config"
	"github.com/poolflow/poolflow/dag"
	"github.com/poolflow/poolflow/store"
)

// Reads never write: list, validate, explain and rules test open the database read-only (they
// work without write access to it, and never migrate or create it), and a missing database reads
// as an empty one. Only the commands that change what the user asked for open it for writing,
// and they write only that: the daemon that owns poolflow.yaml syncs its file pools itself.

// openRead opens the command's store (see storeTarget) read-only; nil (and no error) when a
// SQLite database does not exist yet.
func (e *env) openRead(ctx context.Context, cfg *config.Config) (store.Store, error) {
	target, opts, err := e.storeTarget(cfg)
	if err != nil {
		return nil, err
	}
	opts.ReadOnly = true
	st, err := store.OpenTarget(ctx, target, opts)
	if store.IsMissing(err) {
		return nil, nil
	}
	return st, err
}

// validation is the one DAG validation (config.Validate) over the DAGs folder (or only files)
// and the Go DAGs, against poolflow.yaml and the pools st holds (none when st is nil).
func (e *env) validation(ctx context.Context, cfg *config.Config, st store.Store, files []string) (config.Validation, *config.Effective, error) {
	eff, err := config.ReadEffective(ctx, st, cfg)
	if err != nil {
		return config.Validation{}, nil, err
	}
	src := config.Sources{Dir: e.dags(), GoDAGs: e.goDAGs, Files: files}
	return config.Validate(src, eff), eff, nil
}

// loadDAGs is validation's valid DAGs and import errors.
func (e *env) loadDAGs(ctx context.Context, cfg *config.Config, st store.Store) ([]*dag.DAG, []*dag.ImportError, error) {
	v, _, err := e.validation(ctx, cfg, st, nil)
	return v.DAGs, v.Errors, err
}
