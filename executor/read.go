package executor

import (
	"context"
	"errors"
	"sort"
	"time"

	"github.com/poolflow/poolflow/dag"
	"github.com/poolflow/poolflow/executor/decide"
	"github.com/poolflow/poolflow/executor/state"
	"github.com/poolflow/poolflow/owners"
	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/vocab"
)

// read is the first half of a pass: inside its transaction, under the writers' lock, it reads
// what the decision needs — the change version; the owners when a look is due; memory's rows,
// all of them (a load) or those other processes stamped since memory's sequence (a refresh);
// the claims; the commands; the next ids; whether the triggers' run ids are taken — and hands
// them to the decider with the pass's time and events. It writes one thing, first: this
// owner's heartbeat (a daemon that can pass is alive, and its own claims must not look expired
// to the decision). It reports whether it renewed.
func (l *loop) read(ctx context.Context, tx store.Tx, now time.Time) (*decide.Input, bool, error) {
	dv, err := tx.DataVersion()
	if err != nil {
		return nil, false, err
	}
	l.notePending()
	mem := l.mem
	if dv != mem.DV {
		l.ownersDirty = true // memory is read again: under the owners' liveness as of now
	}
	renewed := false
	if now.Sub(l.lastRenew) >= l.cfg.RenewEvery {
		if err := l.renew(tx, now); err != nil {
			return nil, false, err
		}
		renewed = true
	}
	in := &decide.Input{Now: now, Epoch: l.epoch, Events: l.pending, DV: dv}
	viewChanged := false
	if mem.View == nil || l.ownersDirty || (!mem.View.NextExpiry.IsZero() && !now.Before(mem.View.NextExpiry)) {
		l.ownersDirty = false
		rows, err := tx.Owners()
		if err != nil {
			return nil, false, err
		}
		view := owners.NewView(rows, l.cfg.DaemonID, now, l.host, l.localAlive)
		in.View, in.Reaped, in.Reaping, in.TookOver = view, l.reaped, l.reaping, l.tookOver
		viewChanged = mem.View == nil || view.Sig != mem.View.Sig
		mem.View = view // what the fates below are decided under
	}
	if in.Claims, err = tx.Claims(); err != nil {
		return nil, false, err
	}
	if in.View != nil && !l.stopping && l.dec.TakeoverDue(in.View, l.reaped, l.tookOver) {
		return in, renewed, nil // a pass of its own: memory is read by the next one
	}
	if g := l.reg.generation(); g != l.regGen {
		l.takeDAGs(g)
	}
	var ps []store.Pool
	if dv != l.seenDV || !mem.Loaded {
		if ps, err = tx.Pools(); err != nil {
			return nil, false, err
		}
		l.offerStored(ctx, dv, ps)
	}
	full := l.regChanged || viewChanged || !mem.Loaded
	in.SyncDAGs, in.DAGsChanged = l.regChanged || !mem.Loaded, l.regChanged
	if !full && (dv != mem.DV || tx.Seq() != mem.Seq) {
		if ps == nil {
			if ps, err = tx.Pools(); err != nil {
				return nil, false, err
			}
		}
		ch, err := l.readChanges(tx, ps, in.Claims)
		if err != nil {
			return nil, false, err
		}
		full = ch == nil
		in.Refresh = ch
	}
	if full {
		if ps == nil {
			if ps, err = tx.Pools(); err != nil {
				return nil, false, err
			}
		}
		if sig := state.PoolSignature(ps); mem.PoolSig != "" && sig != mem.PoolSig {
			// DAGs are validated against the pools (§2.3): a forced shrink can make one invalid.
			// Decoding is cached (dag.Loader): only validation runs again here.
			l.reg.reload(true)
			l.takeDAGs(l.reg.generation())
			in.SyncDAGs, in.DAGsChanged = true, true
		}
		if in.Load, err = l.readAll(tx, ps, in.Claims); err != nil {
			return nil, false, err
		}
		if !l.serve() && mem.TestPK != 0 && !hasRun(in.Load.Runs, mem.TestPK) {
			// The test run ended elsewhere: a daemon failed it while this process could not renew.
			r, err := tx.RunByPK(mem.TestPK)
			if err != nil {
				return nil, false, err
			}
			in.TestRunEnded = &r
		}
	}
	l.regChanged = false
	// The pending commands, after an outside change, and at every pass while one waits for
	// something of this daemon's own (a forced deletion, for the attempts it stopped).
	if in.Load != nil || in.Refresh != nil || l.dec.CommandsWait {
		if in.Commands, err = tx.PendingCommands(owners.CommandOwners(mem.View, l.cfg.DaemonID, l.serve())); err != nil {
			return nil, false, err
		}
		in.CommandsRead = true
	}
	if err := l.commandRuns(tx, in); err != nil {
		return nil, false, err
	}
	if l.serve() && !l.stopping {
		if err := l.backfills(tx, in); err != nil {
			return nil, false, err
		}
	}
	if in.Load != nil || dv != mem.DV || mem.NextRunPK == 0 {
		if in.NextRunPK, in.NextEntryID, err = tx.NextIDs(); err != nil {
			return nil, false, err
		}
	}
	if err := l.triggerIDs(tx, in); err != nil {
		return nil, false, err
	}
	if in.SyncDAGs {
		if in.VersionKeys, err = tx.VersionKeys(); err != nil {
			return nil, false, err
		}
	}
	in.Effective, in.EffectiveGen = l.reg.effective()
	in.Seq = tx.Seq()
	return in, renewed, nil
}

