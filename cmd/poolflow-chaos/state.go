package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/poolflow/poolflow/vocab"
)

// The harness reads the store only through poolflow itself: the HTTP API of a live daemon and
// the CLI. Nothing here knows which store driver is behind them.

type runJSON struct {
	DAGID    string         `json:"dag_id"`
	RunID    string         `json:"dag_run_id"`
	RunType  string         `json:"run_type"` // in the API's words (scheduled, backfill, …)
	State    vocab.RunState `json:"state"`
	Reason   *string        `json:"reason"`
	QueuedAt *time.Time     `json:"queued_at"`
	Daemon   *string        `json:"daemon"`
}

// leaderOwned reports whether a run of this type (in the API's words) belongs to whichever
// daemon leads (§9).
func (r runJSON) leaderOwned() bool {
	t, _ := vocab.ParseRunType(r.RunType)
	return t.LeaderOwned()
}

// fired reports whether a run of this type (in the API's words) is a schedule's fire
// (scheduled, catch-up, every_node).
func (r runJSON) fired() bool {
	t, _ := vocab.ParseRunType(r.RunType)
	return t.Fired()
}

// node reports whether the run is an every_node fire, bound to the daemon that fired it.
func (r runJSON) node() bool {
	t, _ := vocab.ParseRunType(r.RunType)
	return t == vocab.RunNode
}

type tiJSON struct {
	TaskID     string          `json:"task_id"`
	State      vocab.TaskState `json:"state"`
	TryNumber  int             `json:"try_number"`
	Reason     *string         `json:"reason"`
	QueueState *string         `json:"queue_state"`
	WaitReason *struct {
		Text string `json:"text"`
	} `json:"wait_reason"`
}

type holderJSON struct {
	QueueID int64  `json:"queueId"`
	Label   string `json:"label"`
	Slots   int    `json:"slots"`
	Daemon  string `json:"daemon"`
}

type waitingJSON struct {
	QueueID int64  `json:"queueId"`
	Label   string `json:"label"`
	DAGID   string `json:"dag_id"`
	RunID   string `json:"dag_run_id"`
	Reason  *struct {
		Text string `json:"text"`
	} `json:"reason"`
}

type boardPool struct {
	Name      string        `json:"name"`
	Capacity  int           `json:"capacity"`
	Occupancy int           `json:"occupancy"`
	Holders   []holderJSON  `json:"holders"`
	Waiting   []waitingJSON `json:"waiting"`
}

func (r *runner) getJSON(addr, path string, out any) error {
	resp, err := r.http.Get("http://" + addr + path)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		var b bytes.Buffer
		_, _ = b.ReadFrom(resp.Body)
		return fmt.Errorf("GET %s: %d %s", path, resp.StatusCode, strings.TrimSpace(b.String()))
	}
	return json.NewDecoder(resp.Body).Decode(out)
}

// runs lists every DAG run of the store (dag_id ~ = all DAGs, as in Airflow), page by page.
func (r *runner) runs(addr string) ([]runJSON, error) {
	var all []runJSON
	for offset := 0; ; {
		var page struct {
			Runs  []runJSON `json:"dag_runs"`
			Total int       `json:"total_entries"`
		}
		if err := r.getJSON(addr, fmt.Sprintf("/api/v1/dags/~/dagRuns?limit=1000&offset=%d", offset), &page); err != nil {
			return nil, err
		}
		all = append(all, page.Runs...)
		offset += len(page.Runs)
		if len(page.Runs) == 0 || offset >= page.Total {
			return all, nil
		}
	}
}

func (r *runner) taskInstances(addr, dagID, runID string) ([]tiJSON, error) {
	var out struct {
		TIs []tiJSON `json:"task_instances"`
	}
	err := r.getJSON(addr, "/api/v1/dags/"+url.PathEscape(dagID)+"/dagRuns/"+url.PathEscape(runID)+"/taskInstances", &out)
	return out.TIs, err
}

// board is GET /pools: every named pool with its holders (claims) and waiting entries.
func (r *runner) board(addr string) ([]boardPool, error) {
	var out struct {
		Pools []boardPool `json:"pools"`
	}
	err := r.getJSON(addr, "/pools", &out)
	return out.Pools, err
}

// occupied is `poolflow pools list -o json`'s occupancy per pool, read by the CLI from the store.
func (r *runner) occupied() (map[string]int, error) {
	out, errOut, err := r.cli(30*time.Second, "pools", "list", "-o", "json")
	if err != nil {
		return nil, fmt.Errorf("pools list: %v: %s", err, strings.TrimSpace(errOut))
	}
	var v struct {
		Pools []struct {
			Name     string `json:"name"`
			Occupied int    `json:"occupied_slots"`
		} `json:"pools"`
	}
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		return nil, err
	}
	m := map[string]int{}
	for _, p := range v.Pools {
		m[p.Name] = p.Occupied
	}
	return m, nil
}

// tagged is one live process that carries this harness run's CHAOS_DIR and an attempt's
// POOLFLOW_ tags (executor/runner.go env), i.e. a process of some attempt.
type tagged struct {
	pid  int
	key  string
	cmd  string
	pgid int
}

// scanTagged finds every live attempt process of this harness run, however it was started:
// a setsid grandchild inherits the environment even when it leaves the process group.
func scanTagged(dir string, skip map[int]bool) []tagged {
	var out []tagged
	envs, _ := filepath.Glob("/proc/[0-9]*/environ")
	mark := []byte("\x00CHAOS_DIR=" + dir + "\x00")
	for _, p := range envs {
		pid, err := strconv.Atoi(filepath.Base(filepath.Dir(p)))
		if err != nil || skip[pid] || pid == os.Getpid() {
			continue
		}
		b, err := os.ReadFile(p)
		if err != nil || len(b) == 0 {
			continue
		}
		env := append(append([]byte{0}, b...), 0)
		if !bytes.Contains(env, mark) || !bytes.Contains(env, []byte("\x00POOLFLOW_RUN_ID=")) {
			continue
		}
		t := tagged{pid: pid}
		for _, kv := range bytes.Split(env, []byte{0}) {
			for _, k := range []string{"POOLFLOW_DAG_ID=", "POOLFLOW_RUN_ID=", "POOLFLOW_TASK_ID=", "POOLFLOW_TRY_NUMBER="} {
				if v, ok := bytes.CutPrefix(kv, []byte(k)); ok {
					t.key += string(v) + "/"
				}
			}
		}
		t.key = strings.TrimSuffix(t.key, "/")
		cmd, _ := os.ReadFile(filepath.Join(filepath.Dir(p), "cmdline"))
		t.cmd = strings.TrimSpace(string(bytes.ReplaceAll(cmd, []byte{0}, []byte{' '})))
		t.pgid, _ = syscall.Getpgid(pid)
		out = append(out, t)
	}
	return out
}
