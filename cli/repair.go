package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/poolflow/poolflow/config"
	"github.com/poolflow/poolflow/dag"
	"github.com/poolflow/poolflow/explain"
	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/vocab"
)

// Repairing runs from the command line (§10), with Airflow's names: tasks clear, tasks mark
// (tasks fail is its shorthand for --state failed), tasks note, dags mark-run (Airflow has no
// CLI verb for a run's state; mark-run is the UI's "mark run" beside delete-run), dags
// delete-run. Each is a command any live daemon applies (sendCommand), but notes, which are
// written here with their event.

// repairTarget is the run a repair names, read from the store, with the DAG it runs under now
// and the configuration in force for a preview.
type repairTarget struct {
	st  store.Store
	run store.Run
	tis []store.TaskInstance
	dag *dag.DAG          // nil when the DAG is not valid now
	eff *config.Effective // the rules and max_running, for a preview
}

// target reads run runID of dagID and its DAG as the folder holds it now. A run that is not
// there is an error naming it (and an event of kind, unless a dry run).
func (e *env) target(ctx context.Context, st store.Store, cfg *config.Config, dagID, runID string) (*repairTarget, error) {
	run, err := st.GetRun(ctx, dagID, runID)
	if err != nil {
		return nil, fmt.Errorf("run %s of dag %s: %w", runID, dagID, err)
	}
	tis, err := st.ListTaskInstances(ctx, run.PK)
	if err != nil {
		return nil, err
	}
	v, eff, err := e.validation(ctx, cfg, st, nil)
	if err != nil {
		return nil, err
	}
	t := &repairTarget{st: st, run: run, tis: tis, eff: eff}
	t.dag, _ = v.ValidDAG(dagID)
	return t, nil
}

// loaded is the DAG a clear or a mark runs the tasks under; a conflict when it is not valid.
func (t *repairTarget) loaded() (*dag.DAG, error) {
	if t.dag == nil {
		return nil, refusalf(store.ErrConflict, "dag %s of run %s is not loaded now (removed, or invalid: see poolflow dags validate)",
			t.run.DAGID, t.run.RunID)
	}
	return t.dag, nil
}

func (e *env) tasksClearCmd() *cobra.Command {
	var p store.ClearParams
	var dryRun bool
	var note string
	var wait time.Duration
	c := &cobra.Command{
		Use:   "clear DAG_ID RUN_ID [TASK_ID...]",
		Short: "Clear task instances (every one of the run when none is named) so they run again",
		Long: "Clears task instances of a run, with those downstream or upstream of them, of those only the " +
			"failed ones or only the running ones: each goes back to none and runs again under the DAG's current " +
			"definition, its try numbers going on with a fresh set of retries; a running attempt is stopped first " +
			"and uses up no retry; an ended run is queued again. --dry-run prints, for each task it would clear, " +
			"its state, the try its next attempt runs as, what that attempt needs, and whether it would be " +
			"admitted at once or what it would wait for (the words of tasks explain, with its place in line).",
		Args: cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			if p.OnlyFailed && p.OnlyRunning {
				return &ExitError{Code: ExitUsage, Err: errors.New("--only-failed and --only-running select nothing together")}
			}
			p.TaskIDs = args[2:]
			cfg, err := e.settings()
			if err != nil {
				return err
			}
			if dryRun {
				st, err := e.openRead(ctx, cfg)
				if err != nil {
					return err
				}
				if st == nil {
					return fmt.Errorf("run %s of dag %s: %w (no database under %s yet)", args[1], args[0], store.ErrNotFound, e.state(cfg))
				}
				defer st.Close()
				t, err := e.target(ctx, st, cfg, args[0], args[1])
				if err != nil {
					return err
				}
				d, err := t.loaded()
				if err != nil {
					return err
				}
				rows, err := explain.ClearPreview(ctx, st, t.eff, d, t.run, p, time.Now().UTC())
				if err != nil {
					return err
				}
				printPreview(e.stdout, t.run, rows)
				return nil
			}
			st, _, err := e.openStore(ctx, cfg)
			if err != nil {
				return err
			}
			defer st.Close()
			if err := e.authorizeDAG(ctx, st, vocab.PermRepair, args[0]); err != nil {
				return err
			}
			c := store.Command{Kind: vocab.CommandClear, Who: e.actor(), Params: params(p), Note: note}
			t, err := e.target(ctx, st, cfg, args[0], args[1])
			if err != nil {
				return refusedCommand(ctx, st, args[0], args[1], c, err)
			}
			ids, err := e.clearSelection(t, p)
			if err != nil {
				return refusedCommand(ctx, st, args[0], args[1], c, err)
			}
			return e.repair(ctx, t, &c, wait, note, p.TaskIDs, fmt.Sprintf("cleared %s", taskList(ids)))
		},
	}
	f := c.Flags()
	f.BoolVar(&p.Downstream, "downstream", false, "also the tasks downstream of those named")
	f.BoolVar(&p.Upstream, "upstream", false, "also the tasks upstream of those named")
	f.BoolVar(&p.OnlyFailed, "only-failed", false, "of those, only the failed and upstream_failed ones")
	f.BoolVar(&p.OnlyRunning, "only-running", false, "of those, only the running ones")
	f.BoolVar(&dryRun, "dry-run", false, "print what would be cleared and what each would do; change nothing")
	f.StringVar(&note, "note", "", "a note written on the task instances named (on the run when none is)")
	f.DurationVar(&wait, "wait", 5*time.Second, "how long to wait for the daemon to apply it")
	return c
}