// takeDAGs takes the registry's DAGs of generation g: memory is loaded again under them.
func (l *loop) takeDAGs(g uint64) {
	l.regGen = g
	l.regChanged = true
	dags, _ := l.reg.snapshot()
	byID := make(map[string]*dag.DAG, len(dags))
	for _, d := range dags {
		byID[d.ID] = d
	}
	l.dec.SetDAGs(&decide.DAGs{List: dags, ByID: byID, Errors: l.reg.importErrors()})
}

// readAll reads everything memory is built from.
func (l *loop) readAll(tx store.Tx, ps []store.Pool, claims []store.Claim) (*state.Rows, error) {
	rows := &state.Rows{Pools: ps, Claims: claims, TIs: map[int64][]store.TaskInstance{}}
	var err error
	if rows.DAGStates, err = tx.DAGStates(); err != nil {
		return nil, err
	}
	// The checkpoints are memory's at once: should a later read fail (a damaged row), the fires
	// that came due are dropped with the §4.9 warning from them (decide.Unavailable), and the
	// failed pass loads memory whole again anyway.
	l.mem.DAGStates = rows.DAGStates
	if rows.Runs, err = tx.OpenRuns(); err != nil {
		return nil, err
	}
	for _, r := range rows.Runs {
		if !state.InMemory(l.mem.Fate(r)) {
			continue
		}
		if rows.TIs[r.PK], err = tx.TaskInstances(r.PK); err != nil {
			return nil, err
		}
	}
	rows.Entries, err = tx.Entries(vocab.EntryWaiting, vocab.EntryAdmitted)
	return rows, err
}

