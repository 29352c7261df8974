package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"syscall"
	"time"
)

// result is one timed command.
type result struct {
	wall, user, sys time.Duration
	rss             int64 // peak resident set, KiB
}

// timed runs cmd to its end.
func timed(cmd *exec.Cmd) (result, error) {
	start := time.Now()
	err := cmd.Run()
	res := result{wall: time.Since(start)}
	if ps := cmd.ProcessState; ps != nil {
		res.user, res.sys = ps.UserTime(), ps.SystemTime()
		if ru, ok := ps.SysUsage().(*syscall.Rusage); ok {
			res.rss = ru.Maxrss
		}
	}
	return res, err
}

// floor is what one chain step cannot avoid on this machine: a commit's fsync and starting the
// task's process.
type floor struct {
	fsync, fork time.Duration
}

// measureFloor takes the median of many fsyncs of a small append in the benchmark's folder
// (the file system the store uses) and of many fork+exec+waits of /bin/true from Go.
func measureFloor(dir string) (floor, error) {
	const n = 300
	f, err := os.Create(filepath.Join(dir, "fsync-probe"))
	if err != nil {
		return floor{}, err
	}
	defer f.Close()
	page := make([]byte, 4096)
	syncs := make([]time.Duration, 0, n)
	for i := 0; i < n; i++ {
		start := time.Now()
		if _, err := f.Write(page); err != nil {
			return floor{}, err
		}
		if err := f.Sync(); err != nil {
			return floor{}, err
		}
		syncs = append(syncs, time.Since(start))
	}
	forks := make([]time.Duration, 0, n)
	for i := 0; i < n; i++ {
		start := time.Now()
		if err := exec.Command("/bin/true").Run(); err != nil {
			return floor{}, fmt.Errorf("fork probe: %w", err)
		}
		forks = append(forks, time.Since(start))
	}
	return floor{fsync: median(syncs), fork: median(forks)}, nil
}

func median(ds []time.Duration) time.Duration {
	slices.Sort(ds)
	return ds[len(ds)/2]
}