func (e *env) clearSelection(t *repairTarget, p store.ClearParams) ([]string, error) {
	d, err := t.loaded()
	if err != nil {
		return nil, err
	}
	return explain.ClearSelection(d, t.run.RunID, t.tis, p)
}

// taskList is "task instances a, b" ("no task instance" for none).
func taskList(ids []string) string {
	switch len(ids) {
	case 0:
		return "no task instance"
	case 1:
		return "task instance " + ids[0]
	}
	return "task instances " + strings.Join(ids, ", ")
}

// repair sends command c about t's run, writes the note on noteOn (the run when empty) once it
// is applied, and says what happened: done (what it did), or queued for whom.
func (e *env) repair(ctx context.Context, t *repairTarget, c *store.Command, wait time.Duration, note string, noteOn []string, done string) error {
	c.Run = t.run.PK
	applied, target, err := sendCommand(ctx, t.st, t.run, c, wait)
	if err != nil {
		return fmt.Errorf("%s refused: %w", c.Kind, err)
	}
	what := fmt.Sprintf("run %s of dag %s", t.run.RunID, t.run.DAGID)
	if !applied {
		fmt.Fprintf(e.stdout, "%s of %s queued; %s applies it when it passes\n", c.Kind, what, target)
		return nil
	}
	fmt.Fprintf(e.stdout, "%s in %s\n", done, what)
	if note != "" {
		if err := e.writeNotes(ctx, t.st, t.run, noteOn, note); err != nil {
			return err
		}
	}
	return nil
}

// writeNotes writes note on the task instances ids of run (on the run itself when none), each
// with its event, in one transaction.
func (e *env) writeNotes(ctx context.Context, st store.Store, run store.Run, ids []string, note string) error {
	if len(ids) == 0 {
		ids = []string{""}
	}
	return st.WithTx(ctx, func(tx store.Tx) error {
		for _, id := range ids {
			ev := e.event(vocab.ActionNote)
			ev.DAGID, ev.RunID, ev.TaskID, ev.Params = run.DAGID, run.RunID, id, params(map[string]string{"note": note})
			if err := tx.SetNote(run.PK, id, note, ev.Actor, ev.At); err != nil {
				return err
			}
			if err := tx.InsertEvent(&ev); err != nil {
				return err
			}
		}
		return nil
	})
}

// printPreview prints a clear's dry run as a table: task, state now, next try, needs, and
// "admitted at once" or the wait in words with the place in line.
func printPreview(w io.Writer, run store.Run, rows []explain.ClearRow) {
	if len(rows) == 0 {
		fmt.Fprintf(w, "nothing to clear in run %s of dag %s\n", run.RunID, run.DAGID)
		return
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TASK\tSTATE NOW\tNEXT TRY\tNEEDS\tRIGHT AFTER THE CLEAR")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\n", r.TaskID, r.State, r.TryNumber, needsWords(r.Needs), r.Words())
	}
	tw.Flush()
	fmt.Fprintf(w, "dry run: %s of run %s would be cleared; nothing was changed\n", taskList(rowIDs(rows)), run.RunID)
}

func rowIDs(rows []explain.ClearRow) []string {
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = r.TaskID
	}
	return out
}

// needsWords is an attempt's named requirements, "db=1, wh=2" ("-" for none).
func needsWords(needs []store.Requirement) string {
	var out []string
	for _, n := range needs {
		if !n.Implicit {
			out = append(out, fmt.Sprintf("%s=%d", n.Pool, n.Slots))
		}
	}
	sort.Strings(out)
	return orDash(strings.Join(out, ", "))
}

