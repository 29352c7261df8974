package cli

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/poolflow/poolflow/explain"
	"github.com/poolflow/poolflow/pools"
	"github.com/poolflow/poolflow/server"
	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/vocab"
)

func (e *env) tasksCmd() *cobra.Command {
	c := &cobra.Command{Use: "tasks", Short: "Explain, clear, mark, force-run, fail, approve or reject task instances, and write their notes"}
	var force bool
	runCmd := e.commandCmd("run", vocab.CommandForce, "Force-start a waiting task: it jumps the line but must still fit (needs --force)")
	runCmd.Flags().BoolVar(&force, "force", false, "move the entry to the front of the queue")
	pre := runCmd.PreRunE
	runCmd.PreRunE = func(cmd *cobra.Command, args []string) error {
		if !force {
			return &ExitError{Code: ExitUsage, Err: errors.New("tasks run needs --force (a task runs when admitted)")}
		}
		if pre != nil {
			return pre(cmd, args)
		}
		return nil
	}
	c.AddCommand(e.explainCmd(), runCmd, e.tasksClearCmd(), e.tasksMarkCmd(), e.tasksNoteCmd(),
		e.commandCmd("fail", vocab.CommandFail, "Mark a task failed: no further retry, its queued entry retired (tasks mark --state failed)"),
		e.commandCmd("cancel", vocab.CommandCancel, "Cancel a waiting task's queue entry (a failed attempt that follows the retry policy)"),
		e.commandCmd("approve", vocab.CommandApprove, "Approve an approval gate"),
		e.commandCmd("reject", vocab.CommandReject, "Reject an approval gate (it fails with no retry)"))
	return c
}

// commandCmd sends a command to the daemon that owns the run, through the store, and waits for
// its outcome.
func (e *env) commandCmd(use string, kind vocab.CommandKind, short string) *cobra.Command {
	var note string
	var wait time.Duration
	c := &cobra.Command{
		Use:   use + " DAG_ID RUN_ID TASK_ID",
		Short: short,
		Args:  cobra.ExactArgs(3),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			_, st, _, err := e.open(ctx)
			if err != nil {
				return err
			}
			defer st.Close()
			perm := vocab.PermCancel
			if kind == vocab.CommandApprove || kind == vocab.CommandReject {
				perm = vocab.PermApprove
			}
			if err := e.authorizeDAG(ctx, st, perm, args[0]); err != nil {
				return err
			}
			c := store.Command{Kind: kind, TaskID: args[2], Who: e.actor(), Note: note}
			run, err := st.GetRun(ctx, args[0], args[1])
			if err != nil {
				return refusedCommand(ctx, st, args[0], args[1], c, fmt.Errorf("run %s of dag %s: %w", args[1], args[0], err))
			}
			tis, err := st.ListTaskInstances(ctx, run.PK)
			if err != nil {
				return err
			}
			if !slices.ContainsFunc(tis, func(ti store.TaskInstance) bool { return ti.TaskID == args[2] }) {
				return refusedCommand(ctx, st, args[0], args[1], c, fmt.Errorf("task %s: %w in run %s", args[2], store.ErrNotFound, args[1]))
			}
			c.Run = run.PK
			applied, target, err := sendCommand(ctx, st, run, &c, wait)
			switch {
			case err != nil:
				return fmt.Errorf("%s refused: %w", kind, err)
			case !applied:
				fmt.Fprintf(e.stdout, "%s of %s.%s queued; %s applies it when it passes\n", kind, args[0], args[2], target)
			default:
				fmt.Fprintf(e.stdout, "%s of %s.%s in run %s applied\n", kind, args[0], args[2], args[1])
			}
			return nil
		},
	}
	c.Flags().StringVar(&note, "note", "", "a note recorded with the decision")
	c.Flags().DurationVar(&wait, "wait", 5*time.Second, "how long to wait for the daemon to apply it")
	return c
}

