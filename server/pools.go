package server

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/poolflow/poolflow/auth"
	"github.com/poolflow/poolflow/config"
	"github.com/poolflow/poolflow/pools"
	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/vocab"
)

// Pools defined in poolflow.yaml are read-only over the API (409; change them in the file);
// pools created over the API or CLI are kept in the store. A name cannot be both.

// poolJSON is Airflow's Pool object plus poolflow's own settings.
type poolJSON struct {
	Name            string  `json:"name"`
	Slots           int     `json:"slots"`
	OccupiedSlots   int     `json:"occupied_slots"`
	RunningSlots    int     `json:"running_slots"`
	QueuedSlots     int     `json:"queued_slots"`
	DeferredSlots   int     `json:"deferred_slots"`
	OpenSlots       int     `json:"open_slots"`
	Description     *string `json:"description"`
	IncludeDeferred bool    `json:"include_deferred"`

	Ordering        vocab.Ordering `json:"ordering"`
	MaxQueued       int            `json:"max_queued"`
	StarvationAfter string         `json:"starvation_after"`
	OnResize        vocab.OnResize `json:"on_resize"`
	DrainingTo      *int           `json:"draining_to"`
	QueuedEntries   int            `json:"queued_entries"`
	Source          string         `json:"source"`
	// Teams are the teams whose DAGs may use the pool (§15); [] = every team.
	Teams []string `json:"teams"`
}

type poolCollection struct {
	Pools        []poolJSON `json:"pools"`
	TotalEntries int        `json:"total_entries"`
}

func poolView(p store.Pool, st *poolState) poolJSON {
	u := st.usage(p.Name)
	v := poolJSON{Name: p.Name, Slots: p.Slots, OccupiedSlots: u.occupied, RunningSlots: u.running,
		QueuedSlots: u.queuedSlots, DeferredSlots: u.deferred, OpenSlots: openSlots(p, u.occupied),
		Description: strOrNil(p.Description), IncludeDeferred: p.IncludeDeferred, Ordering: p.Ordering,
		MaxQueued: p.MaxQueued, StarvationAfter: p.StarvationAfter.String(), OnResize: p.OnResize,
		QueuedEntries: u.queuedEntries, Source: p.Source, Teams: append([]string{}, p.Teams...)}
	if p.TargetSlots != store.NoTarget {
		t := p.TargetSlots
		v.DrainingTo = &t
	}
	return v
}

