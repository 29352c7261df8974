package executor

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/poolflow/poolflow/dag"
	"github.com/poolflow/poolflow/vocab"
)

// TestOutputs: an attempt publishes the JSON object it wrote to POOLFLOW_OUTPUT (a Go task: set
// on its TaskContext) as its task instance's output; a file over 64 KiB, one that is not an
// object or is truncated fails the attempt naming why; a failed try's output is not published
// (§14).
func TestOutputs(t *testing.T) {
	t.Parallel()
	d := dag.New("outs")
	write := func(id, script string) { d.Bash(id, script) }
	write("object", `printf '{"files": ["a", "b"], "n": 2}\n' > "$POOLFLOW_OUTPUT"`)
	write("none", `true`)
	write("list", `echo '[1, 2]' > "$POOLFLOW_OUTPUT"`)
	write("truncated", `printf '{"files": ["a", ' > "$POOLFLOW_OUTPUT"`)
	write("trailing", `printf '{"a": 1} {"b": 2}' > "$POOLFLOW_OUTPUT"`)
	write("huge", `head -c 70000 /dev/zero | tr '\0' x | sed 's/.*/{"x": "&"}/' > "$POOLFLOW_OUTPUT"`)
	write("fails", `echo '{"ok": false}' > "$POOLFLOW_OUTPUT"; exit 3`)
	d.Go("gomap", func(_ context.Context, ti *dag.TaskContext) error {
		ti.Output = map[string]any{"rows": 42}
		return nil
	})
	d.Go("gostruct", func(_ context.Context, ti *dag.TaskContext) error {
		ti.Output = struct {
			Shard string `json:"shard"`
		}{"s1"}
		return nil
	})
	d.Go("golist", func(_ context.Context, ti *dag.TaskContext) error {
		ti.Output = []int{1}
		return nil
	})
	d.Go("goerr", func(_ context.Context, ti *dag.TaskContext) error {
		ti.Output = map[string]any{"half": true}
		return errors.New("no rows")
	})
	b := setup(t, "", nil)
	run := b.testRun(t, "outs", func(c *Config) { c.GoDAGs = []*dag.DAG{d} })
	tis := b.tis(t, run.PK)
	for _, tc := range []struct {
		task   string
		state  vocab.TaskState
		output string
		reason string
	}{
		{"object", vocab.TaskSuccess, `{"files":["a","b"],"n":2}`, ""},
		{"none", vocab.TaskSuccess, "", ""},
		{"list", vocab.TaskFailed, "", "output is not a JSON object: it is a list"},
		{"truncated", vocab.TaskFailed, "", "output is not a JSON object: truncated after 16 bytes"},
		{"trailing", vocab.TaskFailed, "", "output is not a JSON object: more follows the object"},
		{"huge", vocab.TaskFailed, "", "output is 70009 bytes, over the limit of 65536 (64 KiB)"},
		{"fails", vocab.TaskFailed, "", "exit status 3"},
		{"gomap", vocab.TaskSuccess, `{"rows":42}`, ""},
		{"gostruct", vocab.TaskSuccess, `{"shard":"s1"}`, ""},
		{"golist", vocab.TaskFailed, "", "output is not a JSON object: it is a list"},
		{"goerr", vocab.TaskFailed, "", "no rows"},
	} {
		ti := tis[tc.task]
		if ti.State != tc.state || ti.Output != tc.output || ti.Reason != tc.reason {
			t.Errorf("%s: state %s output %q reason %q; want %s %q %q", tc.task, ti.State, ti.Output, ti.Reason,
				tc.state, tc.output, tc.reason)
		}
		as, err := b.st.ListAttempts(context.Background(), run.PK, tc.task)
		if err != nil || len(as) != 1 || as[0].Output != tc.output {
			t.Errorf("%s: attempts %+v %v", tc.task, as, err)
		}
		if tc.reason != "" && strings.HasPrefix(tc.reason, "output") {
			if log := readLog(t, b, "outs", run.RunID, tc.task, 1); !strings.Contains(log, tc.reason) {
				t.Errorf("%s: log lacks the reason: %q", tc.task, log)
			}
		}
	}
}
