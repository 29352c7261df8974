package dag

import (
	"fmt"
	"net/url"
	"strings"
)

// checkSensor checks a sensor (§5.1): exactly one check, a valid mode and durations.
func (v *validator) checkSensor(i int, s *Sensor) {
	var checks []string
	if s.Command != nil {
		checks = append(checks, "command")
	}
	if s.FileExists != "" {
		checks = append(checks, "file_exists")
	}
	if s.HTTP != nil {
		checks = append(checks, "http")
	}
	switch len(checks) {
	case 0:
		for _, f := range []string{"command", "file_exists", "http"} {
			if v.bad(i, "sensor."+f) {
				return
			}
		}
		v.fail(i, "sensor", "", "a sensor needs one check: command, file_exists or http")
	case 1:
	default:
		// Point at the check written last: the one that made it two.
		last, best := checks[len(checks)-1], srcPos{}
		for _, c := range checks {
			if p := v.src.get().at(i, "sensor."+c+keySuffix); p.line > best.line || p.line == best.line && p.col > best.col {
				last, best = c, p
			}
		}
		v.fail(i, "sensor."+last+keySuffix, "", "two check kinds in one sensor: %s", strings.Join(checks, " and "))
	}
	if s.Command != nil && !v.bad(i, "sensor.command") {
		v.checkArgv(i, "sensor.command", s.Command)
	}
	if h := s.HTTP; h != nil && !v.bad(i, "sensor.http") {
		if u, err := url.Parse(h.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			if !v.bad(i, "sensor.http.url") {
				v.fail(i, "sensor.http.url", h.URL, "invalid URL %q: want an absolute http or https URL", h.URL)
			}
		}
		if h.Status != 0 && (h.Status < 100 || h.Status > 599) && !v.bad(i, "sensor.http.status") {
			v.fail(i, "sensor.http.status", fmt.Sprint(h.Status), "invalid HTTP status %d", h.Status)
		}
	}
	switch s.Mode {
	case "", ModePoke, ModeReschedule:
	default:
		if !v.bad(i, "sensor.mode") {
			v.fail(i, "sensor.mode", s.Mode, "invalid sensor mode %q (want poke or reschedule)", s.Mode)
		}
	}
	v.nonNegativeDuration(i, "sensor.poke_interval", s.PokeInterval)
	v.nonNegativeDuration(i, "sensor.timeout", s.Timeout)
	v.nonNegativeDuration(i, "sensor.max_wait", s.MaxWait)
}

// checkApproval refuses what an approval gate cannot use (§5.2): it creates no queue entry,
// needs no pool and is never retried.
func (v *validator) checkApproval(i int, t *Task) {
	v.nonNegativeDuration(i, "approval.timeout", t.Approval.Timeout)
	if t.Kind != "" && t.Kind != KindApproval || len(t.payloadKinds()) != 1 {
		return
	}
	if t.PoolRequirements != nil && !v.bad(i, "pool_requirements") {
		v.fail(i, "pool_requirements", "", "an approval task needs no pool")
	}
	if t.Expand != nil && !v.bad(i, "expand") {
		v.fail(i, "expand", "", "an approval gate cannot be mapped")
	}
	if t.MaxActiveTIsPerDAG > 0 {
		v.fail(i, "max_active_tis_per_dag", fmt.Sprint(t.MaxActiveTIsPerDAG), "an approval task needs no pool")
	}
	if t.MaxActiveTIsPerDAGRun > 0 {
		v.fail(i, "max_active_tis_per_dagrun", fmt.Sprint(t.MaxActiveTIsPerDAGRun), "an approval task needs no pool")
	}
	if t.Retries > 0 {
		v.fail(i, "retries", fmt.Sprint(t.Retries), "an approval task is never retried")
	}
	if t.ExecutionTimeout > 0 {
		v.fail(i, "execution_timeout", t.ExecutionTimeout.String(), "an approval task has no execution timeout; use approval.timeout")
	}
	if t.QueueTimeout > 0 {
		v.fail(i, "queue_timeout", t.QueueTimeout.String(), "an approval task is never queued")
	}
}
