package executor

import (
	"context"
	"strings"
	"testing"

	"github.com/poolflow/poolflow/vocab"
)

// TestTemplates: command items, env values, params defaults and pool requirements evaluate
// over the run and the upstream outputs when the task is queued; a command item stays one argv
// element; an evaluation error fails that try naming the expression, a pool that does not
// exist fails it naming the pool, and the rest of the run goes on (§14).
func TestTemplates(t *testing.T) {
	t.Parallel()
	b := setup(t, "pools:\n  db_2: 1\n", map[string]string{"tmpl.yaml": `
params:
  region: eu
  day: "${{ format(add(truncate_day(logical_date), '1d'), '2006-01-02') }}"
tasks:
  - id: extract
    bash: |
      echo '{"files": ["a b.csv", "c;rm -rf x.csv"], "shard": 2}' > "$POOLFLOW_OUTPUT"
  - id: load
    depends_on: [extract]
    command: ["printf", "<%s>", "${{ tasks.extract.output.files[0] }}", "${{ params.region }}-${{ try_number }}", "${{ dag_id }}:${{ len(run_id) > 0 }}"]
    pool_requirements: {"db_${{ tasks.extract.output.shard }}": 1}
  - id: env
    depends_on: [extract]
    command: ["sh", "-c", 'printf "<%s>" "$FILE" "$DAY"']
    env: {FILE: "${{ tasks.extract.output.files[1] }}", DAY: "${{ params.day }}"}
  - id: bad
    depends_on: [extract]
    command: ["echo", "${{ tasks.extract.output.files[5] }}"]
  - id: nopool
    depends_on: [extract]
    command: ["true"]
    pool_requirements: {"db_${{ 7 + 2 }}": 1}
`})
	run := b.testRun(t, "tmpl", nil)
	tis := b.tis(t, run.PK)
	for _, id := range []string{"extract", "load", "env"} {
		if tis[id].State != vocab.TaskSuccess {
			t.Fatalf("%s: %s %q", id, tis[id].State, tis[id].Reason)
		}
	}
	if log := readLog(t, b, "tmpl", run.RunID, "load", 1); log != "<a b.csv><eu-1><tmpl:true>" {
		t.Errorf("load's argv: %q", log)
	}
	day := run.LogicalDate.UTC().AddDate(0, 0, 1).Format("2006-01-02")
	if log := readLog(t, b, "tmpl", run.RunID, "env", 1); log != "<c;rm -rf x.csv><"+day+">" {
		t.Errorf("env: %q, want the day %s", log, day)
	}
	e, err := b.st.LatestEntry(context.Background(), run.PK, "load")
	if err != nil {
		t.Fatal(err)
	}
	if !hasPool(e.Needs, "db_2") {
		t.Errorf("load's requirements %+v lack db_2", e.Needs)
	}
	for id, want := range map[string]string{
		"bad":    "template command[1]: ${{ tasks.extract.output.files[5] }}: index out of range",
		"nopool": `pool_requirements: pool "db_9" does not exist (1 slots asked)`,
	} {
		if ti := tis[id]; ti.State != vocab.TaskFailed || !strings.Contains(ti.Reason, want) {
			t.Errorf("%s: %s %q, want failed with %q", id, ti.State, ti.Reason, want)
		}
	}
}
