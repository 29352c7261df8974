package cli

import (
	"bufio"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/poolflow/poolflow/retention"
	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/vocab"
)

// dbCmd is `poolflow db`: the history the store keeps (§12).
func (e *env) dbCmd() *cobra.Command {
	c := &cobra.Command{Use: "db", Short: "Delete history older than a moment (runs, their logs, events)"}
	c.AddCommand(e.dbCleanCmd())
	return c
}

func (e *env) dbCleanCmd() *cobra.Command {
	var before string
	var dryRun, yes, vacuum bool
	c := &cobra.Command{
		Use:   "clean --before T [--dry-run] [--yes] [--vacuum]",
		Short: "Delete the runs that ended before T with their task instances, attempts and logs, and older events",
		Long: "Delete what retention (retention: in poolflow.yaml) would delete at a cutoff of T: the runs that ended\n" +
			"before T with their task instances, attempts, queue entries and logs; the audit events before T; the\n" +
			"DAG versions no run records any more. Open runs, runs with a live attempt and the last run of each DAG\n" +
			"are kept. T is a time (2025-01-31, 2025-01-31T12:00:00Z) or an age (90d, 36h: that long ago); a moment\n" +
			"in the future is refused. It deletes in batches of 100 runs, each a short transaction, so running\n" +
			"daemons go on. Logs are removed from this host's state folder; other hosts' daemons remove theirs at\n" +
			"their next walk of their logs folder (hourly). It asks before deleting unless --yes.\n\n" +
			"A SQLite database created by this version gives the freed pages back as it deletes, so the file\n" +
			"shrinks; one created before keeps its size and reuses them. --vacuum then rewrites the file once\n" +
			"(and makes it shrink from then on): the daemons' writes wait until it is done, so run it when they\n" +
			"are stopped or quiet. On PostgreSQL it runs VACUUM.",
		Example: "  poolflow db clean --before 90d --dry-run\n  poolflow db clean --before 2025-01-01 --yes",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			now := time.Now().UTC()
			if before == "" {
				return &ExitError{Code: ExitUsage, Err: errors.New("db clean needs --before (a time such as 2025-01-31, or an age such as 90d)")}
			}
			t, err := parseBefore(before, now)
			if err != nil {
				return &ExitError{Code: ExitUsage, Err: fmt.Errorf("--before: %w", err)}
			}
			_, st, dir, err := e.open(ctx)
			if err != nil {
				return err
			}
			defer st.Close()
			if err := e.authorize(ctx, st, vocab.PermHistory, ""); err != nil {
				return err
			}
			counts, err := st.CountPrunable(ctx, t, t)
			if err != nil {
				return err
			}
			stamp := t.Format(time.RFC3339)
			verb := "Deletes"
			if dryRun {
				verb = "Would delete"
			}
			fmt.Fprintf(e.stdout, "%s what is older than %s:\n", verb, stamp)
			fmt.Fprintf(e.stdout, "  runs          %d (with %d task instances, %d attempts, %d queue entries)\n", counts.Runs,
				counts.TaskInstances, counts.Attempts, counts.Entries)
			fmt.Fprintf(e.stdout, "  events        %d\n", counts.Events)
			fmt.Fprintf(e.stdout, "  notifications %d (delivered or failed; those still to send are kept)\n", counts.Notifications)
			fmt.Fprintf(e.stdout, "  dag versions  %d (recorded by no run left)\n", counts.Versions)
			fmt.Fprintf(e.stdout, "  logs          the runs' folders in %s\n", dir)
			fmt.Fprintln(e.stdout, "Kept: open runs, runs with a live attempt, the last run of each DAG.")
			if dryRun {
				runs, err := st.PrunableRuns(ctx, t, 10)
				if err != nil {
					return err
				}
				for _, r := range runs {
					fmt.Fprintf(e.stdout, "  %s %s\n", r.DAGID, r.RunID)
				}
				if counts.Runs > len(runs) {
					fmt.Fprintf(e.stdout, "  … and %d more runs\n", counts.Runs-len(runs))
				}
				return nil
			}
			if !yes {
				fmt.Fprint(e.stdout, "Delete them? [y/N] ")
				answer, _ := bufio.NewReader(cmd.InOrStdin()).ReadString('\n')
				if a := strings.ToLower(strings.TrimSpace(answer)); a != "y" && a != "yes" {
					return errors.New("not confirmed: nothing deleted (pass --yes to delete without asking)")
				}
			}
			c := &retention.Cleaner{Store: st, StateDir: dir}
			// The logs of the runs it keeps (the last of each DAG) stay with them.
			res, err := c.Clean(ctx, retention.Cutoffs{Runs: t, Events: t}, now, 0)
			ev := e.event(vocab.ActionDBClean)
			ev.Params = params(map[string]any{"before": stamp, "runs": res.Runs, "events": res.Events, "versions": res.Versions, "pool_capacities": res.Capacities})
			if err != nil {
				ev.Outcome = "stopped: " + err.Error()
			}
			_ = st.WithTx(ctx, func(tx store.Tx) error { return tx.InsertEvent(&ev) })
			fmt.Fprintf(e.stdout, "Deleted %d runs, %d events and notifications, %d dag versions, %d pool capacity changes and %d run log folders, in %d transactions.\n",
				res.Runs, res.Events, res.Versions, res.Capacities, res.LogDirs, res.Batches)
			if err != nil || !vacuum {
				return err
			}
			began := time.Now()
			if err := store.Vacuum(ctx, st); err != nil {
				return fmt.Errorf("vacuum: %w", err)
			}
			fmt.Fprintf(e.stdout, "Vacuumed %s in %v.\n", st.Path(), time.Since(began).Round(time.Millisecond))
			return nil
		},
	}
	c.Flags().StringVar(&before, "before", "", "delete what is older than this time (2025-01-31, RFC 3339) or age (90d, 36h)")
	c.Flags().BoolVar(&dryRun, "dry-run", false, "say what would be deleted, delete nothing")
	c.Flags().BoolVar(&yes, "yes", false, "delete without asking")
	c.Flags().BoolVar(&vacuum, "vacuum", false, "then rewrite the database to give the freed space back (writes wait meanwhile)")
	return c
}

// parseBefore reads --before: an RFC 3339 time, a date or a date and time without a zone
// (UTC), or an age (90d, 36h, 30m: that long before now). A moment after now is refused: db
// clean deletes what is older than a moment that has passed, and a mistyped year would delete
// everything.
func parseBefore(s string, now time.Time) (time.Time, error) {
	var t time.Time
	var err error
	if days, ok := strings.CutSuffix(s, "d"); ok {
		var n int
		if n, err = strconv.Atoi(days); err == nil && n >= 0 {
			t = now.Add(-time.Duration(n) * 24 * time.Hour)
		}
	} else if d, derr := time.ParseDuration(s); derr == nil && d >= 0 {
		t = now.Add(-d)
	} else {
		err = derr
		for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02 15:04:05", "2006-01-02"} {
			if t, err = time.Parse(layout, s); err == nil {
				break
			}
		}
	}
	if err != nil || t.IsZero() {
		return time.Time{}, fmt.Errorf("%q is neither a time (2025-01-31, 2025-01-31T12:00:00Z) nor an age (90d, 36h)", s)
	}
	if t.After(now) {
		return time.Time{}, fmt.Errorf("%s is in the future; db clean deletes what is older than a moment that has passed",
			t.UTC().Format(time.RFC3339))
	}
	return t.UTC(), nil
}
