package server

import (
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"

	"github.com/poolflow/poolflow/config"
	"github.com/poolflow/poolflow/rules"
	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/vocab"
)

// rulesTestBody is rules.Attrs as a request body: the attributes a rule condition reads (§6).
type rulesTestBody struct {
	DAGID       string          `json:"dag_id"`
	TaskID      string          `json:"task_id"`
	RunID       string          `json:"run_id"`
	Owner       string          `json:"owner"`
	Team        *string         `json:"team"`
	Tags        []string        `json:"tags"`
	Trigger     *string         `json:"trigger"`
	Params      map[string]any  `json:"params"`
	TryNumber   *int            `json:"try_number"`
	Kind        *string         `json:"kind"`
	LogicalDate json.RawMessage `json:"logical_date"`
	// Item and MapIndex make the attempt a mapped instance's (§14): map_index 0 when only the
	// item is given, -1 (not mapped) when neither is.
	Item     json.RawMessage `json:"item"`
	MapIndex *int            `json:"map_index"`
}

var (
	ruleTriggers = vocab.Strings([]vocab.RunType{vocab.RunSchedule, vocab.RunManual, vocab.RunCatchup, vocab.RunNode, vocab.RunBackfill})
	ruleKinds    = []string{"command", "bash", "go", "sensor"}
)

// attrs are the body's attributes; dagTeam gives the team of a loaded DAG, for a body that
// names a DAG but no team.
func (b *rulesTestBody) attrs(dagTeam func(id string) string) (rules.Attrs, error) {
	a := rules.Attrs{DAGID: b.DAGID, TaskID: b.TaskID, RunID: b.RunID, Owner: b.Owner, Tags: b.Tags, Params: b.Params,
		TryNumber: 1, Kind: "command", MapIndex: -1}
	if b.Team != nil {
		a.Team = strings.TrimSpace(*b.Team)
	} else if b.DAGID != "" {
		a.Team = dagTeam(b.DAGID)
	}
	if a.Tags == nil {
		a.Tags = []string{}
	}
	if a.Params == nil {
		a.Params = map[string]any{}
	}
	if b.Trigger != nil {
		if !slices.Contains(ruleTriggers, *b.Trigger) {
			return a, badRequest("trigger", "%q is not one of %s", *b.Trigger, strings.Join(ruleTriggers, ", "))
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
	if len(b.Item) > 0 && string(b.Item) != "null" {
		if err := json.Unmarshal(b.Item, &a.Item); err != nil {
			return a, badRequest("item", "want a JSON value: %v", err)
		}
		a.MapIndex = 0
	}
	if b.MapIndex != nil {
		if *b.MapIndex < 0 {
			return a, badRequest("map_index", "want a whole number of at least 0, got %d", *b.MapIndex)
		}
		a.MapIndex = *b.MapIndex
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
	a, err := body.attrs(s.dagTeam)
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

// compileRules gives the rules in force against the pools that exist now, configured and
// stored: the same Effective configuration the daemon assigns with.
func (s *Server) compileRules(r *http.Request) (*rules.Set, error) {
	eff, err := config.ReadEffective(r.Context(), s.cfg.Store, s.Settings())
	if err != nil && !errors.Is(err, store.ErrUnavailable) {
		return nil, err
	}
	if err != nil {
		eff = config.NewEffective(s.Settings(), nil)
	}
	if perr := eff.Problems(); perr != nil {
		// The daemon would refuse this configuration too: say so rather than pretend a rule matched.
		return nil, &apiError{status: http.StatusServiceUnavailable, detail: "the configuration has problems: " + perr.Error()}
	}
	if eff.Rules == nil {
		return emptyRules, nil
	}
	eff.Rules.SetLogger(s.log)
	return eff.Rules, nil
}

// emptyRules assigns every attempt to the default pool.
var emptyRules, _ = rules.Compile(nil, nil, rules.DefaultPool)