// awaitCommand polls the store until the daemon handled the command or wait passed. Another
// process is the one acting here, and the store is the only thing both share.
func awaitCommand(ctx context.Context, st store.Store, id int64, wait time.Duration) (bool, string, error) {
	deadline := time.Now().Add(wait)
	for {
		done, refused, err := st.CommandOutcome(ctx, id)
		if err != nil || done || time.Now().After(deadline) {
			return done, refused, err
		}
		select {
		case <-ctx.Done():
			return false, "", ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func (e *env) explainCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "explain DAG_ID RUN_ID TASK_ID",
		Short: "Say in words what a task instance is doing and why it waits",
		Args:  cobra.ExactArgs(3),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			cfg, err := e.settings()
			if err != nil {
				return err
			}
			st, err := e.openRead(ctx, cfg)
			if err != nil {
				return err
			}
			if st == nil {
				return fmt.Errorf("run %s of dag %s: %w (no database under %s yet)", args[1], args[0], store.ErrNotFound, e.state(cfg))
			}
			defer st.Close()
			text, err := Explain(ctx, st, args[0], args[1], args[2])
			if err != nil {
				return err
			}
			fmt.Fprint(e.stdout, text)
			return nil
		},
	}
}

// Explain describes a task instance: its state, try, requirements and limits, and why it waits.
func Explain(ctx context.Context, st store.Store, dagID, runID, taskID string) (string, error) {
	run, err := st.GetRun(ctx, dagID, runID)
	if err != nil {
		return "", fmt.Errorf("run %s of dag %s: %w", runID, dagID, err)
	}
	tis, err := st.ListTaskInstances(ctx, run.PK)
	if err != nil {
		return "", err
	}
	var ti *store.TaskInstance
	for i := range tis {
		if tis[i].TaskID == taskID {
			ti = &tis[i]
		}
	}
	if ti == nil {
		return "", fmt.Errorf("task %s: %w in run %s", taskID, store.ErrNotFound, runID)
	}
	var b strings.Builder
	entry, err := st.LatestEntry(ctx, run.PK, taskID)
	var ep *store.Entry
	if err == nil {
		ep = &entry
	}
	fmt.Fprintf(&b, "%s.%s in run %s: %s (try %d)\n", dagID, taskID, runID, ti.State, explain.TryNumber(*ti, ep))
	if err == nil {
		if err := explain.Fill(ctx, st, time.Now().UTC(), &entry); err != nil {
			return "", err
		}
		var reqs, limits []string
		for _, n := range entry.Needs {
			if n.Implicit {
				limits = append(limits, n.Pool)
			} else {
				reqs = append(reqs, fmt.Sprintf("%s=%d", n.Pool, n.Slots))
			}
		}
		sort.Strings(reqs)
		fmt.Fprintf(&b, "queue entry %d (%s), priority %d, due %s", entry.ID, entry.State, entry.Priority,
			entry.Due.Format(time.RFC3339))
		if !entry.Deadline.IsZero() {
			fmt.Fprintf(&b, ", deadline %s", entry.Deadline.Format(time.RFC3339))
		}
		fmt.Fprintf(&b, "\nrequirements: %s\nlimits: %s\n", orDash(strings.Join(reqs, ", ")), orDash(strings.Join(limits, ", ")))
		if entry.Rule != "" {
			fmt.Fprintf(&b, "pool assigned by rule %s\n", entry.Rule)
		}
		if entry.RuleSkipped != "" {
			fmt.Fprintf(&b, "%s\n", entry.RuleSkipped)
		}
	}
	// Why it waits, in the words of the API and the UI (one function says it for all three).
	w, waits := pools.WhyWaiting(server.TaskWait(run, *ti, ep))
	switch {
	case waits:
		fmt.Fprintln(&b, w.Text)
	case ti.State == vocab.TaskRunning:
		fmt.Fprintf(&b, "running since %s\n", fmtTime(ti.StartDate))
	case ti.Reason != "":
		fmt.Fprintln(&b, ti.ReasonCode.Say(ti.Reason))
	}
	return b.String(), nil
}

func fmtTime(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}
