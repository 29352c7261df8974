package dag

import (
	"fmt"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
)

// Reboot is the schedule that runs once when the daemon starts (§3.5).
const Reboot = "@reboot"

// scheduleProbe is where ParseSchedule looks for a first fire, to refuse schedules that never
// fire (robfig/cron gives up after five years).
var scheduleProbe = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

// ParseSchedule parses a DAG schedule (§2.1): a 5-field cron expression, a descriptor such as
// @hourly or @daily, `@every <duration>` (at least one second), or @reboot, which returns a nil
// schedule and reboot true. "" means manual only: nil, false, nil. Cron expressions without a
// CRON_TZ= prefix use the local time zone, as robfig/cron does.
func ParseSchedule(s string) (sched cron.Schedule, reboot bool, err error) {
	s = strings.TrimSpace(s)
	switch s {
	case "":
		return nil, false, nil
	case Reboot:
		return nil, true, nil
	}
	if rest, ok := strings.CutPrefix(s, "@every "); ok {
		d, derr := time.ParseDuration(strings.TrimSpace(rest))
		if derr == nil && d < time.Second {
			return nil, false, fmt.Errorf("invalid cron %q: @every needs at least 1s", s)
		}
	}
	sched, err = parseCron(s)
	if err != nil {
		return nil, false, fmt.Errorf("invalid cron %q: %w", s, err)
	}
	if sched.Next(scheduleProbe).IsZero() {
		return nil, false, fmt.Errorf("invalid cron %q: it never fires", s)
	}
	return sched, false, nil
}

// parseCron wraps cron.ParseStandard, which panics on some malformed time zone prefixes
// ("TZ=UTC" with no fields).
func parseCron(s string) (sched cron.Schedule, err error) {
	defer func() {
		if p := recover(); p != nil {
			sched, err = nil, fmt.Errorf("malformed expression")
		}
	}()
	return cron.ParseStandard(s)
}
