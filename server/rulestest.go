package server

import (
	"encoding/json"
	"errors"
	"net/http"
	"slices"

	"github.com/poolflow/poolflow/rules"
	"github.com/poolflow/poolflow/store"
)

// rulesTestBody is rules.Attrs as a request body: the attributes a rule condition reads (§6).
type rulesTestBody struct {
	DAGID       string          `json:"dag_id"`
	TaskID      string          `json:"task_id"`
	RunID       string          `json:"run_id"`
	Owner       string          `json:"owner"`
	Tags        []string        `json:"tags"`
	Trigger     *string         `json:"trigger"`
	Params      map[string]any  `json:"params"`
	TryNumber   *int            `json:"try_number"`
	Kind        *string         `json:"kind"`
	LogicalDate json.RawMessage `json:"logical_date"`
}

var (
	ruleTriggers = []string{"schedule", "manual", "catchup"}
	ruleKinds    = []string{"command", "bash", "go", "sensor"}
)

func (b *rulesTestBody) attrs() (rules.Attrs, error) {
	a := rules.Attrs{DAGID: b.DAGID, TaskID: b.TaskID, RunID: b.RunID, Owner: b.Owner, Tags: b.Tags, Params: b.Params,
		TryNumber: 1, Kind: "command"}
	if a.Tags == nil {
		a.Tags = []string{}
	}
	if a.Params == nil {
		a.Params = map[string]any{}
	}
	if b.Trigger != nil {
		if !slices.Contains(ruleTriggers, *b.Trigger) {
			return a, badRequest("trigger", "%q is not one of schedule, manual, catchup", *b.Trigger)
		}
		a.Trigger = *b.Trigger
	}
	if b.Kind != nil {
		if !slices.Contains(ruleKinds, *b.Kind) {
			return a, badRequest("kind", "%q is not one of command, bash, go, sensor", *b.Kind)
		}
		a.Kind = *b.Kind
	}
	if b.TryNumber != nil {
		if *b.TryNumber < 1 {
			return a, badRequest("try_number", "want a whole number of at least 1, got %d", *b.TryNumber)
		}
		a.TryNumber = *b.TryNumber
	}
	t, err := rawTime("logical_date", b.LogicalDate)
	if err != nil {
		return a, err
	}
	a.LogicalDate = t
	return a, nil
}

// testRules is POST /api/v1/rules/test: which rule and pool an attempt with these attributes
// gets, and why (the JSON of `poolflow rules test -o json`). It changes nothing, so it needs no
// token.
func (s *Server) testRules(w http.ResponseWriter, r *http.Request) {
	var body rulesTestBody
	if err := decodeBody(w, r, &body, true); err != nil {
		s.fail(w, r, err)
		return
	}
	a, err := body.attrs()
	if err != nil {
		s.fail(w, r, err)
		return
	}
	set, err := s.compileRules(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	b, err := set.Assign(a).JSON()
	if err != nil {
		s.fail(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(append(b, '\n'))
}

// compileRules compiles the configured rules against the pools that exist now, configured and
// stored, as the daemon does at start.
func (s *Server) compileRules(r *http.Request) (*rules.Set, error) {
	known := map[string]bool{}
	for _, p := range s.cfg.Settings.Pools {
		known[p.Name] = true
	}
	stored, err := s.cfg.Store.ListPools(r.Context())
	if err != nil && !errors.Is(err, store.ErrUnavailable) {
		return nil, err
	}
	for _, p := range stored {
		known[p.Name] = true
	}
	set, err := rules.CompileFile(s.cfg.Settings.File, s.cfg.Settings.Rules, func(n string) bool { return known[n] },
		rules.DefaultPool)
	if err != nil {
		// The daemon refuses to start with rules that do not compile, so this is a stale or
		// hand-built configuration: say so rather than pretend a rule matched.
		return nil, &apiError{status: http.StatusServiceUnavailable, detail: "pool rules do not compile: " + err.Error()}
	}
	set.SetLogger(s.log)
	return set, nil
}
