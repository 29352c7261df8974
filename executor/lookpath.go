package executor

import (
	"os"
	"os/exec"
	"strings"
	"sync"
)

// pathCache remembers where PATH lookups found a command, as a shell's hash table does: on a
// slow file system, searching a long PATH for every attempt costs a stat per folder.
type pathCache struct {
	mu    sync.Mutex
	path  string // the PATH the entries were found under
	found map[string]string
}

// command builds an exec.Cmd for argv, resolving argv[0] through the cache. A cached path that
// no longer exists is looked up again.
func (c *pathCache) command(argv []string) *exec.Cmd {
	name := argv[0]
	if strings.ContainsRune(name, '/') {
		return exec.Command(name, argv[1:]...)
	}
	envPath := os.Getenv("PATH")
	c.mu.Lock()
	if c.path != envPath || c.found == nil {
		c.path, c.found = envPath, map[string]string{}
	}
	full, ok := c.found[name]
	c.mu.Unlock()
	if ok {
		if _, err := os.Stat(full); err == nil {
			cmd := exec.Command(full, argv[1:]...)
			cmd.Args[0] = name
			return cmd
		}
	}
	cmd := exec.Command(name, argv[1:]...)
	if cmd.Err == nil {
		c.mu.Lock()
		c.found[name] = cmd.Path
		c.mu.Unlock()
	}
	return cmd
}
