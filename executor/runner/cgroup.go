package runner

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Attempts in cgroups. A process group holds only what stays in it; a descendant that starts
// its own session and clears its environment leaves every trace the sweep looks for
// (reaper.go). Where this process's cgroup v2 is writable (a delegated subtree, or root), each
// attempt runs in a cgroup of its own instead, and its end is cgroup.kill: nothing the attempt
// started survives it, however it left its group.
//
// The layout, from this process's cgroup at start (<own>, from /proc/self/cgroup):
//
//	<own>/daemon              this process, moved there at start (cgroup v2 allows processes
//	                          only in the leaves of a subtree whose controllers are in use)
//	<own>/a-<h>-<epoch>-<tag> one attempt: h names the owner (daemon id and store), epoch its
//	                          life, tag is the attempt's POOLFLOW_ATTEMPT
//
// The leader is started inside its cgroup by clone3 (CLONE_INTO_CGROUP): there is no moment when
// it runs outside it. At the attempt's end the cgroup is killed, emptied (inotify on
// cgroup.events says when) and removed. Because the name carries the owner and its epoch, a
// restart or a takeover finds a dead owner's attempt cgroups on this host by name, and the
// watchdog is told each one before its leader starts.
//
// Where cgroup v2 is not writable (cgroup v1 hosts, a read-only /sys/fs/cgroup in a container,
// a kernel before 5.14, clone3 refused by seccomp) attempts run in process groups as before.

const (
	cgroupLeaf     = "daemon"                // this process's leaf under its cgroup
	envCgroupProbe = "POOLFLOW_CGROUP_PROBE" // the probe child: the cgroup it must find itself in
)

func init() {
	// The probe started at detection: it reports whether clone3 put it where it was asked to.
	if want, ok := os.LookupEnv(envCgroupProbe); ok {
		if own, err := ownCgroup(); err == nil && own == want {
			os.Exit(0)
		}
		os.Exit(3)
	}
}

// cgroupHost is where this process makes its attempts' cgroups.
type cgroupHost struct {
	base string // this process's cgroup at start, in the cgroup2 mount
}

// hostCgroups detects once per process whether attempts can run in cgroups, and if they can,
// moves this process into its leaf; the error says why they cannot.
var hostCgroups = sync.OnceValues(detectCgroups)

func detectCgroups() (*cgroupHost, error) {
	own, err := ownCgroup()
	if err != nil {
		return nil, err
	}
	base, err := cgroupDir(own)
	if err != nil {
		return nil, err
	}
	leaf := filepath.Join(base, cgroupLeaf)
	made := true
	if err := syscall.Mkdir(leaf, 0o755); err == syscall.EEXIST {
		made = false
	} else if err != nil {
		return nil, fmt.Errorf("mkdir %s: %w", leaf, err)
	}
	undo := func() {
		if made {
			_ = syscall.Rmdir(leaf)
		}
	}
	if _, err := os.Stat(filepath.Join(leaf, "cgroup.kill")); err != nil {
		undo()
		return nil, fmt.Errorf("%s has no cgroup.kill (kernel before 5.14)", leaf)
	}
	h := &cgroupHost{base: base}
	if err := h.probe(own); err != nil {
		undo()
		return nil, err
	}
	if err := writeCgroupFile(filepath.Join(leaf, "cgroup.procs"), strconv.Itoa(os.Getpid())); err != nil {
		undo()
		return nil, fmt.Errorf("move this process into %s: %w", leaf, err)
	}
	return h, nil
}

// probe starts this binary into a cgroup of its own, as an attempt's leader would be, and asks
// it whether it runs there: clone3 may be refused (seccomp profiles answer ENOSYS) or the
// cgroup not be ours to enter. It costs one exec of the binary, once per process.
func (h *cgroupHost) probe(own string) error {
	name := "probe-" + strconv.Itoa(os.Getpid())
	cg, err := h.create(name)
	if err != nil {
		return err
	}
	defer func() {
		cg.kill()
		cg.wait(time.Second)
		_ = cg.remove()
	}()
	null := devNull()
	if null == nil {
		return errors.New("open " + os.DevNull)
	}
	proc, err := os.StartProcess("/proc/self/exe", []string{"poolflow-cgroup-probe"}, &os.ProcAttr{
		Env:   []string{envCgroupProbe + "=" + path.Join(own, name), "GORACE=atexit_sleep_ms=0"},
		Files: []*os.File{null, null, null},
		Sys:   &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: cg.fd}})
	cg.closeFD()
	if err != nil {
		return fmt.Errorf("start a process in %s (clone3 CLONE_INTO_CGROUP): %w", cg.dir, err)
	}
	st, err := proc.Wait()
	if err != nil {
		return fmt.Errorf("probe in %s: %w", cg.dir, err)
	}
	if !st.Success() {
		return fmt.Errorf("a process started into %s does not run there (%s)", cg.dir, st)
	}
	return nil
}

