package executor

import (
	"encoding/json"
	"fmt"
	"regexp"
)

// RequestError is a manual start refused for what it asked: Field names the part at fault
// (dag_run_id, conf), for a 400 naming it.
type RequestError struct {
	Field, Msg string
}

func (e *RequestError) Error() string { return e.Field + ": " + e.Msg }

// MaxConfBytes caps a manual start's conf (as JSON). The attempt's POOLFLOW_PARAMS carries it,
// and Linux refuses one environment string over 128 KiB ("argument list too long").
const MaxConfBytes = 128 << 10

// maxRunIDLen is the longest run id (Airflow's column is 250 characters).
const maxRunIDLen = 250

// runIDPattern is Airflow's default allowed_run_id_pattern. It also keeps run ids safe as a
// path segment of the attempt logs.
var runIDPattern = regexp.MustCompile(`^[A-Za-z0-9_.~:+-]+$`)

// CheckRunID refuses a run id that cannot name a run: empty, too long, characters outside
// Airflow's pattern, "." and "..", and "~", which the API reads as "every run".
func CheckRunID(id string) error {
	switch {
	case id == "":
		return &RequestError{"dag_run_id", "must not be empty (omit it for a generated id)"}
	case len(id) > maxRunIDLen:
		return &RequestError{"dag_run_id", fmt.Sprintf("longer than %d characters", maxRunIDLen)}
	case id == "~":
		return &RequestError{"dag_run_id", `"~" is the API's wildcard for every run and cannot name one`}
	case !runIDPattern.MatchString(id) || id == "." || id == "..":
		return &RequestError{"dag_run_id", fmt.Sprintf("%q may only hold letters, digits and _.~:+-", id)}
	}
	return nil
}

// CheckConf refuses a conf whose JSON is larger than MaxConfBytes.
func CheckConf(size int) error {
	if size > MaxConfBytes {
		return &RequestError{"conf", fmt.Sprintf("%d bytes of JSON, more than the %d KiB allowed (pass large inputs by reference, e.g. a path)",
			size, MaxConfBytes>>10)}
	}
	return nil
}

// checkTrigger validates a trigger request from the Go API, as the HTTP and CLI edges do.
func checkTrigger(req TriggerRequest) error {
	if req.RunID != "" {
		if err := CheckRunID(req.RunID); err != nil {
			return err
		}
	}
	if len(req.Conf) > 0 {
		b, err := json.Marshal(req.Conf)
		if err != nil {
			return &RequestError{"conf", err.Error()}
		}
		return CheckConf(len(b))
	}
	return nil
}
