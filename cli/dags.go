package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/poolflow/poolflow/dag"
	"github.com/poolflow/poolflow/executor"
	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/vocab"
)

func (e *env) dagsCmd() *cobra.Command {
	c := &cobra.Command{Use: "dags", Short: "List, validate, trigger, test, backfill, pause and unpause DAGs; mark and delete runs"}
	c.AddCommand(e.dagsListCmd(), e.dagsValidateCmd(), e.dagsTriggerCmd(), e.dagsTestCmd(),
		e.pauseCmd("pause", true), e.pauseCmd("unpause", false), e.markRunCmd(), e.deleteRunCmd(), e.dagsBackfillCmd())
	return c
}

func (e *env) dagsListCmd() *cobra.Command {
	var output string
	c := &cobra.Command{
		Use:   "list",
		Short: "List the DAGs of the DAGs folder and the registered Go DAGs",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			cfg, err := e.settings()
			if err != nil {
				return err
			}
			st, err := e.openRead(ctx, cfg)
			if err != nil {
				return err
			}
			flags := map[string]store.DAGState{}
			if st != nil {
				defer st.Close()
				if flags, err = st.ListDAGStates(ctx); err != nil {
					return err
				}
			}
			dags, errs, err := e.loadDAGs(ctx, cfg, st)
			if err != nil {
				return err
			}
			type row struct {
				DAGID    string   `json:"dag_id"`
				Schedule string   `json:"schedule"`
				Paused   bool     `json:"is_paused"`
				Tasks    int      `json:"tasks"`
				File     string   `json:"fileloc"`
				Tags     []string `json:"tags"`
			}
			rows := []row{}
			for _, d := range dags {
				rows = append(rows, row{DAGID: d.ID, Schedule: d.Schedule, Paused: flags[d.ID].Paused, Tasks: len(d.Tasks),
					File: d.File, Tags: append([]string{}, d.Tags...)})
			}
			if output == "json" {
				return writeJSON(e.stdout, map[string]any{"dags": rows, "total_entries": len(rows), "import_errors": errorStrings(errs)})
			}
			tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "DAG_ID\tSCHEDULE\tPAUSED\tTASKS\tFILE")
			for _, r := range rows {
				fmt.Fprintf(tw, "%s\t%s\t%v\t%d\t%s\n", r.DAGID, orDash(r.Schedule), r.Paused, r.Tasks, orDash(r.File))
			}
			tw.Flush()
			for _, ie := range errs {
				fmt.Fprintln(e.stderr, "import error:", ie.Error())
			}
			return nil
		},
	}
	c.Flags().StringVarP(&output, "output", "o", "table", "output format: table or json")
	return c
}

// findDAG returns the DAG with the given id, or nil.
func findDAG(dags []*dag.DAG, id string) *dag.DAG {
	for _, d := range dags {
		if d.ID == id {
			return d
		}
	}
	return nil
}

func errorStrings(errs []*dag.ImportError) []string {
	out := []string{}
	for _, e := range errs {
		out = append(out, e.Error())
	}
	return out
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func (e *env) dagsValidateCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "validate [FILE...]",
		Short: "Validate DAG files (default: the whole DAGs folder) as the daemon does; exit 1 and print every error if any is invalid",
		Long: "Validates the DAGs folder, or the files given, against poolflow.yaml and the pools kept in the store " +
			"(pools set, the API): the validation the daemon, the API and the UI use, so a folder and its files " +
			"get the same answer. Problems of poolflow.yaml itself (a rule naming a missing pool) fail it too.",
		RunE: func(cmd *cobra.Command, files []string) error {
			ctx := cmd.Context()
			cfg, err := e.settings()
			if err != nil {
				return err
			}
			st, err := e.openRead(ctx, cfg)
			if err != nil {
				return err
			}
			if st != nil {
				defer st.Close()
			}
			v, _, err := e.validation(ctx, cfg, st, files)
			if err != nil {
				return err
			}
			for _, ie := range v.Errors {
				fmt.Fprintln(e.stderr, ie.Error())
			}
			n := len(v.Errors)
			if v.Config != nil {
				for _, line := range strings.Split(v.Config.Error(), "\n") {
					fmt.Fprintln(e.stderr, line)
					n++
				}
			}
			if n > 0 {
				return &ExitError{Code: ExitFailed, Err: fmt.Errorf("%d error(s)", n)}
			}
			fmt.Fprintf(e.stdout, "%d DAG(s) valid\n", len(v.DAGs))
			return nil
		},
	}
}

