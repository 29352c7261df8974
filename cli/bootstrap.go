package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/poolflow/poolflow/auth"
	"github.com/poolflow/poolflow/config"
	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/vocab"
)

// bootstrapAuth runs as serve starts (§15): with $POOLFLOW_ADMIN_PASSWORD set and no user yet,
// it creates the first admin ($POOLFLOW_ADMIN_USER, default admin), for a container whose first
// start must come up secured. With auth.required set, a server without any user and without
// api.token refuses to start instead of serving everything open.
func bootstrapAuth(ctx context.Context, st store.Store, cfg *config.Config, legacy string, log *slog.Logger) error {
	has, err := st.HasUsers(ctx)
	if err != nil {
		return err
	}
	if pw := os.Getenv("POOLFLOW_ADMIN_PASSWORD"); pw != "" && !has {
		name := os.Getenv("POOLFLOW_ADMIN_USER")
		if name == "" {
			name = "admin"
		}
		err := auth.CreateUser(ctx, st, osActor(), name, pw, []store.Grant{{Role: vocab.RoleAdmin}}, time.Now())
		switch {
		case errors.Is(err, store.ErrConflict):
			// Another daemon starting at the same moment created it.
		case err != nil:
			return fmt.Errorf("POOLFLOW_ADMIN_PASSWORD: the first admin %s: %w", name, err)
		default:
			log.Info("first admin created from POOLFLOW_ADMIN_PASSWORD", "user", name)
		}
		has = true
	}
	if cfg.Auth.Required && !has && legacy == "" {
		return &ExitError{Code: ExitFailed, Err: errors.New("auth.required is set but this installation has no user and " +
			"no api.token: create the first admin with `poolflow users create NAME --role admin` (or set " +
			"POOLFLOW_ADMIN_PASSWORD), then start again")}
	}
	return nil
}
