package dag_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/poolflow/poolflow/dag"
	"github.com/poolflow/poolflow/vocab"
)

// pools stands for the daemon's pool configuration.
func pools(name string) (int, bool) {
	capacity, ok := map[string]int{"source_db": 2, "destination_db": 3, "warehouse": 4}[name]
	return capacity, ok
}

// A Go-authored DAG: the same model and validation as YAML.
func ExampleNew() {
	d := dag.New("warehouse_export",
		dag.Schedule("@hourly"),
		dag.MaxActiveRuns(1),
		dag.Tags("warehouse"),
	)
	d.Command("extract", []string{"python3", "extract.py"},
		dag.Pools(map[string]int{"source_db": 1}))
	d.Go("transfer", func(ctx context.Context, ti *dag.TaskContext) error {
		ti.Log("transferring for %s", ti.LogicalDate.Format(time.DateOnly))
		return nil
	},
		dag.After("extract"),
		dag.Pools(map[string]int{"source_db": 1, "destination_db": 2}),
		dag.Retries(2), dag.RetryDelayOpt(30*time.Second), dag.RetryBackoff(10*time.Minute),
		dag.Priority(10))
	d.Bash("publish", "./publish.sh", dag.After("transfer"))

	errs := dag.Validate(d, dag.LoadOptions{Pools: pools})
	fmt.Println("errors:", len(errs))
	weights := dag.PriorityWeights(d)
	for _, t := range d.Tasks {
		fmt.Printf("%s: %s, priority %d, pools %v\n", t.ID, t.Kind, weights[t.ID], t.PoolRequirements)
	}
	// Output:
	// errors: 0
	// extract: command, priority 12, pools map[source_db:1]
	// transfer: go, priority 11, pools map[destination_db:2 source_db:1]
	// publish: bash, priority 1, pools map[]
}

// Validation names the DAG, the task, the field and the value; Go DAGs have no file position.
func ExampleValidate() {
	d := dag.New("nightly")
	d.Bash("a", "true", dag.After("c"))
	d.Bash("b", "true", dag.After("a"))
	d.Bash("c", "true", dag.After("b"), dag.Pools(map[string]int{"warehouse": 8}))
	for _, err := range dag.Validate(d, dag.LoadOptions{Pools: pools}) {
		fmt.Println(err)
	}
	// Output:
	// go:nightly: dag nightly, task c: pool_requirements.warehouse: 8 slots exceed capacity 4
	// go:nightly: dag nightly, task c: depends_on[0]: cycle: a -> b -> c -> a
}

// Parse reports every problem of a file with the line and column of the offending token.
func ExampleParse() {
	src := `
schedule: "@every 2m"
tasks:
  - id: extract
    bash: echo extract
    pool_requirements: {source_db: 1}
  - id: load
    depends_on: [extract, transfrom]
    bash: echo load
    retry_delay: 5 minutes
`
	_, errs := dag.Parse("dags/export.yaml", []byte(src), dag.LoadOptions{Pools: pools})
	for _, err := range errs {
		fmt.Println(err)
	}
	// Output:
	// dags/export.yaml:8:27: dag export, task load: depends_on[1]: unknown task "transfrom"
	// dags/export.yaml:10:18: dag export, task load: retry_delay: invalid duration "5 minutes": use a Go duration like 30s or 1h30m, or integer seconds
}

// A YAML file with a top-level command or bash is a job: a one-task DAG.
func ExampleParse_job() {
	src := `
schedule: "0 2 * * *"
bash: ./export.sh
pool: warehouse
pool_slots: 2
queue_priority: 10
`
	d, errs := dag.Parse("dags/nightly_job.yaml", []byte(src), dag.LoadOptions{Pools: pools})
	t := d.Tasks[0]
	fmt.Println(len(errs), d.IsJob, t.ID, t.Kind, t.PoolRequirements, t.PriorityWeight)
	// Output: 0 true nightly_job bash map[warehouse:2] 10
}

// Trigger decides from the upstream states as Airflow does.
func ExampleTrigger() {
	up := []vocab.TaskState{vocab.TaskSuccess, vocab.TaskRunning}
	fmt.Println(dag.Trigger(dag.AllSuccess, up))
	fmt.Println(dag.Trigger(dag.OneSuccess, up))
	fmt.Println(dag.Trigger(dag.AllSuccess, []vocab.TaskState{vocab.TaskFailed, vocab.TaskRunning}))
	fmt.Println(dag.Trigger(dag.NoneFailedMinOneSuccess, []vocab.TaskState{vocab.TaskSkipped, vocab.TaskSkipped}))
	// Output:
	// none
	// scheduled
	// upstream_failed
	// skipped
}

func ExampleRunEndState() {
	d := dag.New("etl")
	d.Bash("extract", "true")
	d.Bash("cleanup", "true", dag.After("extract"), dag.TriggerRuleOpt(dag.AllDone))
	ended, state := dag.RunEndState(d, map[string]vocab.TaskState{"extract": vocab.TaskFailed, "cleanup": vocab.TaskSuccess})
	// Only leaves decide: the failed extract is not a leaf.
	fmt.Println(ended, state)
	// Output: true success
}

func ExampleRetryDelay() {
	t := &dag.Task{RetryDelay: 30 * time.Second, RetryExponentialBackoff: true, MaxRetryDelay: 2 * time.Minute}
	var delays []time.Duration
	for try := 1; try <= 4; try++ {
		delays = append(delays, dag.RetryDelay(t, try))
	}
	fmt.Println(delays)
	// Output: [30s 1m0s 2m0s 2m0s]
}

func ExampleParseSchedule() {
	for _, s := range []string{"", "@reboot", "*/5 * * * *", "@every 90s", "0 25 * * *"} {
		sched, reboot, err := dag.ParseSchedule(s)
		fmt.Println(sched != nil, reboot, err)
	}
	// Output:
	// false false <nil>
	// false true <nil>
	// true false <nil>
	// true false <nil>
	// false false invalid cron "0 25 * * *": end of range (25) above maximum (23): 25
}

func ExamplePriorityWeights() {
	d := dag.New("diamond")
	d.Bash("a", "true")
	d.Bash("b", "true", dag.After("a"))
	d.Bash("c", "true", dag.After("a"))
	d.Bash("d", "true", dag.After("b", "c"))
	w := dag.PriorityWeights(d)
	for _, id := range slices.Sorted(maps.Keys(w)) {
		fmt.Print(id, "=", w[id], " ")
	}
	fmt.Println()
	// Output: a=4 b=2 c=2 d=1
}