// stateFlag is --state of tasks mark and dags mark-run: the state to mark with (§10.2). The
// global --state names the state folder (§7.1), and a command's own flag of the same name hides
// it; so a value that is a path (it has a /) or an existing folder is taken for the state
// folder, as the global flag would take it, and any other value is the state.
type stateFlag struct{ mark, dir *string }

func (f stateFlag) String() string {
	if f.mark == nil {
		return ""
	}
	return *f.mark
}

func (f stateFlag) Set(v string) error {
	if fi, err := os.Stat(v); strings.ContainsRune(v, '/') || (err == nil && fi.IsDir()) {
		*f.dir = v
		return nil
	}
	*f.mark = v
	return nil
}

func (stateFlag) Type() string { return "state" }

var markStates = []vocab.TaskState{vocab.TaskSuccess, vocab.TaskFailed, vocab.TaskSkipped}

func (e *env) tasksMarkCmd() *cobra.Command {
	var p store.MarkParams
	var note string
	var dryRun bool
	var wait time.Duration
	c := &cobra.Command{
		Use:   "mark DAG_ID RUN_ID TASK_ID... --state success|failed|skipped",
		Short: "Mark task instances success, failed or skipped (no further retry); downstream tasks then follow their trigger rules",
		Long: "Marks task instances with a state by a person's word: a waiting entry or a queued retry is retired, " +
			"a running attempt is stopped first and the task takes the state once it ended; the tasks downstream " +
			"then follow their trigger rules (an ended run is queued again for them). tasks fail is the shorthand " +
			"of --state failed.",
		Args: cobra.MinimumNArgs(3),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			if !slices.Contains(markStates, vocab.TaskState(p.State)) {
				return &ExitError{Code: ExitUsage, Err: fmt.Errorf("--state %q: a task is marked success, failed or skipped", p.State)}
			}
			p.TaskIDs = args[2:]
			cfg, err := e.settings()
			if err != nil {
				return err
			}
			st, _, err := e.openStore(ctx, cfg)
			if err != nil {
				return err
			}
			defer st.Close()
			if err := e.authorizeDAG(ctx, st, vocab.PermRepair, args[0]); err != nil {
				return err
			}
			c := store.Command{Kind: vocab.CommandMark, Who: e.actor(), Params: params(p), Note: note}
			fail := func(err error) error {
				if dryRun {
					return err
				}
				return refusedCommand(ctx, st, args[0], args[1], c, err)
			}
			t, err := e.target(ctx, st, cfg, args[0], args[1])
			if err != nil {
				return fail(err)
			}
			d, err := t.loaded()
			if err != nil {
				return fail(err)
			}
			ids, err := explain.MarkSelection(d, t.run.RunID, t.tis, p)
			if err != nil {
				return fail(err)
			}
			if dryRun {
				fmt.Fprintf(e.stdout, "dry run: %s of run %s would be marked %s; nothing was changed\n", taskList(ids),
					t.run.RunID, p.State)
				return nil
			}
			return e.repair(ctx, t, &c, wait, note, p.TaskIDs, fmt.Sprintf("marked %s %s", taskList(ids), p.State))
		},
	}
	f := c.Flags()
	f.Var(stateFlag{&p.State, &e.stateDir}, "state", "success, failed or skipped")
	f.BoolVar(&p.Downstream, "downstream", false, "also the tasks downstream of those named")
	f.BoolVar(&p.Upstream, "upstream", false, "also the tasks upstream of those named")
	f.BoolVar(&dryRun, "dry-run", false, "print what would be marked; change nothing")
	f.StringVar(&note, "note", "", "a note written on the task instances named")
	f.DurationVar(&wait, "wait", 5*time.Second, "how long to wait for the daemon to apply it")
	_ = c.MarkFlagRequired("state")
	return c
}

func (e *env) tasksNoteCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "note DAG_ID RUN_ID [TASK_ID] TEXT",
		Short: "Write the note of a task instance, or of the run when no task is named (\"\" clears it)",
		Args:  cobra.RangeArgs(3, 4),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			_, st, _, err := e.open(ctx)
			if err != nil {
				return err
			}
			defer st.Close()
			if err := e.authorizeDAG(ctx, st, vocab.PermRepair, args[0]); err != nil {
				return err
			}
			var task string
			text := args[len(args)-1]
			if len(args) == 4 {
				task = args[2]
			}
			ev := e.event(vocab.ActionNote)
			ev.DAGID, ev.RunID, ev.TaskID, ev.Params = args[0], args[1], task, params(map[string]string{"note": text})
			run, err := st.GetRun(ctx, args[0], args[1])
			if err != nil {
				return refused(ctx, st, ev, fmt.Errorf("run %s of dag %s: %w", args[1], args[0], err))
			}
			var on []string // the run itself
			if task != "" {
				on = []string{task}
			}
			err = e.writeNotes(ctx, st, run, on, text)
			if errors.Is(err, store.ErrNotFound) {
				return refused(ctx, st, ev, fmt.Errorf("task %s: %w in run %s", task, store.ErrNotFound, run.RunID))
			}
			if err != nil {
				return err
			}
			what := "run " + run.RunID
			if task != "" {
				what = task + " in run " + run.RunID
			}
			fmt.Fprintf(e.stdout, "note of %s of dag %s written\n", what, run.DAGID)
			return nil
		},
	}
}

