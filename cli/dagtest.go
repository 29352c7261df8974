package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"time"

	"github.com/spf13/cobra"

	"github.com/poolflow/poolflow/dag"
	"github.com/poolflow/poolflow/executor"
	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/vocab"
)

func (e *env) dagsTestCmd() *cobra.Command {
	var confJSON, output string
	c := &cobra.Command{
		Use:   "test DAG_ID",
		Short: "Run one DAG run in the foreground against the real store and executor until it ends",
		Long: "Runs one DAG run in the foreground, ignoring pause and max_active_runs. Exit 0 when the run " +
			"succeeds, 1 when it fails, 2 for usage errors or an invalid DAG. With -o json, stdout holds exactly " +
			"one JSON object; logs and progress go to stderr.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			if output != "json" && output != "table" {
				return &ExitError{Code: ExitUsage, Err: fmt.Errorf("-o: want json or table, got %q", output)}
			}
			conf, err := parseConf(confJSON)
			if err != nil {
				return &ExitError{Code: ExitUsage, Err: err}
			}
			cfg, err := e.settings()
			if err != nil {
				return &ExitError{Code: ExitUsage, Err: err}
			}
			st, stateDir, err := e.openStore(ctx, cfg)
			if err != nil {
				return err
			}
			defer st.Close()
			host, _ := os.Hostname()
			dm, err := executor.New(executor.Config{
				Store: st, Settings: cfg, DAGsDir: e.dags(), GoDAGs: e.goDAGs, StateDir: stateDir,
				Logger: e.logger(), DaemonID: fmt.Sprintf("test:%s:%d", host, os.Getpid()),
				Test: &executor.TestRun{DAGID: args[0], Conf: conf},
			})
			if err != nil {
				return err
			}
			// The daemon parses the DAGs once; the same load serves this check and its run.
			dags, errs := dm.DAGs()
			d := findDAG(dags, args[0])
			if d == nil {
				for _, ie := range errs {
					if ie.DAGID == args[0] || ie.DAGID == "" {
						fmt.Fprintln(e.stderr, ie.Error())
					}
				}
				return &ExitError{Code: ExitUsage, Err: fmt.Errorf("dag %s not found or invalid", args[0])}
			}
			if err := dm.StartWait(ctx, startRetry, nil); err != nil {
				return err
			}
			select {
			case <-dm.Done():
			case <-ctx.Done():
				_ = dm.Stop()
				return ctx.Err()
			}
			if err := dm.Stop(); err != nil {
				return err
			}
			run, ok := dm.TestRunResult()
			if !ok {
				return fmt.Errorf("dag test of %s did not finish", d.ID)
			}
			// The daemon's memory is garbage now; the report of a large run is not small
			// (about 1 KB per task), so it starts from a collected heap.
			debug.FreeOSMemory()
			report, err := testReport(ctx, st, d, run)
			if err != nil {
				return err
			}
			if output == "json" {
				if err := report.writeJSON(e.stdout); err != nil {
					return err
				}
			} else {
				printReport(e, report)
			}
			if run.State != vocab.RunSuccess {
				return &ExitError{Code: ExitFailed, Err: fmt.Errorf("run %s of dag %s %s", run.RunID, d.ID, run.State)}
			}
			return nil
		},
	}
	c.Flags().StringVar(&confJSON, "conf", "", "JSON object merged over the DAG's params")
	c.Flags().StringVarP(&output, "output", "o", "table", "output format: table or json")
	return c
}

// TestReport is the JSON of `dags test -o json`.
type TestReport struct {
	DAGID string         `json:"dag_id"`
	RunID string         `json:"run_id"`
	State vocab.RunState `json:"state"`
	Tasks []TaskReport   `json:"tasks"`
}

// TaskReport is one task of a TestReport.
type TaskReport struct {
	TaskID       string          `json:"task_id"`
	State        vocab.TaskState `json:"state"`
	TryNumber    int             `json:"try_number"`
	StartDate    *string         `json:"start_date"`
	EndDate      *string         `json:"end_date"`
	Requirements map[string]int  `json:"requirements"`
	Reason       *string         `json:"reason"`
	// MapIndex is a mapped instance's index (§14); its row follows its task's.
	MapIndex *int `json:"map_index,omitempty"`
}