// ownCgroup is this process's cgroup v2 path, relative to its cgroup namespace.
func ownCgroup() (string, error) {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if p, ok := strings.CutPrefix(line, "0::"); ok {
			if !strings.HasPrefix(p, "/") || strings.HasSuffix(p, " (deleted)") {
				return "", fmt.Errorf("this process's cgroup %q is outside its namespace", p)
			}
			return p, nil
		}
	}
	return "", errors.New("no cgroup v2 hierarchy (cgroup v1 only)")
}

// cgroupDir is where the cgroup v2 path own is in this process's mounts.
func cgroupDir(own string) (string, error) {
	mounts, err := cgroup2Mounts()
	if err != nil {
		return "", err
	}
	for _, m := range mounts {
		rel, ok := strings.CutPrefix(own, m.root)
		if ok && (m.root == "/" || rel == "" || rel[0] == '/') {
			return filepath.Join(m.point, rel), nil
		}
	}
	if len(mounts) == 0 {
		return "", errors.New("cgroup2 is not mounted")
	}
	return "", fmt.Errorf("this process's cgroup %s is not under a cgroup2 mount", own)
}

type mount struct{ root, point string }

// cgroup2Mounts lists the cgroup2 mounts of this process's mount namespace.
func cgroup2Mounts() ([]mount, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []mount
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// id parent major:minor root point options [optional...] - fstype source super
		fields := strings.Fields(sc.Text())
		for i := 6; i+1 < len(fields); i++ {
			if fields[i] == "-" {
				if fields[i+1] == "cgroup2" && len(fields) > 4 {
					out = append(out, mount{root: unescapeMount(fields[3]), point: unescapeMount(fields[4])})
				}
				break
			}
		}
	}
	return out, sc.Err()
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// ownerHash names an owner (daemon id and store) in its attempts' cgroup names, which must be
// short and plain whatever the id holds.
func ownerHash(id, storePath string) string {
	sum := sha256.Sum256([]byte(id + "\x00" + storePath))
	return hex.EncodeToString(sum[:6])
}

// cgroupName is the name of an attempt's cgroup: a-<owner>-<epoch>-<tag>.
func cgroupName(owner string, epoch int64, tag string) string {
	return "a-" + owner + "-" + strconv.FormatInt(epoch, 10) + "-" + tag
}

// cgroupEpoch reads the epoch of owner's attempt cgroup name; ok is false for any other name.
func cgroupEpoch(name, owner string) (int64, bool) {
	rest, ok := strings.CutPrefix(name, "a-"+owner+"-")
	if !ok {
		return 0, false
	}
	e, _, ok := strings.Cut(rest, "-")
	if !ok {
		return 0, false
	}
	epoch, err := strconv.ParseInt(e, 10, 64)
	return epoch, err == nil
}

// attemptCgroup is the cgroup of one attempt's process.
type attemptCgroup struct {
	dir string
	fd  int // the directory, open until the leader is started into it; -1 after
}

// create makes the cgroup name under the base and opens it for clone3. One left by an earlier
// run under the same name (a sensor's previous poke whose removal failed) is emptied first.
func (h *cgroupHost) create(name string) (*attemptCgroup, error) {
	cg := &attemptCgroup{dir: filepath.Join(h.base, name), fd: -1}
	err := syscall.Mkdir(cg.dir, 0o755)
	if err == syscall.EEXIST {
		cg.kill()
		if !cg.wait(time.Second) {
			return nil, fmt.Errorf("%s exists and its processes survive cgroup.kill", cg.dir)
		}
	} else if err != nil {
		return nil, fmt.Errorf("mkdir %s: %w", cg.dir, err)
	}
	if cg.fd, err = syscall.Open(cg.dir, unix.O_PATH|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0); err != nil {
		_ = syscall.Rmdir(cg.dir)
		return nil, fmt.Errorf("open %s: %w", cg.dir, err)
	}
	return cg, nil
}

func (cg *attemptCgroup) closeFD() {
	if cg != nil && cg.fd >= 0 {
		syscall.Close(cg.fd)
		cg.fd = -1
	}
}

// kill SIGKILLs every process in the cgroup and its descendants (cgroup.kill); they end
// asynchronously, wait says when.
func (cg *attemptCgroup) kill() { _ = writeCgroupFile(cg.dir+"/cgroup.kill", "1") }

// signal sends sig to every process in the cgroup (a SIGTERM that must reach the processes
// that left the attempt's group too).
func (cg *attemptCgroup) signal(sig syscall.Signal) {
	b, err := os.ReadFile(cg.dir + "/cgroup.procs")
	if err != nil {
		return
	}
	for _, pid := range appendPids(nil, b) {
		_ = syscall.Kill(pid, sig)
	}
}

// populated reads cgroup.events: whether a live process is in the cgroup or below it. A
// cgroup that is gone holds none.
func populated(events string) bool {
	var buf [128]byte
	fd, err := syscall.Open(events, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return false
	}
	n, _ := syscall.Read(fd, buf[:])
	syscall.Close(fd)
	return n > 0 && strings.Contains(string(buf[:n]), "populated 1")
}

