package runner

import (
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// BenchmarkAttemptEnd measures what an attempt's end costs beyond its fork and wait: the group
// kill, the orphan sweep of the daemon's children and the watchdog's bookkeeping (issue 11's
// budget is 0.5 ms per step in all).
func BenchmarkAttemptEnd(b *testing.B) {
	becomeSubreaper()
	wd, err := startWatchdog("bench", 1, "/nonexistent", func(string, ...any) {})
	if err != nil {
		b.Fatal(err)
	}
	defer wd.close()
	cmd := exec.Command("true")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Run(); err != nil {
		b.Fatal(err)
	}
	pgid := cmd.Process.Pid // a group that no longer exists, as after a normal end
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		wd.add(pgid)
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		if !sweepAttempt("bench", pgid, time.Second) {
			b.Fatal("sweep")
		}
		wd.remove(pgid)
	}
}
