package server

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/poolflow/poolflow/explain"
	"github.com/poolflow/poolflow/pools"
	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/vocab"
)

// The seed's routes (seed 000): GET /pools, the data of the dashboard's Resource pools card, and
// POST /pools/{name}/queue/{key}/cancel, where key is the queue ID. Their JSON uses the seed's
// queueId; everything else is snake_case like the rest of the API.

// recentPerPool is how many terminal entries each pool keeps visible (§4.6).
const recentPerPool = 50

// BoardJSON is GET /pools: every pool with its holders and queue.
type BoardJSON struct {
	Pools        []BoardPoolJSON `json:"pools"`
	TotalEntries int             `json:"total_entries"`
}

// BoardPoolJSON is one pool of GET /pools.
type BoardPoolJSON struct {
	Name        string  `json:"name"`
	Description *string `json:"description"`
	// Capacity is the slots admission uses now, -1 for unlimited; DrainingTo is the capacity an
	// on_resize: drain pool switches to once its old queue is empty.
	Capacity   int            `json:"capacity"`
	DrainingTo *int           `json:"draining_to"`
	Occupancy  int            `json:"occupancy"`
	OpenSlots  int            `json:"open_slots"`
	Ordering   vocab.Ordering `json:"ordering"`
	MaxQueued  int            `json:"max_queued"`
	Source     string         `json:"source"`
	// Teams are the teams whose DAGs may use the pool (§15); [] = every team.
	Teams []string `json:"teams"`
	// Holders are the admitted entries holding slots, by queue ID.
	Holders []HolderJSON `json:"holders"`
	// Waiting lists the waiting entries in admission order.
	Waiting []EntryJSON `json:"waiting"`
	// Recent lists the last terminal entries, newest first.
	Recent []EntryJSON `json:"recent"`
}

// HolderJSON is one claim: the slots an admitted entry holds in the pool.
type HolderJSON struct {
	QueueID    int64     `json:"queueId"`
	Label      string    `json:"label"`
	Slots      int       `json:"slots"`
	Daemon     string    `json:"daemon"`
	LeaseUntil time.Time `json:"lease_until"`
	// The attempt holding the slots, and since when (its admission).
	DAGID      string     `json:"dag_id"`
	DAGRunID   string     `json:"dag_run_id"`
	TaskID     string     `json:"task_id"`
	TryNumber  int        `json:"try_number"`
	AdmittedAt *time.Time `json:"admitted_at"`
}

// EntryJSON is one queue entry.
type EntryJSON struct {
	QueueID      int64            `json:"queueId"`
	DAGID        string           `json:"dag_id"`
	DAGRunID     string           `json:"dag_run_id"`
	TaskID       string           `json:"task_id"`
	TryNumber    int              `json:"try_number"`
	Label        string           `json:"label"`
	State        vocab.EntryState `json:"state"`
	Priority     int              `json:"priority"`
	Due          time.Time        `json:"due"`
	Deadline     *time.Time       `json:"deadline"`
	Force        bool             `json:"force"`
	Requirements map[string]int   `json:"requirements"`
	Limits       []LimitJSON      `json:"limits"`
	Rule         *string          `json:"rule"`
	// RuleSkipped names the rules that matched but were skipped for the DAG's team (§15).
	RuleSkipped *string     `json:"rule_skipped,omitempty"`
	Reason      *ReasonJSON `json:"reason"`
	EnqueuedAt  time.Time   `json:"enqueued_at"`
	EndedAt     *time.Time  `json:"ended_at"`
}

// Waiting reports whether the entry still waits for admission (templates ask this rather than
// spell the state).
func (e EntryJSON) Waiting() bool { return e.State == vocab.EntryWaiting }

func entryView(e store.Entry) EntryJSON {
	reqs, limits := splitNeeds(e.Needs)
	v := EntryJSON{QueueID: e.ID, DAGID: e.DAGID, DAGRunID: e.RunID, TaskID: e.TaskID, TryNumber: e.TryNumber,
		Label: e.Label, State: e.State, Priority: e.Priority, Due: e.Due.UTC(), Deadline: ts(e.Deadline), Force: e.Force,
		Requirements: reqs, Limits: limits, Rule: strOrNil(e.Rule), RuleSkipped: strOrNil(e.RuleSkipped), EnqueuedAt: e.CreatedAt.UTC(), EndedAt: ts(e.EndedAt)}
	v.Reason = EntryReason(e)
	return v
}

// EntryReason is why a queue entry waits (a waiting entry) or how it ended (a terminal one), in
// the words of `poolflow tasks explain`; nil when none is known. It is the one place the API and
// the UI read an entry's reason from. A waiting entry's reason is computed when read
// (executor.Explain fills it in, §4.5); a terminal entry's is the one it ended with.
func EntryReason(e store.Entry) *ReasonJSON {
	w, ok := pools.EntryWait(e.ReasonCode, e.Reason)
	if !ok {
		return nil
	}
	return &ReasonJSON{Code: w.Code, Text: w.Text}
}

