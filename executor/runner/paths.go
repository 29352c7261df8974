package runner

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

// lookup resolves argv[0] through the cache as exec.Command would: a name with a slash is
// taken as it is (relative to the attempt's workdir), another is searched in PATH. A cached path
// that no longer exists is looked up again.
func (c *pathCache) lookup(name string) (string, error) {
	if strings.ContainsRune(name, '/') {
		return name, nil
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
			return full, nil
		}
	}
	full, err := exec.LookPath(name)
	if err != nil {
		return "", err
	}
	c.mu.Lock()
	c.found[name] = full
	c.mu.Unlock()
	return full, nil
}
