package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/poolflow/poolflow/store"
)

// storeCmd is `poolflow store`: the database itself, for operators moving or upgrading an
// installation.
func (e *env) storeCmd() *cobra.Command {
	c := &cobra.Command{Use: "store", Short: "Migrate the store, or copy an installation to another store"}
	c.AddCommand(e.storeMigrateCmd(), e.storeCopyCmd())
	return c
}

func (e *env) storeMigrateCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "migrate",
		Short: "Apply the schema migrations this binary knows and print the schema version",
		Long: "Apply the schema migrations this binary knows to the store (--store, $POOLFLOW_STORE_DSN or the\n" +
			"config's store block) and print its version. Every command migrates on open; this one does\n" +
			"nothing else, for an upgrade before the daemons start. A schema newer than the binary is refused.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, st, _, err := e.open(cmd.Context())
			if err != nil {
				return err
			}
			defer st.Close()
			fmt.Fprintf(e.stdout, "%s: schema version %d (%s)\n", st.Path(), store.SchemaVersion(), st.Driver())
			return nil
		},
	}
}

func (e *env) storeCopyCmd() *cobra.Command {
	var from, to string
	var replace bool
	c := &cobra.Command{
		Use:   "copy --from SOURCE --to TARGET",
		Short: "Copy every table of an installation into another store (SQLite to PostgreSQL, say)",
		Long: "Copy every table of an installation into another store, keeping ids so runs, queue entries and\n" +
			"commands keep their keys and new ones continue after them. SOURCE and TARGET are store targets:\n" +
			"sqlite:PATH or postgres://…; both are migrated to this binary's schema first. The target must be\n" +
			"empty unless --replace, which deletes its rows first. Stop the daemons using the source first;\n" +
			"a failed copy changes nothing in the target.",
		Example: "  poolflow store copy --from sqlite:state/poolflow.db --to postgres://poolflow@db:5432/poolflow",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			if from == "" || to == "" {
				return &ExitError{Code: ExitUsage, Err: fmt.Errorf("store copy needs --from and --to")}
			}
			cfg, err := e.settings()
			if err != nil {
				return err
			}
			open := func(flag, target string) (store.Store, error) {
				t, err := store.ParseTarget(target)
				if err != nil {
					return nil, &ExitError{Code: ExitUsage, Err: fmt.Errorf("--%s: %w", flag, err)}
				}
				var opts store.Options
				if t.Driver == "sqlite" {
					opts.Synchronous = cfg.Synchronous
				}
				st, err := store.OpenTarget(ctx, t, opts)
				if err != nil {
					return nil, fmt.Errorf("--%s: %w", flag, err)
				}
				return st, nil
			}
			src, err := open("from", from)
			if err != nil {
				return err
			}
			defer src.Close()
			dst, err := open("to", to)
			if err != nil {
				return err
			}
			defer dst.Close()
			if src.Driver() == dst.Driver() && src.Path() == dst.Path() {
				return &ExitError{Code: ExitUsage, Err: fmt.Errorf("--from and --to name the same store %s", src.Path())}
			}
			counts, err := store.Copy(ctx, src, dst, replace)
			if err != nil {
				return err
			}
			total := 0
			for _, c := range counts {
				fmt.Fprintf(e.stdout, "%-20s %d rows\n", c.Table, c.Rows)
				total += c.Rows
			}
			fmt.Fprintf(e.stdout, "copied %d rows from %s to %s (schema version %d)\n", total, src.Path(), dst.Path(),
				store.SchemaVersion())
			return nil
		},
	}
	c.Flags().StringVar(&from, "from", "", "the store to copy from: sqlite:PATH or postgres://…")
	c.Flags().StringVar(&to, "to", "", "the store to copy into: postgres://… or sqlite:PATH")
	c.Flags().BoolVar(&replace, "replace", false, "delete the target's rows first instead of refusing a non-empty target")
	return c
}
