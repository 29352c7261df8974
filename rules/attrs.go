package rules

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/poolflow/poolflow/vocab"
)

// Attrs are the attributes of one attempt that a rule condition can read (§6). The json tags
// are the names conditions use, so the HTTP API can decode a request body into Attrs directly.
type Attrs struct {
	DAGID  string `json:"dag_id"`
	TaskID string `json:"task_id"`
	RunID  string `json:"run_id"`
	Owner  string `json:"owner"`
	// Team is the team of the attempt's DAG (§15), "" for none: a rule whose pool is not open
	// to it is skipped.
	Team        string         `json:"team"`
	Tags        []string       `json:"tags"`
	Trigger     string         `json:"trigger"` // schedule, manual, catchup or node
	Params      map[string]any `json:"params"`
	TryNumber   int            `json:"try_number"` // the try the attempt will run as
	Kind        string         `json:"kind"`       // command, bash, go or sensor
	LogicalDate time.Time      `json:"logical_date"`
	// Item and MapIndex are a mapped task instance's (§14): its item, whatever its type (an
	// object, a string, a number…), nil for a task that is not mapped, and its index (-1 for a
	// task that is not mapped).
	Item     any `json:"item"`
	MapIndex int `json:"map_index"`
}

var (
	triggers = vocab.Strings([]vocab.RunType{vocab.RunSchedule, vocab.RunManual, vocab.RunCatchup, vocab.RunNode, vocab.RunBackfill}) // a test run is manual
	kinds    = []string{"command", "bash", "go", "sensor"}
)

// ParseAttrs builds Attrs from `key=value` strings and an optional JSON object for params, as
// given to `poolflow rules test --attr ... --params JSON`. Keys are the condition names; tags
// are comma-separated; try_number defaults to 1 and kind to "command"; logical_date is RFC 3339.
// item is a mapped instance's item as JSON (a word that is not JSON is a string), map_index its
// index; either makes the attempt a mapped instance's (map_index 0 unless given), neither a
// task that is not mapped (map_index -1).
func ParseAttrs(attrs []string, paramsJSON string) (Attrs, error) {
	a := Attrs{TryNumber: 1, Kind: "command", Params: map[string]any{}, MapIndex: -1}
	seen := make(map[string]bool, len(attrs))
	for _, kv := range attrs {
		key, value, ok := strings.Cut(kv, "=")
		key = strings.TrimSpace(key)
		if !ok {
			return Attrs{}, fmt.Errorf("attr %q: want key=value", kv)
		}
		if seen[key] {
			return Attrs{}, fmt.Errorf("attr %s: given more than once", key)
		}
		seen[key] = true
		if err := a.set(key, value); err != nil {
			return Attrs{}, fmt.Errorf("attr %s: %w", key, err)
		}
	}
	if strings.TrimSpace(paramsJSON) != "" {
		params, err := parseParams(paramsJSON)
		if err != nil {
			return Attrs{}, fmt.Errorf("params: %w", err)
		}
		a.Params = params
	}
	if seen["item"] && !seen["map_index"] {
		a.MapIndex = 0
	}
	return a, nil
}

func (a *Attrs) set(key, value string) error {
	switch key {
	case "dag_id":
		a.DAGID = value
	case "task_id":
		a.TaskID = value
	case "run_id":
		a.RunID = value
	case "owner":
		a.Owner = value
	case "team":
		a.Team = strings.TrimSpace(value)
	case "tags":
		a.Tags = splitTags(value)
	case "trigger":
		if !slices.Contains(triggers, value) {
			return fmt.Errorf("%q is not one of %s", value, strings.Join(triggers, ", "))
		}
		a.Trigger = value
	case "kind":
		if !slices.Contains(kinds, value) {
			return fmt.Errorf("%q is not one of %s", value, strings.Join(kinds, ", "))
		}
		a.Kind = value
	case "try_number":
		n, err := strconv.Atoi(strings.TrimSpace(value))
		if err != nil || n < 1 {
			return fmt.Errorf("%q is not a whole number of at least 1", value)
		}
		a.TryNumber = n
	case "logical_date":
		t, err := time.Parse(time.RFC3339, strings.TrimSpace(value))
		if err != nil {
			return fmt.Errorf("%q is not an RFC 3339 time such as 2024-05-01T00:00:00Z", value)
		}
		a.LogicalDate = t
	case "item":
		a.Item = ParseItem(value)
	case "map_index":
		n, err := strconv.Atoi(strings.TrimSpace(value))
		if err != nil || n < 0 {
			return fmt.Errorf("%q is not a whole number of at least 0", value)
		}
		a.MapIndex = n
	case "params":
		return fmt.Errorf("use --params with a JSON object")
	default:
		return fmt.Errorf("unknown attribute (want one of %s)", strings.Join(AttrNames, ", "))
	}
	return nil
}

// AttrNames are the keys ParseAttrs takes.
var AttrNames = []string{"dag_id", "task_id", "run_id", "owner", "team", "tags", "trigger", "try_number", "kind",
	"logical_date", "item", "map_index"}

// ParseItem reads an item given on a command line: JSON when it is JSON ({"shard": 2}, 3,
// "eu"), else the text itself as a string (eu), which is what a shell user means by it.
func ParseItem(s string) any {
	var v any
	dec := json.NewDecoder(strings.NewReader(s))
	if err := dec.Decode(&v); err == nil {
		if _, err := dec.Token(); errors.Is(err, io.EOF) {
			return v
		}
	}
	return s
}

// splitTags drops empty items so that "a,,b" and "a, b" mean what they look like.
func splitTags(s string) []string {
	tags := []string{}
	for t := range strings.SplitSeq(s, ",") {
		if t = strings.TrimSpace(t); t != "" {
			tags = append(tags, t)
		}
	}
	return tags
}

func parseParams(s string) (map[string]any, error) {
	dec := json.NewDecoder(bytes.NewReader([]byte(s)))
	var params map[string]any
	if err := dec.Decode(&params); err != nil {
		return nil, fmt.Errorf("want a JSON object: %w", err)
	}
	if params == nil {
		return nil, fmt.Errorf("want a JSON object, got null")
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("want a single JSON object, got more after it")
	}
	return params, nil
}
