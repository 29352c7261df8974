package runner

import (
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// BenchmarkAttemptEnd measures what an attempt's end costs beyond its fork and wait: the group
// kill, the orphan sweep of the daemon's children and the watchdog's bookkeeping (issue 11's
// budget is 0.5 ms per step in all); with cgroups also the cgroup's making before the start,
// the check that it is empty and its removal (issue 25 point 6).
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
	group := strconv.Itoa(pgid)
	b.Run("groups", func(b *testing.B) {
		for b.Loop() {
			wd.add(group)
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
			if !sweepAttempt("bench", pgid, time.Second) {
				b.Fatal("sweep")
			}
			wd.remove(group)
		}
	})
	b.Run("cgroups", func(b *testing.B) {
		h, err := hostCgroups()
		if err != nil {
			b.Skipf("cgroup v2 not writable: %v", err)
		}
		owner := ownerHash("bench", "/nonexistent")
		for b.Loop() {
			cg, err := h.create(cgroupName(owner, 1, "bench"))
			if err != nil {
				b.Fatal(err)
			}
			wd.add(cg.dir)
			cg.closeFD()
			wd.add(group)
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
			if cg.populated() {
				b.Fatal("populated")
			}
			if !sweepAttempt("bench", pgid, time.Second) {
				b.Fatal("sweep")
			}
			if err := cg.remove(); err != nil {
				b.Fatal(err)
			}
			wd.remove(cg.dir)
			wd.remove(group)
		}
	})
}

// BenchmarkAttemptStart measures a leader's start and wait (a fork and exec of true, its exit)
// in its own session, and also inside a new cgroup by clone3: what starting into a cgroup adds
// to the fork itself, beside the bookkeeping BenchmarkAttemptEnd counts.
func BenchmarkAttemptStart(b *testing.B) {
	path, err := exec.LookPath("true")
	if err != nil {
		b.Skip("no true")
	}
	null := devNull()
	start := func(b *testing.B, sys *syscall.SysProcAttr) {
		p, err := os.StartProcess(path, []string{"true"}, &os.ProcAttr{Files: []*os.File{null, null, null}, Sys: sys})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := p.Wait(); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("groups", func(b *testing.B) {
		for b.Loop() {
			start(b, &syscall.SysProcAttr{Setsid: true})
		}
	})
	b.Run("cgroups", func(b *testing.B) {
		h, err := hostCgroups()
		if err != nil {
			b.Skipf("cgroup v2 not writable: %v", err)
		}
		owner := ownerHash("bench", "/nonexistent")
		for b.Loop() {
			cg, err := h.create(cgroupName(owner, 1, "bench"))
			if err != nil {
				b.Fatal(err)
			}
			start(b, &syscall.SysProcAttr{Setsid: true, UseCgroupFD: true, CgroupFD: cg.fd})
			cg.closeFD()
			cg.kill()
			if !cg.wait(time.Second) {
				b.Fatal("wait")
			}
			if err := cg.remove(); err != nil {
				b.Fatal(err)
			}
		}
	})
}
