package ui

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html/template"
	"net/url"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/poolflow/poolflow/internal/linediff"
	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/vocab"
)

// funcs are the template helpers: links, times, durations, states.
var funcs = template.FuncMap{
	"dagPath":      dagPath,
	"runPath":      runPath,
	"backfillPath": backfillPath,
	"taskPath":     taskPath,
	"poolPath":     poolPath,
	"eventsOf":     eventsOf,
	"targetOf":     targetOf,
	"esc":          escape,
	"rel":          relTime,
	"abs":          absTime,
	"dur":          duration,
	"span":         span,
	"state":        func(v any) string { return stateClass(text(v)) },
	"gridBody":     gridBody, // the DAG page's grid rows (graph_grid.go)
	"taskList":     taskList, // the graph's tasks as a list (graph.go)
	// pct is a share as a CSS width (a mapped task's bar of instance states).
	"pct":    func(f float64) template.CSS { return template.CSS(strconv.FormatFloat(f, 'f', 2, 64) + "%") },
	"pretty": prettyJSON,
	"sortedReqs": func(m map[string]int) []poolSlots {
		return sortedReqs(m)
	},
	"plural": plural,
	// diffClass and diffSign show a line of a diff of two versions (§12).
	"diffClass": func(k linediff.Kind) string { return [...]string{"same", "del", "add"}[k] },
	"diffSign":  func(k linediff.Kind) string { return [...]string{" ", "-", "+"}[k] },
	"codePath":  codePath,
	"runsPath":  runsListPath,
	"graphOf":   graphOf,
	// ver is a version number that may be unknown (nil: 0).
	"ver": func(n *int) int {
		if n == nil {
			return 0
		}
		return *n
	},
	// dict builds a template's argument from name, value pairs.
	"dict": func(kv ...any) map[string]any {
		m := make(map[string]any, len(kv)/2)
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i].(string)] = kv[i+1]
		}
		return m
	},
	"add":       func(a, b int) int { return a + b },
	"ordinal":   ordinal,
	"waitWords": waitWords,
	// markStates are the states a task instance can be marked with (§10.2); markDanger says
	// which of them the page shows in red.
	"markStates": func() []vocab.TaskState {
		return []vocab.TaskState{vocab.TaskSuccess, vocab.TaskFailed, vocab.TaskSkipped}
	},
	"markDanger": func(s vocab.TaskState) bool { return s != vocab.TaskSuccess },
	"runSuccess": func() vocab.RunState { return vocab.RunSuccess },
	"runFailed":  func() vocab.RunState { return vocab.RunFailed },
	// tiName names a task instance: dag.task, or only the job's name for a job.
	"tiName": func(dagID, taskID string) string {
		if dagID == taskID {
			return dagID
		}
		return dagID + "." + taskID
	},
	"words": func(v any) string { return strings.ReplaceAll(text(v), "_", " ") },
	// nodeRun says whether a run is an every_node fire, bound to the daemon that fired it.
	"nodeRun": func(r store.Run) bool { return r.RunType == vocab.RunNode },
	"legendStates": func() []vocab.TaskState {
		return []vocab.TaskState{vocab.TaskNone, vocab.TaskScheduled, vocab.TaskRunning, vocab.TaskSuccess,
			vocab.TaskFailed, vocab.TaskUpForRetry, vocab.TaskUpForReschedule, vocab.TaskAwaitingApproval,
			vocab.TaskUpstreamFailed, vocab.TaskSkipped}
	},
	// deref is what a *string, or a pointer to a state, points to; "" for nil.
	"deref": func(p any) string {
		r := reflect.ValueOf(p)
		if r.Kind() != reflect.Pointer || r.IsNil() {
			return ""
		}
		return text(r.Elem().Interface())
	},
}

func escape(s string) string { return url.PathEscape(s) }

// when accepts a time.Time or *time.Time; ok is false for a zero or nil time.
func when(v any) (time.Time, bool) {
	switch t := v.(type) {
	case time.Time:
		return t, !t.IsZero()
	case *time.Time:
		if t == nil {
			return time.Time{}, false
		}
		return *t, !t.IsZero()
	}
	return time.Time{}, false
}

