package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/poolflow/poolflow/auth"
	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/vocab"
)

// poolflow users and poolflow tokens (§15): they write to the store, so every daemon of the
// installation sees a change at once. The first user must be an admin and turns authentication
// on; after it, these commands need $POOLFLOW_TOKEN of an admin (a user may manage their own
// tokens).

func (e *env) usersCmd() *cobra.Command {
	c := &cobra.Command{Use: "users", Short: "Create, list and delete users; set their passwords and roles"}
	c.AddCommand(e.usersCreateCmd(), e.usersDeleteCmd(), e.usersListCmd(), e.usersSetPasswordCmd(), e.usersSetRolesCmd())
	return c
}

// grantsOf reads --role (repeatable; ROLE or ROLE:TEAM) with --team applied to the roles that
// name none.
func grantsOf(roles []string, team string) ([]store.Grant, error) {
	var out []store.Grant
	for _, r := range roles {
		gs, err := store.ParseGrants(r)
		if err != nil {
			return nil, &ExitError{Code: ExitUsage, Err: fmt.Errorf("--role: %w", err)}
		}
		for i := range gs {
			if gs[i].Team == "" {
				gs[i].Team = team
			}
		}
		out = append(out, gs...)
	}
	if len(out) == 0 {
		return nil, &ExitError{Code: ExitUsage, Err: errors.New("--role is required: viewer, operator or admin")}
	}
	return out, nil
}

// readPassword reads a password: the first line of stdin with --password-stdin, else twice at
// a terminal prompt without echo; "" when stdin is not a terminal (a user without a password
// signs in with tokens only).
func (e *env) readPassword(cmd *cobra.Command, fromStdin bool) (string, error) {
	if fromStdin {
		line, err := bufio.NewReader(cmd.InOrStdin()).ReadString('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			return "", err
		}
		pw := strings.TrimRight(line, "\r\n")
		if pw == "" {
			return "", &ExitError{Code: ExitUsage, Err: errors.New("--password-stdin: stdin is empty")}
		}
		return pw, nil
	}
	f, ok := cmd.InOrStdin().(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return "", nil
	}
	fd := int(f.Fd())
	fmt.Fprint(e.stderr, "Password: ")
	pw, err := term.ReadPassword(fd)
	fmt.Fprintln(e.stderr)
	if err != nil {
		return "", err
	}
	fmt.Fprint(e.stderr, "Again: ")
	again, err := term.ReadPassword(fd)
	fmt.Fprintln(e.stderr)
	if err != nil {
		return "", err
	}
	if string(pw) != string(again) {
		return "", &ExitError{Code: ExitUsage, Err: errors.New("the passwords differ")}
	}
	return string(pw), nil
}

func (e *env) usersCreateCmd() *cobra.Command {
	var roles []string
	var team string
	var pwStdin bool
	c := &cobra.Command{
		Use:   "create NAME --role ROLE [--team TEAM] [--password-stdin]",
		Short: "Create a user (the first one must be an admin, and turns authentication on)",
		Long: "Create a user with roles: viewer (reads, logs), operator (also trigger, clear, mark, notes,\n" +
			"approve, cancel, pause, backfill) or admin (also pools, users, every token). --team scopes the\n" +
			"roles to a team's DAGs and pools (operator of finance); --role operator:finance says the same.\n" +
			"The password is read from a terminal prompt, or from stdin's first line with --password-stdin;\n" +
			"without either the user has no password and uses API tokens only.",
		Example: "  poolflow users create ada --role admin\n" +
			"  echo \"$PW\" | poolflow users create finn --role operator --team finance --password-stdin",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			grants, err := grantsOf(roles, team)
			if err != nil {
				return err
			}
			_, st, _, err := e.open(ctx)
			if err != nil {
				return err
			}
			defer st.Close()
			has, err := st.HasUsers(ctx)
			if err != nil {
				return err
			}
			if !has && !slicesHasAdmin(grants) {
				return &ExitError{Code: ExitUsage, Err: errors.New("the first user must be an admin (--role admin): " +
					"it turns authentication on, and only an admin can create the others")}
			}
			if err := e.authorize(ctx, st, vocab.PermUsers, ""); err != nil {
				return err
			}
			pw, err := e.readPassword(cmd, pwStdin)
			if err != nil {
				return err
			}
			if err := auth.CreateUser(ctx, st, e.actor(), args[0], pw, grants, time.Now()); err != nil {
				return err
			}
			fmt.Fprintf(e.stdout, "user %s created (%s)\n", args[0], store.FormatGrants(grants))
			if !has {
				fmt.Fprintln(e.stderr, "authentication is now on: every request needs a session or an API token "+
					"(poolflow tokens create --user "+args[0]+")")
			}
			if pw == "" {
				fmt.Fprintln(e.stderr, "no password set: the user signs in with API tokens only (poolflow users set-password)")
			}
			return nil
		},
	}
	c.Flags().StringArrayVar(&roles, "role", nil, "role: viewer, operator or admin, optionally ROLE:TEAM (repeatable)")
	c.Flags().StringVar(&team, "team", "", "scope the roles to this team")
	c.Flags().BoolVar(&pwStdin, "password-stdin", false, "read the password from stdin's first line")
	return c
}

func slicesHasAdmin(gs []store.Grant) bool {
	for _, g := range gs {
		if g.Role == vocab.RoleAdmin && g.Team == "" {
			return true
		}
	}
	return false
}