// poolBoard is GET /pools: capacity, occupancy, holders, waiting entries in admission order with
// priority, due time, deadline, requirements and wait reason, and the recent terminal entries.
// 503 while pool state is unavailable (§4.9).
func (s *Server) poolBoard(w http.ResponseWriter, r *http.Request) {
	out, err := s.board(r.Context())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) board(ctx context.Context) (BoardJSON, error) {
	st, err := readPoolState(ctx, s.cfg.Store)
	if err != nil {
		return BoardJSON{}, err
	}
	why, err := explain.Reasons(ctx, s.cfg.Store, s.now())
	if err != nil {
		return BoardJSON{}, err
	}
	recent, err := s.cfg.Store.RecentEntries(ctx, recentPerPool)
	if err != nil {
		return BoardJSON{}, err
	}
	out := BoardJSON{Pools: []BoardPoolJSON{}, TotalEntries: len(st.pools)}
	for _, p := range st.pools {
		u := st.usage(p.Name)
		v := BoardPoolJSON{Name: p.Name, Teams: append([]string{}, p.Teams...), Description: strOrNil(p.Description), Capacity: p.Slots, Occupancy: u.occupied,
			OpenSlots: openSlots(p, u.occupied), Ordering: p.Ordering, MaxQueued: p.MaxQueued, Source: p.Source,
			Holders: []HolderJSON{}, Waiting: []EntryJSON{}, Recent: []EntryJSON{}}
		if p.TargetSlots != store.NoTarget {
			t := p.TargetSlots
			v.DrainingTo = &t
		}
		for _, c := range st.claims[p.Name] {
			e := st.live[c.Entry]
			v.Holders = append(v.Holders, HolderJSON{QueueID: c.Entry, Label: c.Label, Slots: c.Slots, Daemon: c.Daemon,
				LeaseUntil: c.LeaseUntil.UTC(), DAGID: e.DAGID, DAGRunID: e.RunID, TaskID: e.TaskID, TryNumber: e.TryNumber,
				AdmittedAt: ts(e.AdmittedAt)})
		}
		for _, e := range st.waiting[p.Name] {
			why.Fill(&e)
			v.Waiting = append(v.Waiting, entryView(e))
		}
		for _, e := range recent[p.Name] {
			v.Recent = append(v.Recent, entryView(e))
		}
		out.Pools = append(out.Pools, v)
	}
	return out, nil
}

// cancelEntry is POST /pools/{name}/queue/{key}/cancel: the operator's cancel of a waiting
// entry, a failed attempt that follows the retry policy (§4.6). 404 for an unknown pool or
// entry (or one that does not need that pool), 409 when the entry is not waiting or the pool
// refuses, 503 while pool state is unavailable.
func (s *Server) cancelEntry(w http.ResponseWriter, r *http.Request) {
	name, key := pathVar(r, "name"), pathVar(r, "key")
	ps, err := s.cfg.Store.ListPools(r.Context())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if !slices.ContainsFunc(ps, func(p store.Pool) bool { return p.Name == name }) {
		s.fail(w, r, notFound("pool %s not found", name))
		return
	}
	id, perr := strconv.ParseInt(key, 10, 64)
	if perr != nil || id < 1 {
		s.fail(w, r, notFound("queue entry %s not found in pool %s", key, name))
		return
	}
	e, err := s.cfg.Store.EntryByID(r.Context(), id)
	if errors.Is(err, store.ErrNotFound) || (err == nil && !needsPool(e, name)) {
		s.fail(w, r, notFound("queue entry %d not found in pool %s", id, name))
		return
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if e.State != vocab.EntryWaiting {
		s.fail(w, r, conflict("queue entry %d of pool %s is not waiting (%s)", id, name, e.State))
		return
	}
	run, err := s.cfg.Store.GetRunByPK(r.Context(), e.Run)
	if err == nil {
		err = s.allowed(r.Context(), vocab.PermCancel, s.dagTeam(run.DAGID))
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	err = s.sendCommand(r.Context(), run, store.Command{Kind: vocab.CommandCancel, TaskID: e.TaskID, Who: actorOf(r)})
	if errors.Is(err, errCommandPending) {
		writeJSON(w, http.StatusAccepted, pendingJSON{Queued: true, Detail: err.Error()})
		return
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	e, err = s.cfg.Store.EntryByID(r.Context(), id)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, entryView(e))
}

func needsPool(e store.Entry, pool string) bool {
	return slices.ContainsFunc(e.Needs, func(n store.Requirement) bool { return n.Pool == pool })
}
