package dag

import (
	"path/filepath"
	"testing"
)

// TestExampleDAGs loads the example DAGs of the repository's dags folder with the pools of
// poolflow.yaml, as `make run` serves them.
func TestExampleDAGs(t *testing.T) {
	t.Parallel()
	pools := map[string]int{"source_db": 2, "destination_db": 3, "warehouse": 4}
	dags, errs := LoadDir(filepath.Join("..", "dags"), LoadOptions{Pools: func(name string) (int, bool) {
		c, ok := pools[name]
		return c, ok
	}, Notifiers: func(name string) bool { return name == "ops" }})
	for _, e := range errs {
		t.Error(e)
	}
	byID := map[string]*DAG{}
	for _, d := range dags {
		byID[d.ID] = d
	}
	for _, id := range []string{"hello", "warehouse_export", "nightly_job", "host_report", "flaky_report"} {
		if byID[id] == nil {
			t.Errorf("example DAG %s missing", id)
		}
	}
	if d := byID["hello"]; d != nil && (d.Schedule != "" || len(d.Tasks) != 4) {
		t.Errorf("hello: manual diamond, got schedule %q and %d tasks", d.Schedule, len(d.Tasks))
	}
	if d := byID["warehouse_export"]; d != nil {
		if d.Schedule == "" || d.Catchup {
			t.Errorf("warehouse_export: scheduled without catch-up, got %q, %v", d.Schedule, d.Catchup)
		}
		if req := d.Task("transfer").PoolRequirements; req["source_db"] != 1 || req["destination_db"] != 2 {
			t.Errorf("warehouse_export transfer requirements %v", req)
		}
	}
	if d := byID["host_report"]; d != nil && (!d.EveryNode || !d.IsJob || d.Schedule == "") {
		t.Errorf("host_report: a scheduled every_node job, got every_node %v, job %v, schedule %q", d.EveryNode, d.IsJob, d.Schedule)
	}
	if d := byID["flaky_report"]; d != nil && (len(d.OnFailure) != 1 || len(d.Tasks[0].Notifiers().OnRetry) != 1 || d.Schedule != "") {
		t.Errorf("flaky_report: a manual DAG telling ops, got %+v", d)
	}
	if d := byID["nightly_job"]; d != nil {
		task := d.Tasks[0]
		if !d.IsJob || task.PoolRequirements["warehouse"] != 2 || task.PriorityWeight != 10 {
			t.Errorf("nightly_job: job %v, requirements %v, priority %d", d.IsJob, task.PoolRequirements, task.PriorityWeight)
		}
	}
}
