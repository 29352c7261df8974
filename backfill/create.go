package backfill

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/poolflow/poolflow/dag"
	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/vocab"
)

// Create stores a checked request as a backfill with its dates (Check's), pending, and its
// audit event by actor, in one transaction: the API and the CLI create backfills the same way.
// Another open backfill of the DAG whose range meets this one's is a 409 naming it, decided
// under the writers' lock so two requests cannot both pass.
func Create(ctx context.Context, st store.Store, req Request, dates []time.Time, actor string, now time.Time) (store.Backfill, error) {
	conf := "{}"
	if len(req.Conf) > 0 {
		b, err := json.Marshal(req.Conf)
		if err != nil {
			return store.Backfill{}, bad("dag_run_conf", "%v", err)
		}
		conf = string(b)
	}
	b := store.Backfill{DAGID: req.DAGID, From: req.From, To: req.To, Reprocess: req.Reprocess, MaxActiveRuns: req.MaxActiveRuns,
		Backwards: req.Backwards, Conf: conf, MaxSlots: req.MaxSlots, State: vocab.BackfillRunning, CreatedBy: actor,
		CreatedAt: now}
	e := Event(actor, now, req)
	err := st.WithTx(ctx, func(tx store.Tx) error {
		open, err := tx.OpenBackfills(req.DAGID)
		if err != nil {
			return err
		}
		if o := Overlap(open, req.From, req.To); o != nil {
			return &Error{Status: http.StatusConflict, Msg: fmt.Sprintf(
				"backfill %d of dag %s (%s to %s, %s) overlaps this range: cancel it or wait for it to end",
				o.ID, o.DAGID, stamp(o.From), stamp(o.To), o.State)}
		}
		if err := tx.InsertBackfill(&b, dates); err != nil {
			return err
		}
		e.Params = params(b.ID, req, len(dates))
		return tx.InsertEvent(&e)
	})
	return b, err
}

// Event is the audit event of a backfill request by actor (§10.4), before its outcome.
func Event(actor string, now time.Time, req Request) store.Event {
	return store.Event{At: now, Actor: actor, Action: vocab.ActionBackfill, DAGID: req.DAGID, Params: params(0, req, 0),
		Outcome: "ok"}
}

func params(id int64, req Request, dates int) string {
	m := map[string]any{"from_date": req.From, "to_date": req.To, "reprocess_behavior": req.Reprocess,
		"max_active_runs": req.MaxActiveRuns, "run_backwards": req.Backwards}
	if id != 0 {
		m["backfill_id"] = id
	}
	if dates != 0 {
		m["dates"] = dates
	}
	if len(req.MaxSlots) > 0 {
		m["max_slots"] = req.MaxSlots
	}
	b, _ := json.Marshal(m)
	return string(b)
}

// DryRun is what a backfill would do, written nowhere: each date's plan as things stand, the
// counts, and per pool the slot-hours its runs would need.
type DryRun struct {
	Plan                []Planned
	Create, Clear, Skip int
	SlotHours           map[string]float64
	// NoHistory names the tasks that never ran: their slot-hours are not counted.
	NoHistory []string
	// Overlaps is the open backfill whose range meets this one, if any: creating it would be
	// refused.
	Overlaps *store.Backfill
}

// slotHistory is how many of a DAG's latest runs a dry run reads for its tasks' durations.
const slotHistory = 20

// Dry plans a checked request over what the store holds: the runs at its dates, its DAG's
// tasks' mean durations over its latest 20 runs (a task without requirements counts in
// defaultPool, where the rules' default would put it), and the failed tasks a reprocess failed
// would clear.
func Dry(ctx context.Context, st store.Reader, g *dag.DAG, req Request, dates []time.Time, defaultPool string) (DryRun, error) {
	var out DryRun
	runs, err := st.ListRunsBetween(ctx, req.DAGID, req.From, req.To)
	if err != nil {
		return out, err
	}
	out.Plan = Plan(req.Reprocess, dates, runs)
	byID := map[string]store.Run{}
	for _, r := range runs {
		byID[r.RunID] = r
	}
	var cleared map[string][]string
	if req.Reprocess == vocab.ReprocessFailed {
		cleared = map[string][]string{}
	}
	for _, p := range out.Plan {
		switch p.Action {
		case vocab.BackfillCreated:
			out.Create++
		case vocab.BackfillCleared:
			out.Clear++
			if cleared == nil {
				continue
			}
			tis, err := st.ListTaskInstances(ctx, byID[p.RunID].PK)
			if err != nil {
				return out, err
			}
			ids := []string{}
			for _, ti := range tis {
				if ti.State == vocab.TaskFailed || ti.State == vocab.TaskUpstreamFailed {
					ids = append(ids, ti.TaskID)
				}
			}
			cleared[p.RunID] = ids
		default:
			out.Skip++
		}
	}
	latest, _, err := st.ListRuns(ctx, g.ID, slotHistory, 0)
	if err != nil {
		return out, err
	}
	var attempts []store.Attempt
	for _, r := range latest {
		as, err := st.RunAttempts(ctx, r.PK)
		if err != nil {
			return out, err
		}
		attempts = append(attempts, as...)
	}
	out.SlotHours, out.NoHistory = SlotHours(g, out.Plan, cleared, Durations(attempts), func(t *dag.Task) map[string]int {
		if len(t.PoolRequirements) > 0 {
			return t.PoolRequirements
		}
		return map[string]int{defaultPool: 1}
	})
	all, _, err := st.ListBackfills(ctx, req.DAGID, 1000, 0)
	if err != nil {
		return out, err
	}
	var open []store.Backfill
	for _, b := range all {
		if b.State.Open() {
			open = append(open, b)
		}
	}
	out.Overlaps = Overlap(open, req.From, req.To)
	return out, nil
}
