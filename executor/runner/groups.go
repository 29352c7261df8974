package runner

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/poolflow/poolflow/internal/procfs"
)

// Processes on this host: which processes belong to which owner (by the environment tags every
// attempt carries), killing process groups and waiting for them to go.

// Tagged finds the processes of owner id on the store at storePath whose epoch matches, by the
// environment variables every attempt carries (§3.4): those of a previous life of this
// daemon, or of a dead owner, whose process groups may not have reached the store. It returns
// their process groups, this process's own group excepted.
func Tagged(id, storePath string, match func(epoch int64) bool) map[int]bool {
	out := map[int]bool{}
	procs, _ := filepath.Glob("/proc/[0-9]*/environ")
	wantID := []byte("\x00" + envDaemonID + "=" + id + "\x00")
	wantStore := []byte("\x00" + envStore + "=" + storePath + "\x00")
	wantAttempt := []byte("\x00" + envAttempt + "=")
	self, selfGroup := os.Getpid(), syscall.Getpgrp()
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err != nil || len(b) == 0 {
			continue
		}
		env := append(append([]byte{0}, b...), 0)
		if !bytes.Contains(env, wantAttempt) || !bytes.Contains(env, wantID) || !bytes.Contains(env, wantStore) {
			continue
		}
		epoch, ok := envInt(env, envEpoch)
		if !ok || !match(epoch) {
			continue
		}
		pid, err := strconv.Atoi(filepath.Base(filepath.Dir(p)))
		if err != nil || pid == self {
			continue
		}
		if pgid, err := syscall.Getpgid(pid); err == nil && pgid != selfGroup {
			out[pgid] = true
		}
	}
	return out
}

// envInt reads the integer variable key from a NUL-framed environment.
func envInt(env []byte, key string) (int64, bool) {
	k := []byte("\x00" + key + "=")
	i := bytes.Index(env, k)
	if i < 0 {
		return 0, false
	}
	rest := env[i+len(k):]
	if j := bytes.IndexByte(rest, 0); j >= 0 {
		rest = rest[:j]
	}
	v, err := strconv.ParseInt(string(rest), 10, 64)
	return v, err == nil
}

// OwnedGroup reports whether process group pgid (recorded on a claim) still belongs to owner
// id: a pid is never reused while a group of that id exists, so a group whose leader is gone is
// the recorded one; a group whose leader lives is the owner's only if the leader carries its
// tags. This keeps a kill of a recorded pgid from hitting an unrelated group that reused it.
func OwnedGroup(pgid int, id, storePath string) bool {
	if pgid <= 1 || syscall.Kill(-pgid, 0) != nil {
		return false
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pgid) + "/environ")
	if err != nil || len(b) == 0 {
		st, ok := procfs.ReadStat(pgid)
		return !ok || st.Pgrp != pgid // leader gone (or a zombie that left): the recorded group
	}
	env := append(append([]byte{0}, b...), 0)
	return bytes.Contains(env, []byte("\x00"+envDaemonID+"="+id+"\x00")) &&
		bytes.Contains(env, []byte("\x00"+envStore+"="+storePath+"\x00"))
}

// KillGroups SIGKILLs every group and waits until none has a live member, up to limit; it
// reports whether they are all gone.
func KillGroups(groups map[int]bool, limit time.Duration) bool {
	for pgid := range groups {
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
	}
	return waitGone(groups, limit)
}

// waitGone waits until the groups have no live member, up to limit. Zombies count as gone:
// their parent reaps them, and they hold nothing.
func waitGone(groups map[int]bool, limit time.Duration) bool {
	deadline := time.Now().Add(limit)
	for pgid := range groups {
		for groupLive(pgid) {
			if time.Now().After(deadline) {
				return false
			}
			time.Sleep(2 * time.Millisecond) // polling the kernel: a group's end has no event
		}
	}
	return true
}

// groupLive reports whether process group pgid has a member that is not a zombie. kill(-pgid,
// 0) also succeeds for zombies, so a group that answers is looked at member by member only then.
func groupLive(pgid int) bool {
	if syscall.Kill(-pgid, 0) != nil {
		return false
	}
	if st, ok := procfs.ReadStat(pgid); ok && st.Pgrp == pgid && st.State != 'Z' {
		return true // the leader itself lives
	}
	procs, _ := os.ReadDir("/proc")
	for _, p := range procs {
		pid, err := strconv.Atoi(p.Name())
		if err != nil {
			continue
		}
		if st, ok := procfs.ReadStat(pid); ok && st.Pgrp == pgid && st.State != 'Z' {
			return true
		}
	}
	return false
}