// relTime renders a <time> with the relative time as text and the absolute one on hover; the
// script keeps the text fresh. A missing time is a dash.
func relTime(now time.Time, v any) template.HTML {
	t, ok := when(v)
	if !ok {
		return `<span class="muted">–</span>`
	}
	return template.HTML(fmt.Sprintf(`<time datetime="%s" title="%s">%s</time>`,
		t.UTC().Format(time.RFC3339Nano), template.HTMLEscapeString(absTime(t)), template.HTMLEscapeString(ago(now, t))))
}

func absTime(v any) string {
	t, ok := when(v)
	if !ok {
		return "–"
	}
	return t.UTC().Format("2006-01-02 15:04:05 UTC")
}

// ago is "just now", "5s ago", "3 min ago", "in 2 h"… (app.js computes the same words).
func ago(now, t time.Time) string {
	d := now.Sub(t)
	future := d < 0
	if future {
		d = -d
	}
	var s string
	switch {
	case d < 2*time.Second:
		return "just now"
	case d < time.Minute:
		s = fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		s = fmt.Sprintf("%d min", int(d.Minutes()))
	case d < 48*time.Hour:
		s = fmt.Sprintf("%d h", int(d.Hours()))
	default:
		s = fmt.Sprintf("%d days", int(d.Hours()/24))
	}
	if future {
		return "in " + s
	}
	return s + " ago"
}

// duration renders seconds (a *float64 from the API, or a time.Duration) as "1.2s", "3m 04s"…
func duration(v any) string {
	var d time.Duration
	switch x := v.(type) {
	case *float64:
		if x == nil {
			return "–"
		}
		d = time.Duration(*x * float64(time.Second))
	case float64:
		d = time.Duration(x * float64(time.Second))
	case time.Duration:
		d = x
	default:
		return "–"
	}
	return fmtDuration(d)
}

func fmtDuration(d time.Duration) string {
	switch {
	case d < 0:
		return "–"
	case d < time.Second:
		return fmt.Sprintf("%d ms", d.Milliseconds())
	case d < time.Minute:
		return fmt.Sprintf("%.1fs", d.Seconds())
	case d < time.Hour:
		return fmt.Sprintf("%dm %02ds", int(d.Minutes()), int(d.Seconds())%60)
	default:
		return fmt.Sprintf("%dh %02dm", int(d.Hours()), int(d.Minutes())%60)
	}
}

// span is the duration from start to end, or to now while it lasts.
func span(now time.Time, start, end any) string {
	s, ok := when(start)
	if !ok {
		return "–"
	}
	e, ok := when(end)
	if !ok {
		e = now
	}
	return fmtDuration(e.Sub(s))
}

// stateClass is the CSS class of a state's colour (Airflow's colours, see style.css); no state
// is none's.
func stateClass[S ~string](state S) string {
	s := string(state)
	if s == "" {
		s = string(vocab.TaskNone)
	}
	return "st-" + strings.ReplaceAll(s, "_", "-")
}

// text is a template argument that is a string or of a string type (a state), as a string.
func text(v any) string {
	if r := reflect.ValueOf(v); r.Kind() == reflect.String {
		return r.String()
	}
	return fmt.Sprint(v)
}

// prettyJSON indents a JSON value for reading, with <, > and & as themselves (the template
// escapes them for HTML).
func prettyJSON(raw json.RawMessage) string {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return string(raw)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return string(raw)
	}
	return strings.TrimSuffix(buf.String(), "\n")
}

type poolSlots struct {
	Pool  string
	Slots int
}

func sortedReqs(m map[string]int) []poolSlots {
	out := make([]poolSlots, 0, len(m))
	for p, n := range m {
		out = append(out, poolSlots{p, n})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Pool < out[j].Pool })
	return out
}

// ordinal is 1st, 2nd, 3rd, 4th… 11th, 12th, 13th, 21st…
func ordinal(n int) string {
	suffix := "th"
	switch n % 10 {
	case 1:
		suffix = "st"
	case 2:
		suffix = "nd"
	case 3:
		suffix = "rd"
	}
	if n%100 >= 11 && n%100 <= 13 {
		suffix = "th"
	}
	return fmt.Sprintf("%d%s", n, suffix)
}

// waitWords are the words of a clear preview's wait reason without what the preview shows
// apart (the pool, the shortfall and the place in line): "would wait: pool db is full (…);
// place 1 in line for db, 1 slot short" reads "pool db is full (…)".
func waitWords(text string) string {
	text = strings.TrimPrefix(text, "would wait: ")
	text, _, _ = strings.Cut(text, "; place ")
	return text
}