func (s *Server) listPools(w http.ResponseWriter, r *http.Request) {
	p, err := pageOf(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	st, err := readPoolState(r.Context(), s.cfg.Store)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	field, desc, err := orderQuery(r, []string{"name", "slots", "occupied_slots", "open_slots", "queued_slots"}, "name")
	if err != nil {
		s.fail(w, r, err)
		return
	}
	team := r.URL.Query().Get("team")
	views := make([]poolJSON, 0, len(st.pools))
	for _, pool := range st.pools {
		// ?team=: the pools that team's DAGs may use (its own and the ones open to every team).
		if team != "" && len(pool.Teams) > 0 && !slices.Contains(pool.Teams, team) {
			continue
		}
		views = append(views, poolView(pool, st))
	}
	slices.SortStableFunc(views, func(a, b poolJSON) int {
		var c int
		switch field {
		case "slots":
			c = cmp.Compare(a.Slots, b.Slots)
		case "occupied_slots":
			c = cmp.Compare(a.OccupiedSlots, b.OccupiedSlots)
		case "open_slots":
			c = cmp.Compare(a.OpenSlots, b.OpenSlots)
		case "queued_slots":
			c = cmp.Compare(a.QueuedSlots, b.QueuedSlots)
		}
		return cmpOrder(cmp.Or(c, strings.Compare(a.Name, b.Name)), desc)
	})
	lo, hi := p.slice(len(views))
	writeJSON(w, http.StatusOK, poolCollection{Pools: views[lo:hi], TotalEntries: len(views)})
}

func (s *Server) poolByName(r *http.Request, name string) (poolJSON, error) {
	st, err := readPoolState(r.Context(), s.cfg.Store)
	if err != nil {
		return poolJSON{}, err
	}
	for _, p := range st.pools {
		if p.Name == name {
			return poolView(p, st), nil
		}
	}
	return poolJSON{}, notFound("pool %s not found", name)
}

func (s *Server) getPool(w http.ResponseWriter, r *http.Request) {
	v, err := s.poolByName(r, pathVar(r, "pool_name"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, v)
}

// poolBody is the body of POST and PATCH: every field optional in PATCH.
type poolBody struct {
	Name            *string         `json:"name"`
	Slots           *int            `json:"slots"`
	Description     *string         `json:"description"`
	IncludeDeferred *bool           `json:"include_deferred"`
	Ordering        *string         `json:"ordering"`
	MaxQueued       *int            `json:"max_queued"`
	StarvationAfter json.RawMessage `json:"starvation_after"`
	OnResize        *string         `json:"on_resize"`
	Teams           *[]string       `json:"teams"`
}

// spec merges the body over base (the stored pool for PATCH, zero for POST).
func (b *poolBody) spec(base pools.Spec) (pools.Spec, error) {
	sp := base
	sp.Source = "store"
	if b.Slots != nil {
		sp.Slots = *b.Slots
	}
	if b.Description != nil {
		sp.Description = *b.Description
	}
	if b.IncludeDeferred != nil {
		sp.IncludeDeferred = *b.IncludeDeferred
	}
	if b.Ordering != nil {
		if vocab.Ordering(*b.Ordering) != sp.Ordering {
			// A new ordering takes its own starvation default unless one is given.
			sp.StarvationAfter, sp.StarvationSet = 0, false
		}
		sp.Ordering = vocab.Ordering(*b.Ordering)
	}
	if b.MaxQueued != nil {
		sp.MaxQueued = *b.MaxQueued
	}
	if !isNull(b.StarvationAfter) {
		d, err := rawDuration("starvation_after", b.StarvationAfter)
		if err != nil {
			return sp, err
		}
		sp.StarvationAfter, sp.StarvationSet = d, true
	}
	if b.OnResize != nil {
		sp.OnResize = vocab.OnResize(*b.OnResize)
	}
	if b.Teams != nil {
		sp.Teams = nil
		for i, t := range *b.Teams {
			if t == "" || strings.ContainsAny(t, ",: \t") {
				return sp, badRequest(fmt.Sprintf("teams[%d]", i), "invalid team %q (want a name without spaces, commas or colons)", t)
			}
			sp.Teams = append(sp.Teams, t)
		}
	}
	// Resolve validates every field and fills the defaults (backfill, starvation_after 10m on
	// backfill pools, on_resize immediate); its errors name the field.
	resolved, err := pools.Resolve(0, []pools.Spec{sp})
	if err != nil {
		return sp, specProblem(err)
	}
	out := resolved[sp.Name]
	out.Source, out.Teams = "store", sp.Teams
	return out, nil
}

// specProblem turns pools.Resolve's errors into a 400 naming the first bad field.
func specProblem(err error) error {
	var se *pools.SpecError
	if errors.As(err, &se) {
		return badRequest(se.Field, "%s", se.Msg)
	}
	return badRequest("body", "%s", err.Error())
}

func specOf(p store.Pool) pools.Spec {
	sp := pools.Spec{Name: p.Name, Slots: p.Slots, MaxQueued: p.MaxQueued, Ordering: p.Ordering,
		StarvationAfter: p.StarvationAfter,
		StarvationSet:   p.Ordering != vocab.Strict, IncludeDeferred: p.IncludeDeferred, OnResize: p.OnResize,
		Description: p.Description, Source: p.Source, Teams: p.Teams}
	if p.TargetSlots != store.NoTarget {
		sp.Slots = p.TargetSlots // the capacity asked for, which the drain is heading to
	}
	return sp
}

// createPool is POST /api/v1/pools: name and slots are required; an existing name is 409.
func (s *Server) createPool(w http.ResponseWriter, r *http.Request) {
	var body poolBody
	if err := decodeBody(w, r, &body, false); err != nil {
		s.fail(w, r, err)
		return
	}
	switch {
	case body.Name == nil:
		s.fail(w, r, badRequest("name", "required"))
		return
	case body.Slots == nil:
		s.fail(w, r, badRequest("slots", "required"))
		return
	}
	spec, err := body.spec(pools.Spec{Name: *body.Name})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	e := s.event(r, vocab.ActionPoolSet)
	e.Pool, e.Params = spec.Name, givenParams(body)
	if err := s.allowedPool(r.Context(), spec.Teams); err != nil {
		s.fail(w, r, err)
		return
	}
	err = s.writer.WithTx(r.Context(), func(tx store.Tx) error {
		if _, err := tx.PoolByName(spec.Name); err == nil {
			return conflict("pool %s already exists; change it with PATCH /api/v1/pools/%s", spec.Name, spec.Name)
		} else if !errors.Is(err, store.ErrNotFound) {
			return err
		}
		if err := config.SetPool(tx, s.Settings(), s.loadedDAGs(), spec, false, s.now()); err != nil {
			return err
		}
		return tx.InsertEvent(&e)
	})
	if err != nil {
		err = s.refused(r.Context(), e, err)
	}
	s.afterPoolWrite(w, r, spec.Name, http.StatusOK, err)
}

// patchPool is PATCH /api/v1/pools/{pool_name}: changes the fields given. Shrinking below what a
// loaded DAG or a held claim needs is 409 unless ?force=true.
func (s *Server) patchPool(w http.ResponseWriter, r *http.Request) {
	name := pathVar(r, "pool_name")
	var body poolBody
	if err := decodeBody(w, r, &body, false); err != nil {
		s.fail(w, r, err)
		return
	}
	if body.Name != nil && *body.Name != name {
		s.fail(w, r, badRequest("name", "a pool cannot be renamed (create %s and delete %s)", *body.Name, name))
		return
	}
	force, _, err := boolQuery(r, "force")
	if err != nil {
		s.fail(w, r, err)
		return
	}
	e := s.event(r, vocab.ActionPoolSet)
	e.Pool, e.Params = name, givenParams(body)
	if force {
		e.Params = givenParams(struct {
			poolBody
			Force bool `json:"force"`
		}{body, true})
	}
	err = s.writer.WithTx(r.Context(), func(tx store.Tx) error {
		prev, err := tx.PoolByName(name)
		if errors.Is(err, store.ErrNotFound) {
			return notFound("pool %s not found", name)
		}
		if err != nil {
			return err
		}
		if prev.Source == "file" {
			return fmt.Errorf("%w: pool %s is defined in %s; change it there", config.ErrFilePool, name,
				orText(s.Settings().File, "poolflow.yaml"))
		}
		if err := s.allowedPool(r.Context(), prev.Teams); err != nil {
			return err
		}
		spec, err := body.spec(specOf(prev))
		if err != nil {
			return err
		}
		if err := s.allowedPool(r.Context(), spec.Teams); err != nil {
			return err
		}
		if err := config.SetPool(tx, s.Settings(), s.loadedDAGs(), spec, force, s.now()); err != nil {
			return err
		}
		return tx.InsertEvent(&e)
	})
	if err != nil {
		err = s.refused(r.Context(), e, err)
	}
	s.afterPoolWrite(w, r, name, http.StatusOK, err)
}

// deletePool is DELETE /api/v1/pools/{pool_name}: 204, or 409 while a loaded DAG or a claim
// needs it unless ?force=true.
func (s *Server) deletePool(w http.ResponseWriter, r *http.Request) {
	name := pathVar(r, "pool_name")
	force, _, err := boolQuery(r, "force")
	if err != nil {
		s.fail(w, r, err)
		return
	}
	e := s.event(r, vocab.ActionPoolDelete)
	e.Pool = name
	if force {
		e.Params = jsonParams(map[string]bool{"force": true})
	}
	err = s.writer.WithTx(r.Context(), func(tx store.Tx) error {
		if prev, err := tx.PoolByName(name); err == nil {
			if err := s.allowedPool(r.Context(), prev.Teams); err != nil {
				return err
			}
		}
		err := config.DeletePool(tx, s.Settings(), s.loadedDAGs(), name, force, s.now())
		if errors.Is(err, store.ErrNotFound) {
			return notFound("pool %s not found", name)
		}
		if err != nil {
			return err
		}
		return tx.InsertEvent(&e)
	})
	if err != nil {
		s.fail(w, r, s.refused(r.Context(), e, err))
		return
	}
	s.wake()
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) afterPoolWrite(w http.ResponseWriter, r *http.Request, name string, status int, err error) {
	if err != nil {
		var se *pools.SpecError
		if errors.As(err, &se) {
			err = specProblem(err)
		}
		s.fail(w, r, err)
		return
	}
	s.wake()
	v, err := s.poolByName(r, name)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, status, v)
}

// allowedPool checks the pools permission on a pool open to teams (§15): an admin of every team
// may change any pool; an admin of finance only a pool that names finance.
func (s *Server) allowedPool(ctx context.Context, teams []string) error {
	p := principal(ctx)
	if p.CanPool(vocab.PermPools, teams) {
		return nil
	}
	team := strings.Join(teams, ", ")
	if team == "" {
		team = "(every team)"
	}
	return &auth.Denied{Perm: vocab.PermPools, Team: team, Who: p.Name}
}
