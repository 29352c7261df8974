package dag

import (
	"strings"
	"testing"
	"time"
)

func TestParseSchedule(t *testing.T) {
	t.Parallel()
	from := time.Date(2026, 1, 1, 10, 30, 0, 0, time.UTC)
	tests := []struct {
		spec   string
		reboot bool
		next   time.Time // zero: no schedule
	}{
		{"", false, time.Time{}},
		{"  ", false, time.Time{}},
		{"@reboot", true, time.Time{}},
		{"CRON_TZ=UTC 0 * * * *", false, time.Date(2026, 1, 1, 11, 0, 0, 0, time.UTC)},
		{"CRON_TZ=UTC */15 * * * *", false, time.Date(2026, 1, 1, 10, 45, 0, 0, time.UTC)},
		{"CRON_TZ=UTC @daily", false, time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC)},
		{"@every 10m", false, from.Add(10 * time.Minute)},
		{"@every 1s", false, from.Add(time.Second)},
	}
	for _, tt := range tests {
		sched, reboot, err := ParseSchedule(tt.spec)
		if err != nil {
			t.Errorf("ParseSchedule(%q): %v", tt.spec, err)
			continue
		}
		if reboot != tt.reboot || (sched == nil) != tt.next.IsZero() {
			t.Errorf("ParseSchedule(%q) = %v, %v", tt.spec, sched, reboot)
			continue
		}
		if sched != nil {
			if got := sched.Next(from); !got.Equal(tt.next) {
				t.Errorf("ParseSchedule(%q).Next = %v, want %v", tt.spec, got, tt.next)
			}
		}
	}
	for _, spec := range []string{"@hourly", "@weekly", "@monthly", "@yearly", "0 3 * * 1-5", "5 4 * * sun"} {
		if _, _, err := ParseSchedule(spec); err != nil {
			t.Errorf("ParseSchedule(%q): %v", spec, err)
		}
	}
}

func TestParseScheduleErrors(t *testing.T) {
	t.Parallel()
	tests := []struct{ spec, want string }{
		{"61 * * * *", `invalid cron "61 * * * *": end of range (61) above maximum (59)`},
		{"* * *", `invalid cron "* * *": expected exactly 5 fields`},
		{"0 0 * * * *", `invalid cron "0 0 * * * *": expected exactly 5 fields`},
		{"0 0 30 2 *", `invalid cron "0 0 30 2 *": it never fires`},
		{"@every 500ms", `invalid cron "@every 500ms": @every needs at least 1s`},
		{"@every -1m", `invalid cron "@every -1m": @every needs at least 1s`},
		{"@every soon", `invalid cron "@every soon": failed to parse duration`},
		{"@fortnightly", `invalid cron "@fortnightly": unrecognized descriptor`},
		{"TZ=UTC", `invalid cron "TZ=UTC": malformed expression`},
		{"CRON_TZ=Mars/Olympus 0 * * * *", `invalid cron "CRON_TZ=Mars/Olympus 0 * * * *": provided bad location`},
	}
	for _, tt := range tests {
		sched, reboot, err := ParseSchedule(tt.spec)
		if err == nil || sched != nil || reboot {
			t.Errorf("ParseSchedule(%q) = %v, %v, %v; want an error", tt.spec, sched, reboot, err)
			continue
		}
		if !strings.HasPrefix(err.Error(), tt.want) {
			t.Errorf("ParseSchedule(%q) error %q, want prefix %q", tt.spec, err, tt.want)
		}
	}
}
