package server

import (
	"context"
	"math"
	"net/http"
	"time"

	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/vocab"
)

// A pool's timeline over a window (an hour, a day, a week) and who held its slots at an instant:
// both read from the claim history the store keeps, the queue entries' admission and end times
// with their requirement rows (store.PoolHistory, store.PoolHoldersAt). A window is aggregated
// into a fixed number of buckets, each with the highest use within it (so no peak is lost), when
// that peak began, and the time-weighted mean: a week is 336 buckets of 30 minutes, a few KB.

// TimelineWindow is one of the windows a timeline shows.
type TimelineWindow struct {
	Name    string
	Span    time.Duration
	Buckets int
}

// TimelineWindows are the windows, shortest first: an hour in 15 s buckets, a day in 5 min, a
// week in 30 min.
var TimelineWindows = []TimelineWindow{
	{"hour", time.Hour, 240},
	{"day", 24 * time.Hour, 288},
	{"week", 7 * 24 * time.Hour, 336},
}

// TimelineWindowNamed is the window called name ("" is the hour).
func TimelineWindowNamed(name string) (TimelineWindow, bool) {
	if name == "" {
		return TimelineWindows[0], true
	}
	for _, w := range TimelineWindows {
		if w.Name == name {
			return w, true
		}
	}
	return TimelineWindow{}, false
}

// TimelineBucket is one slice of a timeline.
type TimelineBucket struct {
	Start  time.Time `json:"start"`
	Peak   int       `json:"peak"`    // the most slots held at once within it
	PeakAt time.Time `json:"peak_at"` // when that peak began (its holders: GET …/holders?at=)
	Mean   float64   `json:"mean"`    // the slots held on average over it
}

// PoolTimelineJSON is GET /api/v1/pools/{pool_name}/timeline.
type PoolTimelineJSON struct {
	Pool          string           `json:"name"`
	Slots         int              `json:"slots"`    // the capacity now; -1 unlimited
	Capacity      []CapacityStep   `json:"capacity"` // the capacity over the window, a step from each
	Window        string           `json:"window"`
	From          time.Time        `json:"from"`
	To            time.Time        `json:"to"`
	BucketSeconds float64          `json:"bucket_seconds"`
	Peak          int              `json:"peak"`
	FullSeconds   float64          `json:"full_seconds"` // the length of the buckets whose peak reached the capacity
	Buckets       []TimelineBucket `json:"buckets"`
}

// CapacityStep is the pool's capacity from At on (to the next step or the window's end).
type CapacityStep struct {
	At    time.Time `json:"at"`
	Slots *int      `json:"slots"` // -1 unlimited; null while there was no such pool
}

// capacitySteps turns the capacity changes a window [from, to] draws into steps, the first at
// from: the pool did not exist before its first change.
func capacitySteps(cs []store.CapacityChange, from time.Time) []CapacityStep {
	out := []CapacityStep{{At: from}}
	for _, c := range cs {
		var slots *int
		if c.Exists {
			v := c.Slots
			slots = &v
		}
		if !c.At.After(from) {
			out[0].Slots = slots
			continue
		}
		out = append(out, CapacityStep{At: c.At.UTC(), Slots: slots})
	}
	return out
}

// capacityAt is the capacity steps give at instant t (0 when there was no pool).
func capacityAt(steps []CapacityStep, t time.Time) int {
	c := 0
	for _, s := range steps {
		if s.At.After(t) {
			break
		}
		c = 0
		if s.Slots != nil {
			c = *s.Slots
		}
	}
	return c
}

// HeldAtJSON is one admission that held slots at the instant asked (GET …/holders).
type HeldAtJSON struct {
	QueueID    int64            `json:"queue_id"`
	DAGID      string           `json:"dag_id"`
	DAGRunID   string           `json:"dag_run_id"`
	TaskID     string           `json:"task_id"`
	TryNumber  int              `json:"try_number"`
	Slots      int              `json:"slots"`
	AdmittedAt time.Time        `json:"admitted_at"`
	EndedAt    *time.Time       `json:"ended_at"` // null while still held
	State      vocab.EntryState `json:"state"`    // the queue entry's state now
}

// PoolHoldersJSON is GET /api/v1/pools/{pool_name}/holders.
type PoolHoldersJSON struct {
	Pool    string       `json:"name"`
	At      time.Time    `json:"at"`
	Slots   int          `json:"slots"` // the capacity at the instant; -1 unlimited, 0 when there was no pool
	Used    int          `json:"used"`  // the slots held at the instant
	Holders []HeldAtJSON `json:"holders"`
}

