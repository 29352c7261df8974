package dag

import (
	"time"

	"github.com/goccy/go-yaml/ast"
)

// Fields of a sensor, of its http check and of an approval (§2.1).
var (
	sensorFields = fieldSet("command", "file_exists", "http", "mode", "poke_interval", "timeout",
		"soft_fail", "exponential_backoff", "max_wait")
	httpFields     = fieldSet("url", "status")
	approvalFields = fieldSet("timeout")
)

func (r *reader) readSensor(n ast.Node, base at) *Sensor {
	es, _ := r.mapping(n, base)
	s := &Sensor{}
	for _, e := range es {
		a := base.child(e.key)
		if !sensorFields[e.key] {
			r.fail(e.keyN, a, e.key, "unknown field")
			continue
		}
		r.record(a.key(), e.keyN)
		r.record(a, e.value)
		if isNull(r, e.value) {
			continue
		}
		switch e.key {
		case "command":
			s.Command = r.argv(e.value, a)
		case "file_exists":
			s.FileExists, _ = r.str(e.value, a)
		case "http":
			s.HTTP = r.readHTTP(e.value, a)
		case "mode":
			s.Mode, _ = r.str(e.value, a)
		case "poke_interval":
			s.PokeInterval = r.positiveDuration(e.value, a)
		case "timeout":
			s.Timeout = r.positiveDuration(e.value, a)
		case "soft_fail":
			s.SoftFail, _ = r.boolean(e.value, a)
		case "exponential_backoff":
			s.ExponentialBackoff, _ = r.boolean(e.value, a)
		case "max_wait":
			s.MaxWait, _ = r.duration(e.value, a)
		}
	}
	return s
}

// positiveDuration reads a duration whose zero would silently mean the default.
func (r *reader) positiveDuration(n ast.Node, a at) time.Duration {
	d, ok := r.duration(n, a)
	if ok && d == 0 {
		r.fail(n, a, "0", "must be positive")
	}
	return d
}

func (r *reader) readHTTP(n ast.Node, base at) *HTTPCheck {
	es, _ := r.mapping(n, base)
	h := &HTTPCheck{}
	for _, e := range es {
		a := base.child(e.key)
		if !httpFields[e.key] {
			r.fail(e.keyN, a, e.key, "unknown field")
			continue
		}
		r.record(a.key(), e.keyN)
		r.record(a, e.value)
		switch e.key {
		case "url":
			h.URL, _ = r.str(e.value, a)
		case "status":
			h.Status, _ = r.integer(e.value, a)
		}
	}
	return h
}

func (r *reader) readApproval(n ast.Node, base at) *Approval {
	es, _ := r.mapping(n, base)
	ap := &Approval{}
	for _, e := range es {
		a := base.child(e.key)
		if !approvalFields[e.key] {
			r.fail(e.keyN, a, e.key, "unknown field")
			continue
		}
		r.record(a.key(), e.keyN)
		r.record(a, e.value)
		ap.Timeout, _ = r.duration(e.value, a)
	}
	return ap
}