// readChanges reads what other processes stamped since memory's sequence, or nil when the
// change is one only a load handles.
func (l *loop) readChanges(tx store.Tx, ps []store.Pool, claims []store.Claim) (*state.Changes, error) {
	states, err := tx.DAGStates()
	if err != nil {
		return nil, err
	}
	ch, err := tx.ChangesSince(l.mem.Seq)
	if err != nil {
		return nil, err
	}
	if l.mem.NeedsLoad(ps, ch.Runs) {
		return nil, nil
	}
	out := &state.Changes{Pools: ps, DAGStates: states, Changes: ch, Claims: claims, TIs: map[int64][]store.TaskInstance{}}
	for _, pk := range l.mem.Placed(ch.Runs) {
		if out.TIs[pk], err = tx.TaskInstances(pk); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// triggerIDs finds the pending triggers whose run id is taken already.
func (l *loop) triggerIDs(tx store.Tx, in *decide.Input) error {
	for _, ev := range l.pending {
		t, ok := ev.(*decide.Trigger)
		if !ok {
			continue
		}
		id := l.dec.TriggerRunID(t.Req, in.Now)
		taken, err := tx.RunExists(t.Req.DAGID, id)
		if err != nil {
			return err
		}
		if taken {
			if in.TakenRunIDs == nil {
				in.TakenRunIDs = map[string]bool{}
			}
			in.TakenRunIDs[decide.RunKey(t.Req.DAGID, id)] = true
		}
	}
	return nil
}

// offerStored hands stored pools another process changed to the registry, which validates the
// DAGs against them off the loop; when the pass answers a trigger it waits for that first: a
// DAG a pool just created makes valid must be found by a trigger sent right after the pool (the
// API's create wakes the loop, and the trigger may join the pass that wake began).
func (l *loop) offerStored(ctx context.Context, dv int64, ps []store.Pool) {
	if dv == l.seenDV {
		return
	}
	l.seenDV = dv
	sorted := append([]store.Pool(nil), ps...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	switch {
	case !l.reg.storedStale(sorted):
	case l.triggerPending():
		l.reg.request(ctx, &refreshReq{stored: sorted, haveStored: true, skipDir: true}, storedWait)
		if g := l.reg.generation(); g != l.regGen {
			l.takeDAGs(g)
		}
	default:
		l.reg.offer(sorted)
	}
}

func hasRun(runs []store.Run, pk int64) bool {
	for _, r := range runs {
		if r.PK == pk {
			return true
		}
	}
	return false
}

// commandRuns reads the runs that the pass's commands name and memory does not hold (a clear,
// a mark or a deletion of a run that has ended): their rows, their task instances and how
// many of their entries are admitted.
func (l *loop) commandRuns(tx store.Tx, in *decide.Input) error {
	want := map[int64]bool{}
	for _, c := range in.Commands {
		want[c.Run] = true
	}
	for _, ev := range l.pending {
		if c, ok := ev.(*decide.Command); ok {
			want[c.Cmd.Run] = true
		}
	}
	var admitted []store.Entry
	for pk := range want {
		if _, in := l.mem.Runs[pk]; in {
			continue
		}
		r, err := tx.RunByPK(pk)
		if errors.Is(err, store.ErrNotFound) {
			continue
		} else if err != nil {
			return err
		}
		cr := &decide.CommandRun{Run: r}
		if cr.TIs, err = tx.TaskInstances(pk); err != nil {
			return err
		}
		if admitted == nil {
			if admitted, err = tx.Entries(vocab.EntryAdmitted); err != nil {
				return err
			}
		}
		for _, e := range admitted {
			if e.Run == pk {
				cr.Admitted++
			}
		}
		if in.CommandRuns == nil {
			in.CommandRuns = map[int64]*decide.CommandRun{}
		}
		in.CommandRuns[pk] = cr
	}
	return nil
}

// backfills reads the open backfills with their next dates (§11), and the ended runs at those
// dates that a backfill's pass may clear (at most its max_active_runs of them each).
func (l *loop) backfills(tx store.Tx, in *decide.Input) error {
	var err error
	if in.Backfills, err = tx.BackfillWork(decide.BackfillTodoLimit); err != nil {
		return err
	}
	for _, w := range in.Backfills {
		b := w.Backfill
		if b.Paused || b.State != vocab.BackfillRunning {
			continue
		}
		n := 0
		for _, td := range w.Todo {
			ex := td.Existing
			if ex.PK == 0 || !decide.WantsClear(b.Reprocess, ex.State) {
				continue
			}
			if n++; n > decide.BackfillClearRuns(b) {
				break
			}
			cr := &decide.CommandRun{Run: ex}
			if cr.TIs, err = tx.TaskInstances(ex.PK); err != nil {
				return err
			}
			if in.BackfillRuns == nil {
				in.BackfillRuns = map[int64]*decide.CommandRun{}
			}
			in.BackfillRuns[ex.PK] = cr
		}
	}
	return nil
}
