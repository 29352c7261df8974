package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/poolflow/poolflow/auth"
	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/vocab"
)

// Who runs a command that writes (§15). The CLI writes to the store itself, so it checks the
// permission itself: while the installation has no user, a command acts as its OS user, as
// before (cli:<os user>@<host> in the audit log). Once a user exists, a write needs the API
// token of a user whose role holds the command's permission, in $POOLFLOW_TOKEN, and the audit
// log names that user. The configured api.token (POOLFLOW_API_TOKEN) is accepted there too, as
// an admin.

// ExitDenied is the exit code of a command refused for want of a permission.
const ExitDenied = 4

// tokenEnv holds the API token the CLI acts with.
const tokenEnv = "POOLFLOW_TOKEN"

// authorize checks that the command may use perm on a target of team ("" = none, or not known
// yet) and records who runs it for the audit log.
func (e *env) authorize(ctx context.Context, st store.Store, perm vocab.Permission, team string) error {
	p, err := e.identify(ctx, st)
	if err != nil {
		return err
	}
	if err := p.Check(perm, team); err != nil {
		var d *auth.Denied
		if errors.As(err, &d) && p.Kind == auth.KindAnonymous {
			return &ExitError{Code: ExitDenied, Err: fmt.Errorf("authentication is on (this installation has users): "+
				"permission %s needs a user's API token in $%s (poolflow tokens create --user NAME)", perm, tokenEnv)}
		}
		return &ExitError{Code: ExitDenied, Err: err}
	}
	e.who = p
	return nil
}

// identify is the principal of this command: auth.Open without users, else $POOLFLOW_TOKEN's.
func (e *env) identify(ctx context.Context, st store.Store) (auth.Principal, error) {
	legacy := e.getenv("POOLFLOW_API_TOKEN")
	if legacy == "" {
		if cfg, err := e.settings(); err == nil {
			legacy = cfg.APIToken
		}
	}
	has, err := st.HasUsers(ctx)
	if err != nil {
		return auth.Principal{}, err
	}
	if !has {
		return auth.Open, nil
	}
	tok := e.getenv(tokenEnv)
	if tok == "" {
		return auth.Anonymous(""), nil
	}
	a := &auth.Authenticator{Store: st, Legacy: legacy}
	p, err := a.Bearer(ctx, tok)
	if errors.Is(err, auth.ErrBadCredentials) {
		return auth.Principal{}, &ExitError{Code: ExitDenied, Err: fmt.Errorf("$%s: %w", tokenEnv, err)}
	}
	return p, err
}

// actor is who the audit log names for this command: the user of $POOLFLOW_TOKEN, else
// cli:<os user>@<host>.
func (e *env) actor() string {
	if e.who.Named() {
		return e.who.Name
	}
	return osActor()
}

// authorizeDAG is authorize on the team of DAG dagID (§15). The DAGs are loaded only for a
// principal whose permission is scoped to teams: everyone else may act whatever the team.
func (e *env) authorizeDAG(ctx context.Context, st store.Store, perm vocab.Permission, dagID string) error {
	p, err := e.identify(ctx, st)
	if err != nil {
		return err
	}
	team := ""
	if !p.Can(perm, "") && p.CanAny(perm) {
		cfg, err := e.settings()
		if err != nil {
			return err
		}
		dags, _, err := e.loadDAGs(ctx, cfg, st)
		if err != nil {
			return err
		}
		for _, d := range dags {
			if d.ID == dagID {
				team = d.Team
			}
		}
	}
	return e.authorize(ctx, st, perm, team)
}

// authorizePool checks the pools permission on pools open to each of teamSets (the pool as it
// is and as it will be): an admin of finance changes only pools that name finance.
func (e *env) authorizePool(ctx context.Context, st store.Store, teamSets ...[]string) error {
	p, err := e.identify(ctx, st)
	if err != nil {
		return err
	}
	if !p.CanAny(vocab.PermPools) {
		return e.authorize(ctx, st, vocab.PermPools, "") // its refusal
	}
	e.who = p
	for _, teams := range teamSets {
		if !e.who.CanPool(vocab.PermPools, teams) {
			team := strings.Join(teams, ", ")
			if team == "" {
				team = "(every team)"
			}
			return &ExitError{Code: ExitDenied, Err: &auth.Denied{Perm: vocab.PermPools, Team: team, Who: e.who.Name}}
		}
	}
	return nil
}