// writeJSON writes the report as writeJSON would, a task at a time: the JSON of a 100,000-task
// run is 26 MB, and encoding it whole held it and its copies at once.
func (r *TestReport) writeJSON(w io.Writer) error {
	bw := bufio.NewWriter(w)
	head, err := json.MarshalIndent(struct {
		DAGID string         `json:"dag_id"`
		RunID string         `json:"run_id"`
		State vocab.RunState `json:"state"`
	}{r.DAGID, r.RunID, r.State}, "", "  ")
	if err != nil {
		return err
	}
	bw.Write(head[:len(head)-2]) // without "\n}"
	if len(r.Tasks) == 0 {
		bw.WriteString(",\n  \"tasks\": []\n}\n")
		return bw.Flush()
	}
	bw.WriteString(",\n  \"tasks\": [")
	for i := range r.Tasks {
		b, err := json.MarshalIndent(&r.Tasks[i], "    ", "  ")
		if err != nil {
			return err
		}
		if i > 0 {
			bw.WriteByte(',')
		}
		bw.WriteString("\n    ")
		bw.Write(b)
	}
	bw.WriteString("\n  ]\n}\n")
	return bw.Flush()
}

// FormatTime is the CLI's and API's time format: RFC 3339 in UTC with microseconds.
func FormatTime(t time.Time) *string {
	if t.IsZero() {
		return nil
	}
	s := t.UTC().Format("2006-01-02T15:04:05.000000Z07:00")
	return &s
}

func testReport(ctx context.Context, st store.Store, d *dag.DAG, run store.Run) (*TestReport, error) {
	tis, err := st.ListTaskInstances(ctx, run.PK)
	if err != nil {
		return nil, err
	}
	byID := map[string]store.TaskInstance{}
	for _, ti := range tis {
		byID[ti.TaskID] = ti
	}
	latest, err := st.LatestEntries(ctx, run.PK)
	if err != nil {
		return nil, err
	}
	rep := &TestReport{DAGID: d.ID, RunID: run.RunID, State: run.State, Tasks: []TaskReport{}}
	for _, t := range d.Tasks {
		rep.Tasks = append(rep.Tasks, taskReport(t, t.ID, byID[t.ID], latest))
		if !t.Mapped() {
			continue
		}
		for i := 0; ; i++ {
			id := dag.MapID(t.ID, i)
			ti, ok := byID[id]
			if !ok {
				break
			}
			tr := taskReport(t, id, ti, latest)
			tr.MapIndex = &i
			rep.Tasks = append(rep.Tasks, tr)
		}
	}
	return rep, nil
}

// taskReport is the report of task instance id of task t.
func taskReport(t *dag.Task, id string, ti store.TaskInstance, latest map[string]store.Entry) TaskReport {
	tr := TaskReport{TaskID: id, State: ti.State, TryNumber: ti.TryNumber, StartDate: FormatTime(ti.StartDate),
		EndDate: FormatTime(ti.EndDate), Requirements: map[string]int{}}
	entry, queued := latest[id]
	switch {
	case queued:
		for _, n := range entry.Needs {
			if !n.Implicit {
				tr.Requirements[n.Pool] = n.Slots
			}
		}
	case t.Kind != dag.KindApproval && !(t.Mapped() && id == t.ID):
		// (A mapped task's own task instance takes no slot: its instances do, §14.)
		for p, s := range declared(t) {
			tr.Requirements[p] = s
		}
	}
	if reason := taskReason(ti, entry); reason != "" {
		tr.Reason = &reason
	}
	return tr
}

func declared(t *dag.Task) map[string]int {
	if len(t.PoolRequirements) > 0 {
		return t.PoolRequirements
	}
	return map[string]int{"default": 1}
}

// taskReason is null (empty) unless the task failed or never started.
func taskReason(ti store.TaskInstance, e store.Entry) string {
	failed := ti.State == vocab.TaskFailed || ti.State == vocab.TaskUpstreamFailed
	if !failed && !ti.StartDate.IsZero() {
		return ""
	}
	if ti.State == vocab.TaskSuccess && ti.StartDate.IsZero() {
		return ""
	}
	switch {
	case ti.Reason != "":
		return ti.ReasonCode.Say(ti.Reason)
	case e.Reason != "":
		return e.ReasonCode.Say(e.Reason)
	case ti.StartDate.IsZero():
		return "never started (state " + string(ti.State) + ")"
	}
	return ""
}

func printReport(e *env, r *TestReport) {
	fmt.Fprintf(e.stdout, "dag %s run %s: %s\n", r.DAGID, r.RunID, r.State)
	for _, t := range r.Tasks {
		line := fmt.Sprintf("  %-24s %-16s try %d", t.TaskID, t.State, t.TryNumber)
		if t.Reason != nil {
			line += "  " + *t.Reason
		}
		fmt.Fprintln(e.stdout, line)
	}
}
