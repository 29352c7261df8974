package runner

import (
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

func TestCgroupNames(t *testing.T) {
	t.Parallel()
	owner := ownerHash("host:/var/lib/poolflow", "/var/lib/poolflow/poolflow.db")
	if len(owner) != 12 || owner == ownerHash("host:/var/lib/poolflow", "/other.db") {
		t.Fatalf("ownerHash = %q", owner)
	}
	name := cgroupName(owner, 42, "1234.7")
	if e, ok := cgroupEpoch(name, owner); !ok || e != 42 {
		t.Errorf("cgroupEpoch(%q) = %d, %v", name, e, ok)
	}
	for _, other := range []string{"daemon", "probe-12", "a-" + owner, "a-" + owner + "-x-1.2", cgroupName(ownerHash("b", "s"), 42, "1.1")} {
		if _, ok := cgroupEpoch(other, owner); ok {
			t.Errorf("cgroupEpoch(%q) matches", other)
		}
	}
	if got := unescapeMount(`/sys/fs/my\040cgroup`); got != "/sys/fs/my cgroup" {
		t.Errorf("unescapeMount = %q", got)
	}
}

// cgroupsOrSkip is the host's cgroups, or skips the test where attempts run in process groups.
func cgroupsOrSkip(t *testing.T) *cgroupHost {
	t.Helper()
	h, err := hostCgroups()
	if err != nil {
		t.Skipf("attempts run in process groups here (cgroup v2 not writable: %v)", err)
	}
	return h
}

// startEscaped starts, in a new cgroup of h named name, a sleep in its own session with an
// empty environment: nothing but its cgroup says whose it is.
func startEscaped(t *testing.T, h *cgroupHost, name string) *os.Process {
	t.Helper()
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep")
	}
	cg, err := h.create(name)
	if err != nil {
		t.Fatal(err)
	}
	defer cg.closeFD()
	null := devNull()
	p, err := os.StartProcess(sleep, []string{"sleep", "300"}, &os.ProcAttr{Env: []string{}, Files: []*os.File{null, null, null},
		Sys: &syscall.SysProcAttr{Setsid: true, UseCgroupFD: true, CgroupFD: cg.fd}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = p.Kill()
		_, _ = p.Wait()
		_ = removeCgroup(cg.dir, time.Second)
	})
	return p
}

// TestKillCgroupsFindsAnOwnersAttempts: a restart or a takeover finds the attempt cgroups of a
// dead owner by their names (owner and epoch), kills what runs in them and removes them; it
// leaves other epochs and other owners alone.
func TestKillCgroupsFindsAnOwnersAttempts(t *testing.T) {
	t.Parallel()
	h := cgroupsOrSkip(t)
	store := filepath.Join(t.TempDir(), "s.db")
	dead, other := ownerHash("dead", store), ownerHash("other", store)
	p3 := startEscaped(t, h, cgroupName(dead, 3, "1.1"))
	p2 := startEscaped(t, h, cgroupName(dead, 2, "1.2"))
	p5 := startEscaped(t, h, cgroupName(dead, 5, "1.3"))
	po := startEscaped(t, h, cgroupName(other, 3, "1.4"))
	n, ok := KillCgroups("dead", store, func(e int64) bool { return e <= 3 }, 10*time.Second)
	if n != 2 || !ok {
		t.Fatalf("KillCgroups = %d, %v; want 2, true", n, ok)
	}
	for _, p := range []*os.Process{p3, p2} {
		if live(p.Pid) {
			t.Errorf("pid %d of the dead owner's epochs ≤ 3 lives", p.Pid)
		}
	}
	for _, p := range []*os.Process{p5, po} {
		if !live(p.Pid) {
			t.Errorf("pid %d of a later epoch or another owner was killed", p.Pid)
		}
	}
	for _, name := range []string{cgroupName(dead, 3, "1.1"), cgroupName(dead, 2, "1.2")} {
		if _, err := os.Stat(filepath.Join(h.base, name)); err == nil {
			t.Errorf("%s is still there", name)
		}
	}
}

// TestWatchdogKillsItsCgroups: when the daemon's pipe closes (the daemon died, even by kill -9),
// the watchdog kills the attempt cgroups it was told about, with what left every other trace.
func TestWatchdogKillsItsCgroups(t *testing.T) {
	t.Parallel()
	h := cgroupsOrSkip(t)
	store := filepath.Join(t.TempDir(), "s.db")
	wd, err := startWatchdog("wd", 1, store, func(string, ...any) {})
	if err != nil {
		t.Fatal(err)
	}
	name := cgroupName(ownerHash("wd", store), 1, "1.1")
	p := startEscaped(t, h, name)
	wd.add(filepath.Join(h.base, name))
	wd.close() // end of file, as when the daemon dies; it waits for the watchdog to exit
	if live(p.Pid) {
		t.Errorf("pid %d outlived its watchdog's daemon", p.Pid)
	}
	if _, err := os.Stat(filepath.Join(h.base, name)); err == nil {
		t.Errorf("%s is still there", name)
	}
}
