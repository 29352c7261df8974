package executor

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/vocab"
)

// TestDiamondRetry runs a diamond DAG where one branch fails once and succeeds on its retry.
func TestDiamondRetry(t *testing.T) {
	t.Parallel()
	mark := filepath.Join(t.TempDir(), "failed-once")
	b := setup(t, "", map[string]string{"diamond.yaml": fmt.Sprintf(`
dag_id: diamond
tasks:
  - id: start
    bash: echo start
  - id: left
    depends_on: [start]
    retries: 1
    retry_delay: 0s
    bash: 'if [ -f %q ]; then echo second try; else touch %q; echo first try fails; exit 3; fi'
  - id: right
    depends_on: [start]
    command: ["echo", "right"]
  - id: join
    depends_on: [left, right]
    bash: echo joined
`, mark, mark)})
	run := b.testRun(t, "diamond", nil)
	if run.State != "success" {
		t.Fatalf("run state = %s, want success", run.State)
	}
	tis := b.tis(t, run.PK)
	for id, want := range map[string]int{"start": 1, "left": 2, "right": 1, "join": 1} {
		ti := tis[id]
		if ti.State != "success" || ti.TryNumber != want {
			t.Errorf("%s: state %s try %d, want success try %d", id, ti.State, ti.TryNumber, want)
		}
	}
	if j, l := tis["join"], tis["left"]; j.StartDate.Before(l.EndDate) {
		t.Errorf("join started %v before left ended %v", j.StartDate, l.EndDate)
	}
	attempts, err := b.st.ListAttempts(context.Background(), run.PK, "left")
	if err != nil {
		t.Fatal(err)
	}
	if len(attempts) != 2 || attempts[0].State != "failed" || attempts[0].Reason != "exit status 3" || attempts[1].State != "success" {
		t.Fatalf("left attempts = %+v", attempts)
	}
	if log := readLog(t, b, "diamond", run.RunID, "left", 1); !strings.Contains(log, "first try fails") {
		t.Errorf("try 1 log = %q", log)
	}
	if log := readLog(t, b, "diamond", run.RunID, "left", 2); !strings.Contains(log, "second try") {
		t.Errorf("try 2 log = %q", log)
	}
}

// TestProcessOutcomes checks exit codes, log capture and the attempt environment of real processes.
func TestProcessOutcomes(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, task  string
		state       vocab.TaskState
		reason, log string
	}{
		{"exit0", `command: ["sh", "-c", "echo out; echo err >&2"]`, "success", "", "out\nerr\n"},
		{"exit3", `command: ["sh", "-c", "exit 3"]`, "failed", "exit status 3", ""},
		{"env", `bash: 'echo "$POOLFLOW_DAG_ID $POOLFLOW_TASK_ID $POOLFLOW_TRY_NUMBER $POOLFLOW_PARAMS $MY_VAR"'
    env: {MY_VAR: hello}`, "success", "", `env t 1 {"region":"eu"} hello`},
		{"missing", `command: ["/nonexistent/binary"]`, "failed", "start: ", ""},
		{"signal", `bash: 'kill -9 $$'`, "failed", "killed by signal killed", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, "", map[string]string{tc.name + ".yaml": fmt.Sprintf("dag_id: %s\nparams: {region: eu}\ntasks:\n  - id: t\n    %s\n", tc.name, tc.task)})
			run := b.testRun(t, tc.name, nil)
			ti := b.tis(t, run.PK)["t"]
			if ti.State != tc.state || !strings.HasPrefix(ti.Reason, tc.reason) {
				t.Fatalf("state %s reason %q, want %s %q", ti.State, ti.Reason, tc.state, tc.reason)
			}
			if tc.log != "" {
				if log := readLog(t, b, tc.name, run.RunID, "t", 1); !strings.Contains(log, tc.log) {
					t.Errorf("log = %q, want it to contain %q", log, tc.log)
				}
			}
			if tc.state == "success" && (ti.StartDate.IsZero() || ti.EndDate.Before(ti.StartDate)) {
				t.Errorf("dates start %v end %v", ti.StartDate, ti.EndDate)
			}
		})
	}
}

// TestExecutionTimeoutKillsGroup: execution_timeout terminates the whole process group, a
// background child included, and fails the attempt.
func TestExecutionTimeoutKillsGroup(t *testing.T) {
	t.Parallel()
	pidFile := filepath.Join(t.TempDir(), "child.pid")
	b := setup(t, "", map[string]string{"slow.yaml": fmt.Sprintf(`
dag_id: slow
tasks:
  - id: t
    execution_timeout: 1s
    bash: 'sleep 60 & echo $! > %s; echo started; trap "" TERM; wait'
`, pidFile)})
	run := b.testRun(t, "slow", nil)
	ti := b.tis(t, run.PK)["t"]
	if ti.State != "failed" || ti.Reason != "execution_timeout 1s exceeded" {
		t.Fatalf("state %s reason %q", ti.State, ti.Reason)
	}
	data, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(data)))
	if err := syscall.Kill(pid, 0); err == nil {
		t.Errorf("background child %d of the timed-out attempt is still alive", pid)
	}
	log := readLog(t, b, "slow", run.RunID, "t", 1)
	if !strings.Contains(log, "started") || !strings.Contains(log, "execution_timeout 1s exceeded") {
		t.Errorf("log = %q", log)
	}
}

