package decide

import (
	"github.com/poolflow/poolflow/dag"
	"github.com/poolflow/poolflow/store"
)

// DAG versions (§12). A load that records the loaded DAGs numbers their versions from the
// stored ones it read under the writers' lock (Input.VersionKeys): a source seen before keeps
// its number, a new one takes its DAG's highest + 1. The numbers are decided here, before they
// are written, because the runs the same pass creates record them (as the ids come first).

// Version is one loaded DAG's version as SyncDAGs records it.
type Version struct {
	DAG     *dag.DAG
	Version int
	New     bool // not stored yet: its source is written
}

// numberVersions gives each loaded DAG the number of its version and returns what SyncDAGs
// records.
func (ps *pass) numberVersions() []Version {
	known := map[string]map[string]int{}
	top := map[string]int{}
	for _, k := range ps.in.VersionKeys {
		if known[k.DAGID] == nil {
			known[k.DAGID] = map[string]int{}
		}
		known[k.DAGID][k.Hash] = k.Version
		top[k.DAGID] = max(top[k.DAGID], k.Version)
	}
	out := make([]Version, 0, len(ps.dags.List))
	numbers := make(map[*dag.DAG]int, len(ps.dags.List))
	for _, d := range ps.dags.List {
		n, seen := known[d.ID][d.SourceHash()]
		if !seen {
			n = top[d.ID] + 1
			top[d.ID] = n
		}
		numbers[d] = n
		out = append(out, Version{DAG: d, Version: n, New: !seen})
	}
	ps.versions = numbers
	return out
}

// addAttempt keeps an ended attempt to write at the end of the pass, with the version it ran:
// the one its try was admitted under, or for a try that never started (expired, rejected, an
// approval) the one in force now.
func (ps *pass) addAttempt(a *store.Attempt) {
	if run := ps.st.Runs[a.Run]; run != nil && a.Version == 0 {
		if ti := run.TIs[a.TaskID]; ti != nil && ti.RanTry == a.TryNumber && ti.RanVersion != 0 {
			a.Version = ti.RanVersion
		} else {
			a.Version = ps.versionOf(run.DAG)
		}
	}
	ps.attempts = append(ps.attempts, a)
}
