package owners

import (
	"os"
	"sync"

	"github.com/poolflow/poolflow/internal/procfs"
	"github.com/poolflow/poolflow/store"
)

// ProcessAlive is the Check of a process that runs no owner itself (the CLI, the API of a
// read-only process): an owner on this host is alive while its pid runs with its start time.
func ProcessAlive(o store.Owner) bool { return procfs.Alive(o.PID, o.ProcStart) }

// inProcess records the owners that run in this process, by store and id, with their epoch:
// several daemons may share one process (tests, programs embedding poolflow), and a pid check
// cannot tell a stopped one from a running one.
var inProcess = struct {
	sync.Mutex
	m map[string]int64
}{m: map[string]int64{}}

func inProcessKey(storePath, id string) string { return storePath + "\x00" + id }

// SetInProcess records that owner id runs in this process under epoch on the store at
// storePath; epoch 0 forgets it (a clean stop).
func SetInProcess(storePath, id string, epoch int64) {
	inProcess.Lock()
	defer inProcess.Unlock()
	if epoch == 0 {
		delete(inProcess.m, inProcessKey(storePath, id))
		return
	}
	inProcess.m[inProcessKey(storePath, id)] = epoch
}

// AliveOn is the Check of a process using the store at storePath: another process by pid and
// start time, this process by its record of the owners running in it.
func AliveOn(storePath string) Check {
	return func(o store.Owner) bool {
		if o.PID == os.Getpid() {
			inProcess.Lock()
			defer inProcess.Unlock()
			return inProcess.m[inProcessKey(storePath, o.ID)] == o.Epoch
		}
		return procfs.Alive(o.PID, o.ProcStart)
	}
}
