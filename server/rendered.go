package server

import (
	"maps"
	"slices"
	"strings"

	"github.com/poolflow/poolflow/dag"
	"github.com/poolflow/poolflow/explain"
)

// RenderedView is what a templated task instance runs (§14): its argv and env with their
// templates evaluated, the values of env keys named like secrets masked.
type RenderedView struct {
	Argv  []string
	Env   []RenderedEnv
	Pools map[string]int
	Err   string // why its templates do not evaluate now
}

// RenderedEnv is one variable of a rendered env.
type RenderedEnv struct {
	Key, Value string
	Masked     bool
}

// sensitiveWords mark env keys whose values are not shown: Airflow's list of sensitive
// field names.
var sensitiveWords = []string{"access_token", "api_key", "apikey", "authorization", "passphrase", "passwd",
	"password", "private_key", "secret", "token", "credential", "keyfile", "service_account"}

// Sensitive reports whether an env key is named like a secret.
func Sensitive(key string) bool {
	k := strings.ToLower(key)
	for _, w := range sensitiveWords {
		if strings.Contains(k, w) {
			return true
		}
	}
	return false
}

// rendered evaluates the task instance's templates as its current try runs them; nil for a
// task without templates.
func (t *taskInstance) rendered() *RenderedView {
	if t.dag == nil || t.task == nil || !t.dag.Templated(t.task) {
		return nil
	}
	if _, _, inst := dag.SplitMapID(t.ti.TaskID); t.task.Mapped() && !inst {
		return nil // a mapped task's own task instance runs nothing: its instances do
	}
	r, err := explain.Render(t.dag, t.task, t.ti.TaskID, t.run, max(t.ti.TryNumber, 1), t.all)
	if err != nil {
		return &RenderedView{Err: err.Error()}
	}
	v := &RenderedView{Argv: r.Argv, Pools: r.Pools}
	if v.Argv == nil && t.task.Command != nil {
		v.Argv = t.task.Command
	}
	env := r.Env
	if env == nil {
		env = t.task.Env
	}
	for _, k := range slices.Sorted(maps.Keys(env)) {
		e := RenderedEnv{Key: k, Value: env[k]}
		if Sensitive(k) {
			e.Value, e.Masked = "***", true
		}
		v.Env = append(v.Env, e)
	}
	return v
}
