package ui

import (
	"context"
	"html/template"
	"sort"

	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/vocab"
)

// nodeRow is one daemon's share of an every_node DAG (§9): the daemon, whether its lease runs,
// its newest fire and how many of its fires are open (bound to it, they wait while it is away).
type nodeRow struct {
	Daemon, Host string
	Alive        bool
	Last         *store.Run
	Open         int
	Total        template.HTML // its fires, to a bound (runTotal): "1,000+"
}

// nodeRows lists every serve daemon the store knows, with its fires of an every_node DAG:
// daemons alive first, then by id.
func (u *UI) nodeRows(ctx context.Context, dagID string) ([]nodeRow, error) {
	owners, err := u.api.Store().ListOwners(ctx)
	if err != nil {
		return nil, err
	}
	now := u.api.Now()
	var rows []nodeRow
	for _, o := range owners {
		if o.Kind != vocab.OwnerDaemon {
			continue
		}
		row := nodeRow{Daemon: o.ID, Host: o.Host, Alive: o.LeaseUntil.After(now)}
		f := store.RunFilter{DAGID: dagID, Owners: []string{o.ID}, RunTypes: []vocab.RunType{vocab.RunNode},
			OrderBy: "logical_date", Desc: true, Limit: 1, CountAtMost: countBound(0, 1)}
		last, total, err := u.api.Store().ListRunsWhere(ctx, f)
		if err != nil {
			return nil, err
		}
		if len(last) > 0 {
			row.Last, row.Total = &last[0], runTotal(total, f)
		}
		f.States, f.CountAtMost = []vocab.RunState{vocab.RunQueued, vocab.RunRunning}, 0 // few: counted
		if _, row.Open, err = u.api.Store().ListRunsWhere(ctx, f); err != nil {
			return nil, err
		}
		rows = append(rows, row)
	}
	sort.SliceStable(rows, func(i, j int) bool {
		if rows[i].Alive != rows[j].Alive {
			return rows[i].Alive
		}
		return rows[i].Daemon < rows[j].Daemon
	})
	return rows, nil
}