func (e *env) pauseCmd(name string, paused bool) *cobra.Command {
	return &cobra.Command{
		Use:   name + " DAG_ID",
		Short: strings.ToUpper(name[:1]) + name[1:] + " a DAG (pause stops new scheduled runs; waiting tasks stay waiting)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			cfg, st, _, err := e.open(ctx)
			if err != nil {
				return err
			}
			defer st.Close()
			if err := e.authorizeDAG(ctx, st, vocab.PermPause, args[0]); err != nil {
				return err
			}
			ev := e.event(vocab.ActionUnpause)
			if paused {
				ev.Action = vocab.ActionPause
			}
			ev.DAGID = args[0]
			err = st.WithTx(ctx, func(tx store.Tx) error {
				now := time.Now().UTC()
				err := tx.SetPaused(args[0], paused, now)
				if errors.Is(err, store.ErrNotFound) {
					// Not seen by a daemon yet: record it if it is a valid DAG.
					dags, _, lerr := e.loadDAGs(ctx, cfg, st)
					if lerr != nil {
						return lerr
					}
					d := findDAG(dags, args[0])
					if d == nil {
						return refusalf(store.ErrNotFound, "dag %s not found", args[0])
					}
					if err := tx.UpsertDAG(d.ID, d.File, d.Schedule, now); err != nil {
						return err
					}
					err = tx.SetPaused(d.ID, paused, now)
				}
				if err != nil {
					return err
				}
				return tx.InsertEvent(&ev)
			})
			if err != nil {
				return refused(ctx, st, ev, err)
			}
			fmt.Fprintf(e.stdout, "dag %s is %sd\n", args[0], name)
			return nil
		},
	}
}

func (e *env) dagsTriggerCmd() *cobra.Command {
	var confJSON, runID string
	var noQueue bool
	c := &cobra.Command{
		Use:   "trigger DAG_ID",
		Short: "Create a manual run; a running daemon picks it up within 100 ms",
		Long: "Creates a manual run of a DAG that is valid (the validation of dags validate). With --no-queue it " +
			"waits for a daemon to take the run and says whether it started or was refused; a refused start " +
			"exits 1 and never reports the run as created.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			conf, err := parseConf(confJSON)
			if err != nil {
				return &ExitError{Code: ExitUsage, Err: err}
			}
			if runID != "" {
				if err := executor.CheckRunID(runID); err != nil {
					return &ExitError{Code: ExitUsage, Err: fmt.Errorf("--run-id: %w", err)}
				}
			}
			cfg, st, _, err := e.open(ctx)
			if err != nil {
				return err
			}
			defer st.Close()
			if err := e.authorizeDAG(ctx, st, vocab.PermTrigger, args[0]); err != nil {
				return err
			}
			v, _, err := e.validation(ctx, cfg, st, nil)
			if err != nil {
				return err
			}
			d, err := v.ValidDAG(args[0])
			if err != nil {
				return fmt.Errorf("%w (see poolflow dags validate)", err)
			}
			run, err := createManualRun(ctx, st, d, runID, conf, noQueue)
			if err != nil {
				return err
			}
			if noQueue {
				return e.awaitNoQueue(ctx, st, run)
			}
			fmt.Fprintf(e.stdout, "created run %s of dag %s\n", run.RunID, run.DAGID)
			return nil
		},
	}
	c.Flags().StringVar(&confJSON, "conf", "", "JSON object merged over the DAG's params (at most 128 KiB)")
	c.Flags().StringVar(&runID, "run-id", "", "run id (default manual__<time>)")
	c.Flags().BoolVar(&noQueue, "no-queue", false, "refuse the start unless its ready tasks are admitted at once")
	return c
}

