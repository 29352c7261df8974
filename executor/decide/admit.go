package decide

import (
	"fmt"

	"github.com/poolflow/poolflow/executor/attempt"
	"github.com/poolflow/poolflow/executor/state"
	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/vocab"
)

// admit decides admission: expired entries fail their attempt, admitted ones debit every pool
// they need, entries that can never fit are rejected (§4.3–§4.6). Occupancy is the claims read
// in this pass's transaction less those it released, so several daemons never exceed a
// capacity. The decision comes from memory's pools.Queue, whose cost follows what changed, not
// the queue's length; why the others wait is computed when someone reads it (package explain),
// not written here.
func (ps *pass) admit() {
	ps.expireLeases()
	prev := ps.st.Used
	ps.st.Used = ps.st.UsedSlots()
	q := ps.st.SyncQueue()
	dec := q.Pass(ps.now)
	for _, id := range dec.Expired {
		le := ps.st.Entries[id]
		if le == nil || le.Run.Shared {
			continue // another owner's entry: its owner expires it
		}
		reason := fmt.Sprintf("queue_timeout %s passed while waiting", le.TI.Task.QueueTimeout)
		ps.notify(Notice{Kind: NoticeExpired, DAGID: le.Run.DAGID, RunID: le.Run.RunID, TaskID: le.TaskID,
			Try: le.TryNumber, Reason: vocab.ReasonExpired.Say(reason), Pool: le.FirstPool()})
		ps.schedEvent(vocab.ActionExpired, le.Run, le.TaskID, le.TryNumber, le.FirstPool(), reason)
		ps.endWaiting(le, vocab.EntryExpired, reason)
	}
	lease := ps.now.Add(ps.cfg.Lease)
	for _, id := range dec.Admitted {
		le := ps.st.Entries[id]
		if le == nil {
			continue
		}
		// The attempt runs the version of its DAG loaded now (§12): its entry records it.
		le.Version = ps.versionOf(le.Run.DAG)
		debit := le.Entry
		debit.Needs, _ = le.Remaining() // a re-poking sensor already holds its kept claims
		ps.p.add(Admit{debit, lease})
		le.State, le.ReasonCode, le.Reason, le.Holder = vocab.EntryAdmitted, "", "", ps.cfg.DaemonID
		ti := le.TI
		ti.State, ti.TryNumber = vocab.TaskRunning, le.TryNumber
		ti.RanTry, ti.RanVersion = le.TryNumber, le.Version
		// start_date is taken when the process starts, after this commit (§3.1); a reschedule
		// sensor keeps its first poke's.
		if le.Pokes == 0 {
			ti.StartDate = timeZero
		}
		ti.EndDate, ti.ReasonCode, ti.Reason = timeZero, "", ""
		ps.st.Touch(ti)
		ps.admitted = append(ps.admitted, le)
		run := le.Run
		task, fail := ps.startTask(run, ti, le.TryNumber)
		ps.p.Starts = append(ps.p.Starts, &attempt.Spec{Entry: le.ID, DAGID: run.DAGID, RunID: run.RunID, Task: task,
			Try: le.TryNumber, Logical: run.LogicalDate, Params: run.Params, Replay: le.Replay, Fail: fail})
		if ti.Instance {
			sp := ps.p.Starts[len(ps.p.Starts)-1]
			sp.Mapped, sp.MapIndex = true, ti.MapIndex
			if items, err := ps.items(run, run.TIs[ti.Base]); err == nil && ti.MapIndex < len(items) {
				sp.Item = items[ti.MapIndex]
			}
		}
		ps.notify(Notice{Kind: NoticeAdmitted, DAGID: run.DAGID, RunID: run.RunID, TaskID: le.TaskID,
			Try: le.TryNumber, Duration: ps.now.Sub(le.CreatedAt), Pool: ps.waitedOn(le, prev)})
	}
	// The queue takes the decision now: the rest of the pass (a refused no-queue start's
	// reason) reads what it left. Should the pass not commit, memory is loaded again.
	q.Apply(dec)
	ps.finishDrains()
	for _, rj := range dec.Rejected {
		le := ps.st.Entries[rj.Entry]
		if le == nil || le.Run.Shared || rj.Reason.Kind != vocab.ReasonOverCapacity || ps.drainFits(rj.Reason.Pool, rj.Reason.Need) {
			continue // an unknown pool may still be created; a draining pool may come to fit
		}
		ps.schedEvent(vocab.ActionRejected, le.Run, le.TaskID, le.TryNumber, rj.Reason.Pool, rj.Reason.String())
		ps.endWaiting(le, vocab.EntryRejected, rj.Reason.String())
	}
}

// expireLeases releases the claims whose lease lapsed and whose holder is not an owner this
// daemon knows (state.ExpiredClaims): the entry goes back to the queue with its try number
// (§4.8), and memory is read again at the next pass.
func (ps *pass) expireLeases() {
	expired, minLease := ps.st.ExpiredClaims(ps.now)
	ps.MinLease = minLease
	if len(expired) == 0 {
		return
	}
	for _, id := range expired {
		ps.p.warn("lease expired; entry back in the queue", keyEntry, id)
		ps.p.add(ReleaseEntry{id})
		ps.st.Release(id)
	}
	// Entries changed state: read them again on the next pass.
	ps.st.Invalidate()
}

// waitedOn names the pool an admitted entry waited on, for its notice (the wait-time metrics):
// the first of its pools, named ones before limits, in requirement order, that had no room for
// it at the previous pass (used then); else its first named pool. A pass computes no reasons,
// and the pool that held an entry back is the one whose room came in this pass.
func (ps *pass) waitedOn(le *state.Entry, used map[string]int) string {
	for _, implicit := range []bool{false, true} {
		for _, n := range le.Needs {
			if n.Implicit != implicit {
				continue
			}
			capacity := n.Capacity
			if !n.Implicit {
				sp, ok := ps.st.Pools[n.Pool]
				if !ok {
					continue
				}
				capacity = sp.Slots
			}
			if capacity >= 0 && used[n.Pool]+n.Slots > capacity {
				return n.Pool
			}
		}
	}
	return le.FirstPool()
}

// finishDrains asks the store to switch draining pools whose old queue is empty to their new
// capacity (§4.7); memory takes the new capacity once the pass committed (Committed).
func (ps *pass) finishDrains() {
	var names []string
	for name, sp := range ps.st.Pools {
		if sp.TargetSlots != store.NoTarget {
			names = append(names, name)
		}
	}
	if len(names) > 0 {
		ps.p.add(FinishDrains{names})
	}
}

// drainFits reports whether a pool is draining toward a capacity that fits need (§4.6).
func (ps *pass) drainFits(pool string, need int) bool {
	sp, ok := ps.st.Pools[pool]
	return ok && sp.TargetSlots != store.NoTarget && (sp.TargetSlots == -1 || sp.TargetSlots >= need)
}
