package executor

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/poolflow/poolflow/store"
)

// Processes on this host: who is alive, which processes belong to which owner (by the
// environment tags every attempt carries), and the orphans an attempt leaves behind.

// procStat is what /proc/<pid>/stat says about a process.
type procStat struct {
	state     byte  // R, S, D, Z, …
	ppid      int   // parent
	pgrp, sid int   // process group and session
	start     int64 // start time in clock ticks after boot
}

// readStat parses /proc/<pid>/stat; ok is false when the process is gone. Every attempt's end
// reads it for the leader and its group, so it reads into a buffer on the stack and parses
// in place rather than allocating the file and fifty strings.
func readStat(pid int) (procStat, bool) {
	var buf [1024]byte
	b, ok := readSmall("/proc/"+strconv.Itoa(pid)+"/stat", buf[:])
	if !ok {
		return procStat{}, false
	}
	return parseStat(b)
}

// readSmall reads a file that fits in buf (one read of a /proc file returns it whole), or
// reads it with os.ReadFile when it does not.
func readSmall(path string, buf []byte) ([]byte, bool) {
	fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, false
	}
	n, err := syscall.Read(fd, buf)
	syscall.Close(fd)
	if err != nil || n < 0 {
		return nil, false
	}
	if n == len(buf) {
		b, err := os.ReadFile(path)
		return b, err == nil
	}
	return buf[:n], true
}

// parseStat reads the fields of a /proc/<pid>/stat line. The command name may hold spaces and
// parentheses: the fields start after the last ')'.
func parseStat(b []byte) (procStat, bool) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return procStat{}, false
	}
	var st procStat
	field := 0 // field 0 is the state, after the command name
	for rest := b[i+2:]; len(rest) > 0 && field <= 19; field++ {
		f := rest
		if j := bytes.IndexAny(rest, " \n"); j >= 0 {
			f, rest = rest[:j], bytes.TrimLeft(rest[j:], " \n")
		} else {
			rest = nil
		}
		if len(f) == 0 {
			return procStat{}, false
		}
		switch field {
		case 0:
			st.state = f[0]
		case 1:
			st.ppid = int(atoiBytes(f))
		case 2:
			st.pgrp = int(atoiBytes(f))
		case 3:
			st.sid = int(atoiBytes(f))
		case 19:
			st.start = atoiBytes(f)
		}
	}
	return st, field > 19
}

// atoiBytes is strconv.ParseInt of a decimal field, without a string; a malformed one is 0,
// as strconv's error was ignored before. Negative values (a stat field may be -1) are read.
func atoiBytes(f []byte) int64 {
	neg := len(f) > 0 && f[0] == '-'
	if neg {
		f = f[1:]
	}
	var n int64
	for _, c := range f {
		if c < '0' || c > '9' {
			return 0
		}
		n = n*10 + int64(c-'0')
	}
	if neg {
		return -n
	}
	return n
}

// selfStart is this process's start time, recorded on its owner row so a reused pid is not
// taken for it.
var selfStart = sync.OnceValue(func() int64 {
	st, _ := readStat(os.Getpid())
	return st.start
})

// processAlive reports whether pid runs and, when start is known, is the process that started
// then (not a later one that reused the pid). A zombie is dead.
func processAlive(pid int, start int64) bool {
	if pid <= 0 {
		return false
	}
	st, ok := readStat(pid)
	if !ok || st.state == 'Z' || st.state == 'X' {
		return false
	}
	return start == 0 || st.start == start
}

// processAliveOwner is a procCheck for processes outside any daemon (the CLI).
func processAliveOwner(o store.Owner) bool { return processAlive(o.PID, o.ProcStart) }

// inProcess records the owners that run in this process, by store and id, with their epoch:
// several daemons may share one process (tests, programs embedding poolflow), and a pid check
// cannot tell a stopped one from a running one.
var inProcess = struct {
	sync.Mutex
	m map[string]int64
}{m: map[string]int64{}}

func inProcessKey(storePath, id string) string { return storePath + "\x00" + id }

func setInProcess(storePath, id string, epoch int64) {
	inProcess.Lock()
	defer inProcess.Unlock()
	if epoch == 0 {
		delete(inProcess.m, inProcessKey(storePath, id))
		return
	}
	inProcess.m[inProcessKey(storePath, id)] = epoch
}

// localAlive is the loop's procCheck: another process by pid and start time, this process by
// its registry of running owners.
func (l *loop) localAlive(o store.Owner) bool { return aliveOn(l.st.Path())(o) }

// aliveOn is the procCheck of a process using the store at storePath.
func aliveOn(storePath string) procCheck {
	return func(o store.Owner) bool {
		if o.PID == os.Getpid() {
			inProcess.Lock()
			defer inProcess.Unlock()
			return inProcess.m[inProcessKey(storePath, o.ID)] == o.Epoch
		}
		return processAlive(o.PID, o.ProcStart)
	}
}

// tagged finds the processes of owner id on the store at storePath whose epoch matches, by the
// environment variables every attempt carries (§3.4): those of a previous life of this
// daemon, or of a dead owner, whose process groups may not have reached the store. It returns
// their process groups, this process's own group excepted.
func tagged(id, storePath string, match func(epoch int64) bool) map[int]bool {
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

// ownedGroup reports whether process group pgid (recorded on a claim) still belongs to owner
// id: a pid is never reused while a group of that id exists, so a group whose leader is gone is
// the recorded one; a group whose leader lives is the owner's only if the leader carries its
// tags. This keeps a kill of a recorded pgid from hitting an unrelated group that reused it.
func ownedGroup(pgid int, id, storePath string) bool {
	if pgid <= 1 || syscall.Kill(-pgid, 0) != nil {
		return false
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pgid) + "/environ")
	if err != nil || len(b) == 0 {
		st, ok := readStat(pgid)
		return !ok || st.pgrp != pgid // leader gone (or a zombie that left): the recorded group
	}
	env := append(append([]byte{0}, b...), 0)
	return bytes.Contains(env, []byte("\x00"+envDaemonID+"="+id+"\x00")) &&
		bytes.Contains(env, []byte("\x00"+envStore+"="+storePath+"\x00"))
}

// killGroups SIGKILLs every group and waits until none has a live member, up to limit; it
// reports whether they are all gone.
func killGroups(groups map[int]bool, limit time.Duration) bool {
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
	if st, ok := readStat(pgid); ok && st.pgrp == pgid && st.state != 'Z' {
		return true // the leader itself lives
	}
	procs, _ := os.ReadDir("/proc")
	for _, p := range procs {
		pid, err := strconv.Atoi(p.Name())
		if err != nil {
			continue
		}
		if st, ok := readStat(pid); ok && st.pgrp == pgid && st.state != 'Z' {
			return true
		}
	}
	return false
}
