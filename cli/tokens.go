package cli

import (
	"fmt"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/poolflow/poolflow/auth"
	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/vocab"
)

func (e *env) tokensCmd() *cobra.Command {
	c := &cobra.Command{Use: "tokens", Short: "Create, list and revoke users' API tokens"}
	c.AddCommand(e.tokensCreateCmd(), e.tokensListCmd(), e.tokensRevokeCmd())
	return c
}

func (e *env) tokensCreateCmd() *cobra.Command {
	var user, name, expires string
	c := &cobra.Command{
		Use:   "create --user NAME [--expires 90d] [--name LABEL]",
		Short: "Create an API token for a user and print it once",
		Long: "Create an API token for a user and print it on stdout: this is the only time it is shown (the\n" +
			"store keeps its SHA-256). Send it as Authorization: Bearer <token>; the CLI reads it from\n" +
			"$POOLFLOW_TOKEN. --expires takes days (90d), a duration (720h) or never (the default).",
		Example: "  export POOLFLOW_TOKEN=$(poolflow tokens create --user ada --expires 90d --name laptop)",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			if user == "" {
				return &ExitError{Code: ExitUsage, Err: fmt.Errorf("--user is required")}
			}
			ttl, err := auth.ParseExpiry(expires)
			if err != nil {
				return &ExitError{Code: ExitUsage, Err: fmt.Errorf("--expires: %w", err)}
			}
			_, st, _, err := e.open(ctx)
			if err != nil {
				return err
			}
			defer st.Close()
			if err := e.authorizeSelf(ctx, st, user); err != nil {
				return err
			}
			tk, secret, err := auth.CreateToken(ctx, st, e.actor(), user, name, ttl, time.Now())
			if err != nil {
				return err
			}
			fmt.Fprintln(e.stdout, secret)
			exp := "never expires"
			if !tk.ExpiresAt.IsZero() {
				exp = "expires " + tk.ExpiresAt.Format(time.RFC3339)
			}
			fmt.Fprintf(e.stderr, "token %d of %s created (%s); it is not shown again\n", tk.ID, user, exp)
			return nil
		},
	}
	c.Flags().StringVar(&user, "user", "", "the user the token acts as")
	c.Flags().StringVar(&name, "name", "", "a label to tell the token apart (laptop, ci)")
	c.Flags().StringVar(&expires, "expires", "", "lifetime: 90d, 720h or never")
	return c
}

// TokenView is a token as `tokens list -o json` prints it (never its secret or hash).
type TokenView struct {
	ID        int64            `json:"id"`
	User      string           `json:"user"`
	Name      string           `json:"name"`
	Prefix    string           `json:"prefix"`
	State     vocab.TokenState `json:"state"`
	CreatedAt time.Time        `json:"created_at"`
	ExpiresAt *time.Time       `json:"expires_at"`
	RevokedAt *time.Time       `json:"revoked_at"`
}

// TokenViewOf is tk's view at now.
func TokenViewOf(tk store.Token, now time.Time) TokenView {
	v := TokenView{ID: tk.ID, User: tk.User, Name: tk.Name, Prefix: tk.Prefix, State: vocab.TokenActive, CreatedAt: tk.CreatedAt}
	if !tk.ExpiresAt.IsZero() {
		t := tk.ExpiresAt
		v.ExpiresAt = &t
		if !now.Before(t) {
			v.State = vocab.TokenExpired
		}
	}
	if !tk.RevokedAt.IsZero() {
		t := tk.RevokedAt
		v.RevokedAt, v.State = &t, vocab.TokenRevoked
	}
	return v
}

func (e *env) tokensListCmd() *cobra.Command {
	var user, output string
	c := &cobra.Command{
		Use:   "list [--user NAME]",
		Short: "List API tokens (a user's own, or everyone's for an admin)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			_, st, _, err := e.open(ctx)
			if err != nil {
				return err
			}
			defer st.Close()
			p, err := e.identify(ctx, st)
			if err != nil {
				return err
			}
			if user == "" && p.Kind == auth.KindUser && !p.CanAny(vocab.PermUsers) {
				user = p.Name
			}
			if user != "" {
				err = e.authorizeSelf(ctx, st, user)
			} else {
				err = e.authorize(ctx, st, vocab.PermUsers, "")
			}
			if err != nil {
				return err
			}
			tokens, err := st.ListTokens(ctx, user)
			if err != nil {
				return err
			}
			now := time.Now()
			views := []TokenView{}
			for _, tk := range tokens {
				views = append(views, TokenViewOf(tk, now))
			}
			if output == "json" {
				return writeJSON(e.stdout, map[string]any{"tokens": views, "total_entries": len(views)})
			}
			tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tUSER\tNAME\tPREFIX\tSTATE\tCREATED\tEXPIRES")
			for _, v := range views {
				exp := "never"
				if v.ExpiresAt != nil {
					exp = v.ExpiresAt.Format(time.RFC3339)
				}
				fmt.Fprintf(tw, "%d\t%s\t%s\t%s…\t%s\t%s\t%s\n", v.ID, v.User, v.Name, v.Prefix, v.State,
					v.CreatedAt.Format(time.RFC3339), exp)
			}
			return tw.Flush()
		},
	}
	c.Flags().StringVar(&user, "user", "", "only this user's tokens")
	c.Flags().StringVarP(&output, "output", "o", "table", "output format: table or json")
	return c
}

func (e *env) tokensRevokeCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "revoke ID",
		Short: "Revoke an API token by its id (one's own, or anyone's for an admin)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			id, err := strconv.ParseInt(args[0], 10, 64)
			if err != nil || id < 1 {
				return &ExitError{Code: ExitUsage, Err: fmt.Errorf("token id %q: want the number tokens list shows", args[0])}
			}
			_, st, _, err := e.open(ctx)
			if err != nil {
				return err
			}
			defer st.Close()
			p, err := e.identify(ctx, st)
			if err != nil {
				return err
			}
			owner := "" // an admin (or an installation without users) revokes anyone's
			if !p.CanAny(vocab.PermUsers) {
				if err := e.authorize(ctx, st, vocab.PermOwnToken, ""); err != nil {
					return err
				}
				owner = p.Name
			} else if err := e.authorize(ctx, st, vocab.PermUsers, ""); err != nil {
				return err
			}
			tk, err := auth.RevokeToken(ctx, st, e.actor(), id, owner, time.Now())
			if err != nil {
				return err
			}
			fmt.Fprintf(e.stdout, "token %d of %s revoked\n", tk.ID, tk.User)
			return nil
		},
	}
}