func (e *env) usersDeleteCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "delete NAME",
		Short: "Delete a user and its tokens (not the last admin)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			_, st, _, err := e.open(ctx)
			if err != nil {
				return err
			}
			defer st.Close()
			if err := e.authorize(ctx, st, vocab.PermUsers, ""); err != nil {
				return err
			}
			if err := auth.DeleteUser(ctx, st, e.actor(), args[0], time.Now()); err != nil {
				return err
			}
			fmt.Fprintf(e.stdout, "user %s deleted with its tokens\n", args[0])
			return nil
		},
	}
}

// UserView is a user as `users list -o json` prints it (never its password hash).
type UserView struct {
	Name        string    `json:"name"`
	Roles       []string  `json:"roles"`
	HasPassword bool      `json:"has_password"`
	Tokens      int       `json:"active_tokens"`
	CreatedAt   time.Time `json:"created_at"`
	UpdatedAt   time.Time `json:"updated_at"`
}

func (e *env) usersListCmd() *cobra.Command {
	var output string
	c := &cobra.Command{
		Use:   "list",
		Short: "List users with their roles",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			_, st, _, err := e.open(ctx)
			if err != nil {
				return err
			}
			defer st.Close()
			users, err := st.ListUsers(ctx)
			if err != nil {
				return err
			}
			tokens, err := st.ListTokens(ctx, "")
			if err != nil {
				return err
			}
			views := []UserView{}
			now := time.Now()
			for _, u := range users {
				v := UserView{Name: u.Name, Roles: []string{}, HasPassword: u.PasswordHash != "", CreatedAt: u.CreatedAt,
					UpdatedAt: u.UpdatedAt}
				for _, g := range u.Roles {
					v.Roles = append(v.Roles, g.String())
				}
				for _, tk := range tokens {
					if tk.User == u.Name && tk.Active(now) {
						v.Tokens++
					}
				}
				views = append(views, v)
			}
			if output == "json" {
				return writeJSON(e.stdout, map[string]any{"users": views, "total_entries": len(views)})
			}
			if len(views) == 0 {
				fmt.Fprintln(e.stdout, "no users: authentication is off (poolflow users create NAME --role admin)")
				return nil
			}
			tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tROLES\tPASSWORD\tTOKENS\tCREATED")
			for _, v := range views {
				pw := "no"
				if v.HasPassword {
					pw = "yes"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\n", v.Name, strings.Join(v.Roles, ","), pw, v.Tokens,
					v.CreatedAt.Format(time.RFC3339))
			}
			return tw.Flush()
		},
	}
	c.Flags().StringVarP(&output, "output", "o", "table", "output format: table or json")
	return c
}

func (e *env) usersSetPasswordCmd() *cobra.Command {
	var pwStdin bool
	c := &cobra.Command{
		Use:   "set-password NAME [--password-stdin]",
		Short: "Set a user's password (an admin's, or one's own)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			_, st, _, err := e.open(ctx)
			if err != nil {
				return err
			}
			defer st.Close()
			if err := e.authorizeSelf(ctx, st, args[0]); err != nil {
				return err
			}
			pw, err := e.readPassword(cmd, pwStdin)
			if err != nil {
				return err
			}
			if pw == "" {
				return &ExitError{Code: ExitUsage, Err: errors.New("no password: give it at the prompt or with --password-stdin")}
			}
			if err := auth.SetPassword(ctx, st, e.actor(), args[0], pw, time.Now()); err != nil {
				return err
			}
			fmt.Fprintf(e.stdout, "password of %s set\n", args[0])
			return nil
		},
	}
	c.Flags().BoolVar(&pwStdin, "password-stdin", false, "read the password from stdin's first line")
	return c
}

func (e *env) usersSetRolesCmd() *cobra.Command {
	var roles []string
	var team string
	c := &cobra.Command{
		Use:     "set-roles NAME --role ROLE [--role ROLE:TEAM] [--team TEAM]",
		Short:   "Replace a user's roles",
		Example: "  poolflow users set-roles finn --role operator:finance --role viewer",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			grants, err := grantsOf(roles, team)
			if err != nil {
				return err
			}
			_, st, _, err := e.open(ctx)
			if err != nil {
				return err
			}
			defer st.Close()
			if err := e.authorize(ctx, st, vocab.PermUsers, ""); err != nil {
				return err
			}
			if err := auth.SetRoles(ctx, st, e.actor(), args[0], grants, time.Now()); err != nil {
				return err
			}
			fmt.Fprintf(e.stdout, "roles of %s: %s\n", args[0], store.FormatGrants(grants))
			return nil
		},
	}
	c.Flags().StringArrayVar(&roles, "role", nil, "role: viewer, operator or admin, optionally ROLE:TEAM (repeatable)")
	c.Flags().StringVar(&team, "team", "", "scope the roles to this team")
	return c
}

// authorizeSelf lets a user act on their own account (PermOwnToken) and an admin on anyone's.
func (e *env) authorizeSelf(ctx context.Context, st store.Store, user string) error {
	p, err := e.identify(ctx, st)
	if err != nil {
		return err
	}
	if p.Kind == auth.KindUser && p.Name == user {
		return e.authorize(ctx, st, vocab.PermOwnToken, "")
	}
	return e.authorize(ctx, st, vocab.PermUsers, "")
}
