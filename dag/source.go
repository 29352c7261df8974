package dag

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"time"
)

// The formats of a DAG's source (§12).
const (
	SourceYAML = "yaml" // the DAG file's text, byte for byte
	SourceGo   = "go"   // a Go DAG's canonical JSON (CanonicalJSON)
)

// Source is what the DAG was defined with, as a version of it is kept (§12): a YAML DAG's file
// text, byte for byte; a Go DAG has no file to show, so its source is its canonical JSON: the
// definition as the daemon loaded it, every default applied, in the YAML field names.
func (d *DAG) Source() (format, text string) {
	if d.text != nil {
		return SourceYAML, string(d.text)
	}
	return SourceGo, d.CanonicalJSON()
}

// SourceHash identifies the DAG's source (its format and text): two loads of the same text
// give the same hash, and any change of the text (a comment included) gives another. It is
// computed once per loaded DAG.
func (d *DAG) SourceHash() string {
	return memo(&d.derived.sourceHash, func() string {
		h := sha256.New()
		if d.text != nil {
			h.Write([]byte(SourceYAML + "\n"))
			h.Write(d.text)
		} else {
			h.Write([]byte(SourceGo + "\n" + d.CanonicalJSON()))
		}
		return hex.EncodeToString(h.Sum(nil))
	})
}

// CanonicalJSON renders the DAG as it is loaded — every default applied — as indented JSON with
// the YAML field names, DAG fields first, then the tasks in their order with the fields of the
// task field table in its order, zero values left out. A Go task is named by its function
// (runtime.FuncForPC), the one thing of it that can be shown. It is the source of a Go DAG
// (Source); for a YAML DAG it shows what the file means.
func (d *DAG) CanonicalJSON() string {
	var b bytes.Buffer
	o := object{b: &b}
	o.field("dag_id", d.ID)
	o.field("description", d.Description)
	o.field("schedule", d.Schedule)
	if !d.StartDate.IsZero() {
		o.field("start_date", d.StartDate.Format(time.RFC3339))
	}
	o.field("catchup", d.Catchup)
	o.field("every_node", d.EveryNode)
	o.field("max_active_runs", d.MaxActiveRuns)
	o.field("max_active_tasks", d.MaxActiveTasks)
	o.field("concurrency_policy", d.ConcurrencyPolicy)
	o.field("tags", d.Tags)
	o.field("owner", d.Owner)
	o.field("team", d.Team)
	o.field("params", d.Params)
	o.field("job", d.IsJob)
	o.field("on_failure", d.OnFailure)
	o.field("on_success", d.OnSuccess)
	o.field("on_deadline_miss", d.OnDeadlineMiss)
	o.field("dagrun_timeout", canonicalValue(&d.DagrunTimeout))
	if dl := d.Deadline; dl != nil {
		o.field("deadline", map[string]any{"after": canonicalValue(&dl.After), "from": dl.From})
	}
	tasks := make([]json.RawMessage, len(d.Tasks))
	for i, t := range d.Tasks {
		tasks[i] = canonicalTask(t)
	}
	o.field("tasks", tasks)
	o.end()
	var out bytes.Buffer
	if err := json.Indent(&out, b.Bytes(), "", "  "); err != nil {
		return b.String() // cannot happen: every value was written by encoding/json
	}
	out.WriteByte('\n')
	return out.String()
}

