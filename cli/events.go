package cli

import (
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/poolflow/poolflow/server"
	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/vocab"
)

func (e *env) eventsCmd() *cobra.Command {
	c := &cobra.Command{Use: "events", Short: "The audit log: who asked for what change, done or refused, and the scheduler's decisions"}
	c.AddCommand(e.eventsListCmd())
	return c
}

func (e *env) eventsListCmd() *cobra.Command {
	var f store.EventFilter
	var action, after, before, output string
	c := &cobra.Command{
		Use:   "list",
		Short: "List audit events, newest first (the filters of GET /api/v1/eventLogs)",
		Long: "Every change a person or a client asked for — trigger, clear, mark, note, delete_run, pause, unpause, " +
			"pool_set, pool_delete, approve, reject, cancel, force, fail — done or refused, with its actor " +
			"(cli:<os user>@<host>, api:<client address>), and the scheduler's takeovers, lost leases, replays, " +
			"expiries and rejections. --after and --before take RFC 3339 times or dates (UTC).",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			if output != "table" && output != "json" {
				return &ExitError{Code: ExitUsage, Err: fmt.Errorf("-o %q: table or json", output)}
			}
			if action != "" {
				if !vocab.Action(action).Valid() {
					return &ExitError{Code: ExitUsage, Err: fmt.Errorf("--event %q is not one of %s", action,
						strings.Join(vocab.Strings(vocab.Actions()), ", "))}
				}
				f.Action = vocab.Action(action)
			}
			var err error
			if f.After, err = parseWhen("--after", after); err != nil {
				return err
			}
			if f.Before, err = parseWhen("--before", before); err != nil {
				return err
			}
			cfg, err := e.settings()
			if err != nil {
				return err
			}
			st, err := e.openRead(ctx, cfg)
			if err != nil {
				return err
			}
			var evs []store.Event
			total := 0
			if st != nil {
				defer st.Close()
				if evs, total, err = st.ListEvents(ctx, f); err != nil {
					return err
				}
			}
			if output == "json" {
				views := make([]server.EventLogJSON, 0, len(evs))
				for _, ev := range evs {
					views = append(views, server.EventView(ev))
				}
				return writeJSON(e.stdout, map[string]any{"event_logs": views, "total_entries": total})
			}
			tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "WHEN\tACTOR\tEVENT\tTARGET\tOUTCOME\tPARAMS")
			for _, ev := range evs {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", ev.At.UTC().Format(time.RFC3339), ev.Actor, ev.Action, targetOf(ev),
					ev.Outcome, orDash(ev.Params))
			}
			tw.Flush()
			if total > len(evs) {
				fmt.Fprintf(e.stderr, "%d of %d events (--limit, --offset for more)\n", len(evs), total)
			}
			return nil
		},
	}
	fl := c.Flags()
	fl.StringVar(&f.DAGID, "dag", "", "events of this DAG")
	fl.StringVar(&f.RunID, "run", "", "events of this run id")
	fl.StringVar(&f.TaskID, "task", "", "events of this task")
	fl.StringVar(&action, "event", "", "events of this action (clear, mark, note, …)")
	fl.StringVar(&f.Actor, "actor", "", "events of this actor exactly (cli:ann@host, api:127.0.0.1)")
	fl.StringVar(&after, "after", "", "events at or after this time")
	fl.StringVar(&before, "before", "", "events before this time")
	fl.IntVar(&f.Limit, "limit", 100, "at most this many (up to 1000)")
	fl.IntVar(&f.Offset, "offset", 0, "skip this many of the newest")
	fl.StringVarP(&output, "output", "o", "table", "output format: table or json")
	return c
}

// parseWhen reads a time flag: RFC 3339, or a date (midnight UTC); "" is none.
func parseWhen(flag, v string) (time.Time, error) {
	if v == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, v); err == nil {
		return t.UTC(), nil
	}
	if t, err := time.Parse(time.DateOnly, v); err == nil {
		return t, nil
	}
	return time.Time{}, &ExitError{Code: ExitUsage, Err: fmt.Errorf("%s %q: want an RFC 3339 time such as 2026-01-02T15:04:05Z, or a date", flag, v)}
}

// targetOf names what an event is about: dag/run/task try N, or the pool.
func targetOf(ev store.Event) string {
	var parts []string
	for _, p := range []string{ev.DAGID, ev.RunID, ev.TaskID} {
		if p != "" {
			parts = append(parts, p)
		}
	}
	s := strings.Join(parts, "/")
	if ev.Try > 0 {
		s += fmt.Sprintf(" try %d", ev.Try)
	}
	if ev.Pool != "" {
		if s != "" {
			s += " "
		}
		s += "pool " + ev.Pool
	}
	return orDash(s)
}
