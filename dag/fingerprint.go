package dag

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"slices"
	"sync"
	"time"
)

// fingerprintVersion changes whenever the encoding below does, so that an upgrade is seen as
// a change of every task rather than silently comparing different encodings.
const fingerprintVersion = 1

// Fingerprint is a stable hash of the task's definition: everything that decides how an attempt
// runs and what it needs (kind, argv or script, sensor, approval, env, workdir, trigger rule,
// dependencies, retries, timeouts, requirements, limits, priority). The daemon compares it
// across reloads to find changed tasks (§3.5). A Go function is represented only by the kind:
// functions cannot be compared. Call it on a task with defaults applied.
func (t *Task) Fingerprint() string {
	// Empty and absent mean the same; so must their encodings.
	var deps []string
	if len(t.DependsOn) > 0 {
		deps = slices.Sorted(slices.Values(t.DependsOn))
	}
	env, reqs := t.Env, t.PoolRequirements
	if len(env) == 0 {
		env = nil
	}
	if len(reqs) == 0 {
		reqs = nil
	}
	def := struct {
		V                       int
		ID                      string
		Kind                    Kind
		DependsOn               []string
		Command                 []string
		Bash                    string
		Sensor                  *Sensor
		Approval                *Approval
		Env                     map[string]string
		Workdir                 string
		TriggerRule             TriggerRule
		Retries                 int
		RetryDelay              time.Duration
		RetryExponentialBackoff bool
		MaxRetryDelay           time.Duration
		ExecutionTimeout        time.Duration
		QueueTimeout            time.Duration
		PoolRequirements        map[string]int
		PriorityWeight          int
		WeightRule              string
		MaxActiveTIsPerDAG      int
		MaxActiveTIsPerDAGRun   int
	}{
		fingerprintVersion, t.ID, t.Kind, deps, t.Command, t.Bash, t.Sensor, t.Approval, env,
		t.Workdir, t.TriggerRule, t.Retries, t.RetryDelay, t.RetryExponentialBackoff,
		t.MaxRetryDelay, t.ExecutionTimeout, t.QueueTimeout, reqs,
		t.PriorityWeight, t.WeightRule, t.MaxActiveTIsPerDAG, t.MaxActiveTIsPerDAGRun,
	}
	// Marshalling plain values and maps (whose keys encoding/json sorts) cannot fail.
	b, _ := json.Marshal(def)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:16])
}

// TaskFingerprint is Tasks[i].Fingerprint(), computed once per task of the DAG: the daemon
// needs it for each entry it queues and for every waiting entry at each reload.
func (d *DAG) TaskFingerprint(i int) string {
	c := memo(&d.derived.fingerprints, func() *fingerprints {
		return &fingerprints{s: make([]fingerprintSlot, len(d.Tasks))}
	})
	t := d.Tasks[i]
	c.mu.Lock()
	defer c.mu.Unlock()
	if i < len(c.s) && c.s[i].t == t {
		return c.s[i].fp
	}
	fp := t.Fingerprint()
	if i < len(c.s) {
		c.s[i] = fingerprintSlot{t, fp}
	}
	return fp
}

type fingerprints struct {
	mu sync.Mutex
	s  []fingerprintSlot // by task index; t tells a task replaced by hand since
}

type fingerprintSlot struct {
	t  *Task
	fp string
}