// poolSlots is named pool's capacity now (-1 unlimited); 404 for a pool that does not exist.
// The pools alone: the entries and claims the pools page reads are not needed here.
func (s *Server) poolSlots(ctx context.Context, name string) (int, error) {
	ps, err := s.cfg.Store.ListPools(ctx)
	if err != nil {
		return 0, err
	}
	for _, p := range ps {
		if p.Name == name {
			return p.Slots, nil
		}
	}
	return 0, notFound("pool %s not found", name)
}

// PoolTimeline is pool's timeline over window w ending at end (zero: now). The window ends
// at the first bucket boundary at or after end (so the slices are the store's own and the
// window ending now holds the slice now is in, measured up to now); the store aggregates it
// (store.PoolUse), so its cost follows the buckets, not the admissions.
func (s *Server) PoolTimeline(ctx context.Context, pool string, w TimelineWindow, end time.Time) (PoolTimelineJSON, error) {
	slots, err := s.poolSlots(ctx, pool)
	if err != nil {
		return PoolTimelineJSON{}, err
	}
	now := s.now().UTC()
	if end.IsZero() {
		end = now
	}
	width := w.Span / time.Duration(w.Buckets)
	to := end.UTC().Truncate(width)
	if to.Before(end) {
		to = to.Add(width)
	}
	from := to.Add(-w.Span)
	use, err := s.cfg.Store.PoolUse(ctx, pool, from, to, width, now)
	if err != nil {
		return PoolTimelineJSON{}, err
	}
	caps, err := s.cfg.Store.PoolCapacity(ctx, pool, from, to)
	if err != nil {
		return PoolTimelineJSON{}, err
	}
	out := PoolTimelineJSON{Pool: pool, Slots: slots, Capacity: capacitySteps(caps, from), Window: w.Name, From: from, To: to,
		BucketSeconds: width.Seconds(), Buckets: make([]TimelineBucket, len(use))}
	for i, u := range use {
		out.Buckets[i] = TimelineBucket{Start: u.Start.UTC(), Peak: u.Peak, PeakAt: u.PeakAt.UTC(), Mean: math.Round(u.Mean*100) / 100}
		out.Peak = max(out.Peak, u.Peak)
		// Full against the capacity of the moment the peak was reached, not today's.
		if c := capacityAt(out.Capacity, u.PeakAt); c > 0 && u.Peak >= c {
			out.FullSeconds += width.Seconds()
		}
	}
	return out, nil
}

// PoolHoldersAt is who held pool's slots at instant at (zero: now).
func (s *Server) PoolHoldersAt(ctx context.Context, pool string, at time.Time) (PoolHoldersJSON, error) {
	slots, err := s.poolSlots(ctx, pool)
	if err != nil {
		return PoolHoldersJSON{}, err
	}
	if at.IsZero() {
		at = s.now()
	}
	at = at.UTC()
	hs, err := s.cfg.Store.PoolHoldersAt(ctx, pool, at)
	if err != nil {
		return PoolHoldersJSON{}, err
	}
	caps, err := s.cfg.Store.PoolCapacity(ctx, pool, at, at)
	if err != nil {
		return PoolHoldersJSON{}, err
	}
	slots = capacityAt(capacitySteps(caps, at), at)
	out := PoolHoldersJSON{Pool: pool, At: at, Slots: slots, Holders: make([]HeldAtJSON, 0, len(hs))}
	for _, h := range hs {
		v := HeldAtJSON{QueueID: h.Entry, DAGID: h.DAGID, DAGRunID: h.RunID, TaskID: h.TaskID, TryNumber: h.TryNumber,
			Slots: h.Slots, AdmittedAt: h.AdmittedAt.UTC(), State: h.State}
		if !h.EndedAt.IsZero() {
			e := h.EndedAt.UTC()
			v.EndedAt = &e
		}
		out.Used += h.Slots
		out.Holders = append(out.Holders, v)
	}
	return out, nil
}

// getPoolTimeline is GET /api/v1/pools/{pool_name}/timeline?window=hour|day|week&end=T.
func (s *Server) getPoolTimeline(w http.ResponseWriter, r *http.Request) {
	win, ok := TimelineWindowNamed(r.URL.Query().Get("window"))
	if !ok {
		s.fail(w, r, badRequest("window", "want hour, day or week, got %q", r.URL.Query().Get("window")))
		return
	}
	end, err := timeQuery(r, "end")
	if err != nil {
		s.fail(w, r, err)
		return
	}
	v, err := s.PoolTimeline(r.Context(), pathVar(r, "pool_name"), win, end)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, v)
}

// getPoolHolders is GET /api/v1/pools/{pool_name}/holders?at=T.
func (s *Server) getPoolHolders(w http.ResponseWriter, r *http.Request) {
	at, err := timeQuery(r, "at")
	if err != nil {
		s.fail(w, r, err)
		return
	}
	v, err := s.PoolHoldersAt(r.Context(), pathVar(r, "pool_name"), at)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, v)
}