// canonicalTask is one task of CanonicalJSON: the fields of taskFields that have a YAML name
// (the legacy pool fields are in pool_requirements), then its kind and, for a Go task, its
// function.
func canonicalTask(t *Task) json.RawMessage {
	var b bytes.Buffer
	o := object{b: &b}
	s := &taskSpec{t: *t}
	if len(s.t.DependsOn) > 0 {
		s.t.DependsOn = slices.Sorted(slices.Values(s.t.DependsOn))
	}
	for i := range taskFields {
		f := &taskFields[i]
		if f.name == "" || f.fp == "" {
			continue // the kind comes below; pool and pool_slots are in pool_requirements
		}
		if f.name == "queue_priority" {
			continue // priority_weight's alias
		}
		if strings.HasSuffix(f.fp, ",omitempty") && reflect.ValueOf(f.value(s)).Elem().IsZero() {
			continue // a field added later, unset: the source of a DAG that does not use it is as it was
		}
		if f.name == "pool_requirements" && len(t.PoolTemplates) > 0 {
			// As YAML writes them: the templated requirements beside the plain ones (§14).
			all := map[string]any{}
			for k, v := range t.PoolRequirements {
				all[k] = v
			}
			for k, v := range t.PoolTemplates {
				all[k] = v
			}
			o.field(f.name, all)
			continue
		}
		o.field(f.name, canonicalValue(f.value(s)))
	}
	// The handlers change who is told, not how the task runs (no fingerprint), but they are
	// part of what the author wrote.
	h := t.Notifiers()
	o.field("on_failure", h.OnFailure)
	o.field("on_success", h.OnSuccess)
	o.field("on_retry", h.OnRetry)
	if q := h.OnQueueWait; q != nil {
		o.field("on_queue_wait", map[string]any{"after": canonicalValue(&q.After), "notify": q.Notify})
	}
	o.field("kind", string(t.Kind))
	if t.Func != nil {
		name := "?"
		if fn := runtime.FuncForPC(reflect.ValueOf(t.Func).Pointer()); fn != nil {
			name = fn.Name()
		}
		o.field("go", name)
	}
	o.end()
	return b.Bytes()
}

// canonicalValue is a field's value as CanonicalJSON writes it: durations as "5m0s", a sensor
// or an approval with the YAML names of their fields.
func canonicalValue(v any) any {
	switch x := v.(type) {
	case *time.Duration:
		if *x == 0 {
			return ""
		}
		return x.String()
	case **Sensor:
		s := *x
		if s == nil {
			return nil
		}
		var b bytes.Buffer
		o := object{b: &b}
		o.field("command", s.Command)
		o.field("file_exists", s.FileExists)
		if s.HTTP != nil {
			o.field("http", map[string]any{"url": s.HTTP.URL, "status": s.HTTP.Status})
		}
		o.field("mode", s.Mode)
		o.field("poke_interval", canonicalValue(&s.PokeInterval))
		o.field("timeout", canonicalValue(&s.Timeout))
		o.field("soft_fail", s.SoftFail)
		o.field("exponential_backoff", s.ExponentialBackoff)
		o.field("max_wait", canonicalValue(&s.MaxWait))
		o.end()
		return json.RawMessage(b.Bytes())
	case **Approval:
		a := *x
		if a == nil {
			return nil
		}
		return map[string]any{"timeout": canonicalValue(&a.Timeout)}
	}
	return reflect.ValueOf(v).Elem().Interface()
}

// object writes a JSON object's fields in the order given, leaving out zero values.
type object struct {
	b *bytes.Buffer
	n int
}

func (o *object) field(key string, v any) {
	if isZero(v) {
		return
	}
	enc, err := json.Marshal(v)
	if err != nil {
		return
	}
	if o.n == 0 {
		o.b.WriteByte('{')
	} else {
		o.b.WriteByte(',')
	}
	o.n++
	k, _ := json.Marshal(key)
	o.b.Write(k)
	o.b.WriteByte(':')
	o.b.Write(enc)
}

func (o *object) end() {
	if o.n == 0 {
		o.b.WriteByte('{')
	}
	o.b.WriteByte('}')
}

func isZero(v any) bool {
	if v == nil {
		return true
	}
	if r, ok := v.(json.RawMessage); ok {
		return len(r) == 0 || string(r) == "{}" || string(r) == "null"
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Map, reflect.Slice:
		return rv.Len() == 0
	case reflect.String:
		return strings.TrimSpace(rv.String()) == ""
	}
	return rv.IsZero()
}
