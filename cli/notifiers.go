package cli

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/poolflow/poolflow/notify"
	"github.com/poolflow/poolflow/server"
	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/vocab"
)

// The notifiers of poolflow.yaml (§13): list them (never their secrets) and send one a test.

func (e *env) notifiersCmd() *cobra.Command {
	c := &cobra.Command{Use: "notifiers", Short: "The notifiers of poolflow.yaml: list them, send one a test notification"}
	c.AddCommand(e.notifiersListCmd(), e.notifiersTestCmd())
	return c
}

func (e *env) notifiersListCmd() *cobra.Command {
	var output string
	c := &cobra.Command{
		Use:   "list",
		Short: "List the notifiers, where they send and where their secrets come from (never the secrets)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if output != "table" && output != "json" {
				return &ExitError{Code: ExitUsage, Err: fmt.Errorf("-o %q: table or json", output)}
			}
			cfg, err := e.settings()
			if err != nil {
				return &ExitError{Code: ExitFailed, Err: err}
			}
			views := []server.NotifierJSON{}
			for _, name := range cfg.NotifierNames() {
				n, _ := cfg.Notifier(name)
				views = append(views, server.NotifierView(*n))
			}
			if output == "json" {
				return writeJSON(e.stdout, map[string]any{"notifiers": views, "total_entries": len(views)})
			}
			tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tTYPE\tSENDS TO\tSECRETS FROM\tTIMEOUT")
			for _, v := range views {
				var secrets []string
				for k, src := range v.Secrets {
					secrets = append(secrets, k+": "+src)
				}
				sort.Strings(secrets)
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", v.Name, v.Type, v.Target, orDash(strings.Join(secrets, ", ")), v.Timeout)
			}
			return tw.Flush()
		},
	}
	c.Flags().StringVarP(&output, "output", "o", "table", "table or json")
	return c
}

func (e *env) notifiersTestCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "test NAME",
		Short: "Send notifier NAME a sample event now, from this process, and say whether it took it",
		Long: "The notifier's secrets are read as serve reads them (secret_env, url_env, password_env or *_file), " +
			"so run it where the daemon runs. The test is recorded in the notifications outbox (event test).",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			name := args[0]
			cfg, st, _, err := e.open(ctx)
			if err != nil {
				return &ExitError{Code: ExitFailed, Err: err}
			}
			defer st.Close()
			if err := e.authorize(ctx, st, vocab.PermNotify, ""); err != nil {
				return err
			}
			if _, ok := cfg.Notifier(name); !ok {
				return &ExitError{Code: ExitUsage, Err: fmt.Errorf("no notifier %s in poolflow.yaml (notifiers: %s)", name,
					orDash(strings.Join(cfg.NotifierNames(), ", ")))}
			}
			base := cfg.BaseURL
			if base == "" {
				base = "http://127.0.0.1:8080"
			}
			start := time.Now()
			sendErr := notify.SendTest(ctx, cfg, name, base, notify.Options{})
			took := time.Since(start).Round(time.Millisecond)
			now := time.Now().UTC()
			row := notify.Row(notify.Event{Event: vocab.EventTest, At: now, Reason: "a test notification",
				Path: "/ui/notifications"}, name, now.Format(time.RFC3339Nano))
			row.State, row.Tries, row.SentAt, row.Sender = vocab.DeliveryDelivered, 1, now, "cli"
			if sendErr != nil {
				row.State, row.LastError = vocab.DeliveryFailed, sendErr.Error()
			}
			if err := st.WithTx(context.WithoutCancel(ctx), func(tx store.Tx) error {
				_, err := tx.InsertNotifications([]*store.Notification{row})
				return err
			}); err != nil {
				fmt.Fprintf(e.stderr, "poolflow: the test was not recorded: %v\n", err)
			}
			if sendErr != nil {
				return &ExitError{Code: ExitFailed, Err: fmt.Errorf("notifier %s did not take the test: %w", name, sendErr)}
			}
			fmt.Fprintf(e.stdout, "notifier %s took the test notification (%s)\n", name, took)
			return nil
		},
	}
}
