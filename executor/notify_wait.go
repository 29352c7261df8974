package executor

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/poolflow/poolflow/explain"
	"github.com/poolflow/poolflow/notify"
	"github.com/poolflow/poolflow/pools"
	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/vocab"
)

// explainWait says a queue wait as it is when it is sent (§13): how long the entry has waited
// and why, computed by the code of tasks explain and the pools board (explain.Fill), e.g.
// "load_orders has waited 35 min: pool warehouse is full (needs 1, 0 of 4 free; held by
// export_a try 1, export_b try 1); 3rd in line for warehouse" — its place in that pool's line
// when the walk can tell (explain.InLine). An entry admitted since says so.
func explainWait(st store.Store, now func() time.Time) func(ctx context.Context, ev *notify.Event) {
	return func(ctx context.Context, ev *notify.Event) {
		if ev.Wait == nil {
			return
		}
		e, err := st.EntryByID(ctx, ev.Wait.QueueID)
		if err != nil {
			return // the words written with the event stand
		}
		waited := notify.Minutes(time.Duration(ev.Wait.Seconds) * time.Second)
		if e.State != vocab.EntryWaiting {
			ev.Reason = fmt.Sprintf("%s waited %s for admission; it is %s now", ev.TaskID, waited, e.State)
			return
		}
		pool, place, inLine, err := explain.InLine(ctx, st, now(), &e)
		if err != nil {
			return
		}
		w, ok := pools.EntryWait(e.ReasonCode, e.Reason)
		if !ok {
			return
		}
		ev.Reason = fmt.Sprintf("%s has waited %s: %s", ev.TaskID, waited, strings.TrimPrefix(w.Text, "waiting: "))
		if inLine {
			ev.Reason += fmt.Sprintf("; %s in line for %s", notify.Ordinal(place), pool)
			ev.Wait.Pool, ev.Wait.Place = pool, place
		}
	}
}