// TestRetryTiming checks retry times with an injected clock: retry_delay × 2^(k-1) capped at
// max_retry_delay, counted from the failed attempt's end, and no retry runs before its time.
// Pass by pass (Harness) in a test run.
func TestRetryTiming(t *testing.T) {
	t.Parallel()
	b := setup(t, "", map[string]string{"flaky.yaml": `
dag_id: flaky
tasks:
  - id: t
    retries: 3
    retry_delay: 10s
    retry_exponential_backoff: true
    max_retry_delay: 15s
    command: ["false"]
`})
	b.clock = NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	h, clock := b.harness(t, func(c *Config) { c.Test = &TestRun{DAGID: "flaky"} })
	started := h.settle(t)
	wantDelays := []time.Duration{10 * time.Second, 15 * time.Second, 15 * time.Second}
	for try := 1; try <= 4; try++ {
		att := specOf(t, started, "flaky", "t")
		if att.Try != try {
			t.Fatalf("attempt %d started, want %d", att.Try, try)
		}
		clock.Advance(time.Second) // it runs a second
		h.settle(t, h.End(att, false, "exit status 1"))
		ti := b.tis(t, b.mustRun(t, "flaky", att.RunID).PK)["t"]
		if try == 4 {
			if ti.State != "failed" {
				t.Fatalf("after the last try: state %s", ti.State)
			}
			break
		}
		if ti.State != "up_for_retry" {
			t.Fatalf("try %d: state %s, want up_for_retry", try, ti.State)
		}
		if got := ti.NextAt.Sub(ti.EndDate); got != wantDelays[try-1] {
			t.Errorf("try %d: retry after %v, want %v", try, got, wantDelays[try-1])
		}
		if wake := h.Wake(); wake.After(ti.NextAt) {
			t.Errorf("try %d: the daemon would pass next at %v, after the retry time %v", try, wake, ti.NextAt)
		}
		clock.Advance(wantDelays[try-1] - time.Second)
		if started := h.settle(t); len(started) != 0 {
			t.Fatalf("try %d admitted a second before its retry time", try+1)
		}
		clock.Advance(time.Second)
		started = h.settle(t)
	}
	run, done := h.l.dec.TestResult()
	if !done || run.State != "failed" {
		t.Fatalf("run %s (ended %v), want failed", run.State, done)
	}
}

// TestSpecExampleABC is SPEC §4.4's example: max_running 2, db 1; a{db:1}, b{db:1}, c{} at equal
// priority: the first pass admits a and c; b is admitted after a finishes.
func TestSpecExampleABC(t *testing.T) {
	t.Parallel()
	b := setup(t, "max_running: 2\npools:\n  db: 1\n", map[string]string{"abc.yaml": `
dag_id: abc
tasks:
  - {id: a, pool_requirements: {db: 1}, priority_weight: 1, weight_rule: absolute, bash: sleep 0.3}
  - {id: b, pool_requirements: {db: 1}, priority_weight: 1, weight_rule: absolute, bash: sleep 0.1}
  - {id: c, priority_weight: 1, weight_rule: absolute, bash: sleep 0.1}
`})
	run := b.testRun(t, "abc", nil)
	if run.State != "success" {
		t.Fatalf("run %s", run.State)
	}
	entries := map[string]store.Entry{}
	for _, id := range []string{"a", "b", "c"} {
		e, err := b.st.LatestEntry(context.Background(), run.PK, id)
		if err != nil {
			t.Fatal(err)
		}
		entries[id] = e
	}
	if !entries["a"].AdmittedAt.Equal(entries["c"].AdmittedAt) {
		t.Errorf("a admitted %v, c %v: want the same pass", entries["a"].AdmittedAt, entries["c"].AdmittedAt)
	}
	tis := b.tis(t, run.PK)
	if tis["b"].StartDate.Before(tis["a"].EndDate) {
		t.Errorf("b started %v before a ended %v", tis["b"].StartDate, tis["a"].EndDate)
	}
	if !entries["a"].AdmittedAt.Before(entries["b"].AdmittedAt) {
		t.Errorf("b admitted %v, not after a %v", entries["b"].AdmittedAt, entries["a"].AdmittedAt)
	}
}