var runMarkStates = []vocab.RunState{vocab.RunSuccess, vocab.RunFailed, vocab.RunQueued}

func (e *env) markRunCmd() *cobra.Command {
	var p store.MarkParams
	var note string
	var wait time.Duration
	c := &cobra.Command{
		Use:   "mark-run DAG_ID RUN_ID --state success|failed|queued",
		Short: "Mark a whole run: success or failed (its unfinished tasks with it), or queued (clear it)",
		Long: "success marks every unfinished task of the run success; failed marks its running and waiting tasks " +
			"failed and those not yet ready skipped; queued clears the whole run. Running attempts are stopped " +
			"first, and the run ends as asked once nothing of it runs.",
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			if !slices.Contains(runMarkStates, vocab.RunState(p.State)) {
				return &ExitError{Code: ExitUsage, Err: fmt.Errorf("--state %q: a run is marked success, failed or queued", p.State)}
			}
			_, st, _, err := e.open(ctx)
			if err != nil {
				return err
			}
			defer st.Close()
			if err := e.authorizeDAG(ctx, st, vocab.PermRepair, args[0]); err != nil {
				return err
			}
			c := store.Command{Kind: vocab.CommandMark, Who: e.actor(), Params: params(p), Note: note}
			run, err := st.GetRun(ctx, args[0], args[1])
			if err != nil {
				return refusedCommand(ctx, st, args[0], args[1], c, fmt.Errorf("run %s of dag %s: %w", args[1], args[0], err))
			}
			return e.repair(ctx, &repairTarget{st: st, run: run}, &c, wait, note, nil, "marked "+p.State)
		},
	}
	c.Flags().Var(stateFlag{&p.State, &e.stateDir}, "state", "success, failed or queued")
	c.Flags().StringVar(&note, "note", "", "a note written on the run")
	c.Flags().DurationVar(&wait, "wait", 5*time.Second, "how long to wait for the daemon to apply it")
	_ = c.MarkFlagRequired("state")
	return c
}

func (e *env) deleteRunCmd() *cobra.Command {
	var p store.DeleteParams
	var wait time.Duration
	c := &cobra.Command{
		Use:   "delete-run DAG_ID RUN_ID",
		Short: "Delete a run with its task instances, attempts, queue entries and logs (refused while an attempt runs, unless --force)",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			_, st, _, err := e.open(ctx)
			if err != nil {
				return err
			}
			defer st.Close()
			if err := e.authorizeDAG(ctx, st, vocab.PermRepair, args[0]); err != nil {
				return err
			}
			c := store.Command{Kind: vocab.CommandDelete, Who: e.actor(), Params: params(p)}
			run, err := st.GetRun(ctx, args[0], args[1])
			if err != nil {
				return refusedCommand(ctx, st, args[0], args[1], c, fmt.Errorf("run %s of dag %s: %w", args[1], args[0], err))
			}
			c.Run = run.PK
			applied, target, err := sendCommand(ctx, st, run, &c, wait)
			switch {
			case err != nil:
				return fmt.Errorf("delete refused: %w", err)
			case !applied && p.Force:
				fmt.Fprintf(e.stdout, "run %s of dag %s: its attempts are being stopped; %s deletes it once they ended\n",
					run.RunID, run.DAGID, target)
			case !applied:
				fmt.Fprintf(e.stdout, "delete of run %s of dag %s queued; %s applies it when it passes\n", run.RunID, run.DAGID, target)
			default:
				fmt.Fprintf(e.stdout, "run %s of dag %s deleted\n", run.RunID, run.DAGID)
			}
			return nil
		},
	}
	c.Flags().BoolVar(&p.Force, "force", false, "stop the run's running attempts first")
	c.Flags().DurationVar(&wait, "wait", 10*time.Second, "how long to wait for the run to be gone")
	return c
}