func parseConf(s string) (map[string]any, error) {
	if s == "" {
		return nil, nil
	}
	if err := executor.CheckConf(len(s)); err != nil {
		return nil, fmt.Errorf("--%w", err)
	}
	var conf map[string]any
	if err := json.Unmarshal([]byte(s), &conf); err != nil {
		return nil, fmt.Errorf("--conf: not a JSON object: %v", err)
	}
	return conf, nil
}

// createManualRun inserts a queued manual run owned by no daemon; the next daemon pass takes it.
func createManualRun(ctx context.Context, st store.Store, d *dag.DAG, runID string, conf map[string]any, noQueue bool) (store.Run, error) {
	now := time.Now().UTC()
	if runID == "" {
		runID = "manual__" + now.Format("2006-01-02T15:04:05.000Z07:00")
	}
	confJSON := "{}"
	if len(conf) > 0 {
		b, _ := json.Marshal(conf)
		confJSON = string(b)
	}
	r := store.Run{DAGID: d.ID, RunID: runID, RunType: vocab.RunManual, LogicalDate: now, State: vocab.RunQueued, Conf: confJSON, QueuedAt: now,
		NoQueue: noQueue}
	err := st.WithTx(ctx, func(tx store.Tx) error {
		if err := tx.UpsertDAG(d.ID, d.File, d.Schedule, now); err != nil {
			return err
		}
		// The version it is created with (§12), when a daemon recorded this text already; if
		// not, the daemon that takes the run gives it the version it loaded.
		var err error
		if r.Version, err = tx.VersionOf(d.ID, d.SourceHash()); err != nil {
			return err
		}
		if err := tx.InsertRun(&r); err != nil {
			if errors.Is(err, store.ErrConflict) {
				return fmt.Errorf("dag run %s of dag %s already exists", runID, d.ID)
			}
			return err
		}
		tis := make([]*store.TaskInstance, len(d.Tasks))
		for i, t := range d.Tasks {
			tis[i] = &store.TaskInstance{Run: r.PK, TaskID: t.ID, State: vocab.TaskNone}
		}
		return tx.PutTIs(tis) // a few statements for a 10,000-task DAG, not 10,000
	})
	return r, err
}

// awaitNoQueue waits for a daemon to take a --no-queue run and reports whether its ready tasks
// were admitted at once or the start was refused. Until a daemon has decided, the run is neither
// started nor refused, and the command says so rather than "created".
func (e *env) awaitNoQueue(ctx context.Context, st store.Store, run store.Run) error {
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		r, err := st.GetRun(ctx, run.DAGID, run.RunID)
		if err != nil {
			return err
		}
		switch {
		case r.ReasonCode == vocab.ReasonRejected:
			return &ExitError{Code: ExitFailed, Err: fmt.Errorf("refused: run %s of dag %s was not started: %s", r.RunID, r.DAGID,
				r.Reason)}
		case r.State == vocab.RunFailed:
			return &ExitError{Code: ExitFailed, Err: fmt.Errorf("refused: run %s of dag %s failed: %s", r.RunID, r.DAGID,
				r.ReasonCode.Say(r.Reason))}
		case r.State != vocab.RunQueued:
			fmt.Fprintf(e.stdout, "started run %s of dag %s: its ready tasks were admitted\n", r.RunID, r.DAGID)
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	fmt.Fprintf(e.stderr, "run %s of dag %s is queued, but no daemon has taken it yet; it will be refused then unless its tasks can start at once\n",
		run.RunID, run.DAGID)
	return nil
}