func (cg *attemptCgroup) populated() bool { return populated(cg.dir + "/cgroup.events") }

// wait waits until the cgroup holds no live process, up to limit, and reports whether it is
// empty. The kernel signals the change as a modification of cgroup.events, which inotify
// delivers; without inotify it polls every few milliseconds.
func (cg *attemptCgroup) wait(limit time.Duration) bool {
	events := cg.dir + "/cgroup.events"
	if !populated(events) {
		return true // the usual end: the leader was the last process
	}
	deadline := time.Now().Add(limit)
	fd, err := syscall.InotifyInit1(syscall.IN_CLOEXEC | syscall.IN_NONBLOCK)
	if err == nil {
		if _, err = syscall.InotifyAddWatch(fd, events, syscall.IN_MODIFY); err != nil {
			syscall.Close(fd)
		}
	}
	if err != nil {
		for populated(events) {
			if time.Now().After(deadline) {
				return false
			}
			time.Sleep(2 * time.Millisecond)
		}
		return true
	}
	f := os.NewFile(uintptr(fd), "inotify") // non-blocking: the runtime's poller waits on it
	defer f.Close()
	_ = f.SetReadDeadline(deadline)
	var buf [256]byte
	for populated(events) { // read again after each event, and once after the watch was added
		if _, err := f.Read(buf[:]); err != nil {
			return !populated(events)
		}
	}
	return true
}

// remove removes the emptied cgroup (and cgroups a task made below it). An rmdir may find the
// cgroup busy for a moment after its last process ended; it is tried again for up to a second.
func (cg *attemptCgroup) remove() error { return removeCgroup(cg.dir, time.Second) }

func removeCgroup(dir string, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for wait := 100 * time.Microsecond; ; wait = min(2*wait, 20*time.Millisecond) {
		err := syscall.Rmdir(dir)
		switch {
		case err == nil || err == syscall.ENOENT:
			return nil
		case err == syscall.ENOTEMPTY:
			ents, _ := os.ReadDir(dir)
			for _, e := range ents {
				if e.IsDir() {
					_ = removeCgroup(filepath.Join(dir, e.Name()), time.Until(deadline))
				}
			}
		case err != syscall.EBUSY:
			return fmt.Errorf("rmdir %s: %w", dir, err)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("rmdir %s: %w", dir, err)
		}
		time.Sleep(wait)
	}
}

func writeCgroupFile(path, value string) error {
	fd, err := syscall.Open(path, syscall.O_WRONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer syscall.Close(fd)
	_, err = syscall.Write(fd, []byte(value))
	return err
}

// KillCgroups stops the attempt cgroups on this host of owner id on the store at storePath
// whose epoch matches — a previous life of this daemon, or a dead owner — wherever they are in
// the cgroup v2 hierarchy: cgroup.kill, then it waits up to limit for them to empty and removes
// them. It returns how many it found and whether they are all empty; a host without cgroup v2
// has none.
func KillCgroups(id, storePath string, match func(epoch int64) bool, limit time.Duration) (int, bool) {
	found := findCgroups(ownerHash(id, storePath), match)
	for _, dir := range found {
		(&attemptCgroup{dir: dir}).kill()
	}
	return len(found), waitRemove(found, limit)
}

// killCgroupDirs stops the cgroups the watchdog was told about.
func killCgroupDirs(dirs []string, limit time.Duration) bool {
	for _, dir := range dirs {
		(&attemptCgroup{dir: dir}).kill()
	}
	return waitRemove(dirs, limit)
}

func waitRemove(dirs []string, limit time.Duration) bool {
	deadline := time.Now().Add(limit)
	empty := true
	for _, dir := range dirs {
		cg := &attemptCgroup{dir: dir}
		if !cg.wait(time.Until(deadline)) {
			empty = false
			continue
		}
		_ = cg.remove()
	}
	return empty
}

// findCgroups walks the cgroup v2 hierarchy for owner's attempt cgroups whose epoch matches.
// It does not descend into the cgroups it finds (cgroup.kill reaches what is below them), but
// does into other attempts' (a daemon may run as a task of another).
func findCgroups(owner string, match func(int64) bool) []string {
	mounts, _ := cgroup2Mounts()
	var out []string
	seen := map[string]bool{}
	var walk func(dir string, depth int)
	walk = func(dir string, depth int) {
		ents, err := os.ReadDir(dir)
		if err != nil {
			return
		}
		for _, e := range ents {
			if !e.IsDir() {
				continue
			}
			p := filepath.Join(dir, e.Name())
			if epoch, ok := cgroupEpoch(e.Name(), owner); ok {
				if match(epoch) {
					out = append(out, p)
				}
				continue
			}
			if depth < 32 {
				walk(p, depth+1)
			}
		}
	}
	for _, m := range mounts {
		if seen[m.point] {
			continue
		}
		seen[m.point] = true
		if _, err := os.Stat(m.point); errors.Is(err, fs.ErrNotExist) {
			continue
		}
		walk(m.point, 0)
	}
	return out
}
