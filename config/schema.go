package config

import (
	"fmt"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/poolflow/poolflow/internal/yamlfile"

	"github.com/poolflow/poolflow/pools"
	"github.com/poolflow/poolflow/vocab"
)

// The shape of poolflow.yaml (§4.1, §6).

func (r *reader) root(n *yaml.Node, c *Config) []pools.Spec {
	var specs []pools.Spec
	for _, f := range r.fields(n, "", pos{1, 1}, "state", "store", "max_running", "pools", "rules", "api", "auth", "server", "retention",
		"notifiers", "notifications", "backfill") {
		switch f.key {
		case "state":
			for _, g := range r.fields(f.value, f.path, f.at, "path") {
				c.StatePath, _ = r.str(g)
			}
		case "store":
			r.store(f, c)
		case "max_running":
			v, ok := r.int(f, "an integer, 0 for none")
			switch {
			case !ok:
				r.badMaxRunning = true
			case v < 0:
				r.fail(f.valuePos(), f.path, "invalid value %d (want 0 for none, or more)", v)
				r.badMaxRunning = true
			default:
				c.MaxRunning = v
			}
		case "pools":
			specs = r.pools(f)
		case "rules":
			c.Rules = r.rules(f)
		case "api":
			for _, g := range r.fields(f.value, f.path, f.at, "token") {
				c.APIToken, _ = r.str(g)
			}
		case "auth":
			r.auth(f, c)
		case "server":
			for _, g := range r.fields(f.value, f.path, f.at, "allowed_hosts", "base_url") {
				switch g.key {
				case "allowed_hosts":
					c.AllowedHosts = r.hosts(g)
				case "base_url":
					v, _ := r.str(g)
					if msg := checkHTTPURL(v); msg != "" {
						r.fail(g.valuePos(), g.path, "invalid URL %q: %s", v, msg)
					}
					c.BaseURL = strings.TrimRight(v, "/")
				}
			}
		case "notifiers":
			r.notifiers(f, c)
		case "notifications":
			r.delivery(f, c)
		case "backfill":
			for _, g := range r.fields(f.value, f.path, f.at, "max_runs") {
				switch v, ok := r.int(g, "an integer of 1 or more"); {
				case !ok:
				case v < 1:
					r.fail(g.valuePos(), g.path, "invalid value %d (want 1 or more)", v)
				default:
					c.Backfill.MaxRuns = v
				}
			}
		case "retention":
			for _, g := range r.fields(f.value, f.path, f.at, "runs", "logs", "events") {
				d, _ := r.age(g)
				switch g.key {
				case "runs":
					c.Retention.Runs = d
				case "logs":
					c.Retention.Logs = d
				case "events":
					c.Retention.Events = d
				}
			}
		}
	}
	return specs
}

func (r *reader) pools(f field) []pools.Spec {
	var specs []pools.Spec
	for _, p := range r.fields(f.value, f.path, f.at) {
		if s, ok := r.pool(p); ok {
			specs = append(specs, s)
		}
	}
	return specs
}

const slotsWant = "a number of slots, -1 for unlimited, or remainder"

// pool reads `name: 4` (shorthand: slots only) or the full form.
func (r *reader) pool(f field) (pools.Spec, bool) {
	s := pools.Spec{Name: f.key, Source: "file", Line: f.at.line, Column: f.at.col}
	at := map[string]pos{"name": f.at}
	r.poolPos[f.key] = at
	if f.value == nil || f.value.Kind != yaml.MappingNode {
		at["slots"] = f.valuePos()
		return s, r.slots(f, &s)
	}

	ok, hasSlots := true, false
	for _, g := range r.fields(f.value, f.path, f.at, "slots", "max_queued", "ordering",
		"starvation_after", "include_deferred", "on_resize", "description", "teams") {
		at[g.key] = g.valuePos()
		var good bool
		switch g.key {
		case "slots":
			hasSlots = true
			good = r.slots(g, &s)
		case "max_queued":
			s.MaxQueued, good = r.int(g, "0 for no limit, or more")
		case "ordering":
			var v string
			v, good = r.str(g)
			s.Ordering = vocab.Ordering(v)
		case "starvation_after":
			s.StarvationAfter, good = r.duration(g)
			s.StarvationSet = true
		case "include_deferred":
			s.IncludeDeferred, good = r.bool(g)
		case "on_resize":
			var v string
			v, good = r.str(g)
			s.OnResize = vocab.OnResize(v)
		case "description":
			s.Description, good = r.str(g)
		case "teams":
			s.Teams, good = r.teams(g)
		}
		ok = ok && good
	}
	if !hasSlots {
		if f.key != pools.DefaultPool {
			r.fail(f.at, f.path, "missing slots")
			return s, false
		}
		s.Slots = pools.DefaultPoolSlots
	}
	return s, ok
}

func (r *reader) slots(f field, s *pools.Spec) bool {
	if tag(f.value) == "!!str" && f.value.Value == "remainder" {
		s.Remainder = true
		return true
	}
	v, ok := r.int(f, slotsWant)
	s.Slots = v
	return ok
}

func (r *reader) rules(f field) []RuleSpec {
	var items []*yaml.Node
	switch {
	case yamlfile.IsNull(f.value):
		return nil
	case f.value.Kind == yaml.SequenceNode:
		items = f.value.Content
	default:
		r.bad(f, "a list of rules")
		return nil
	}
	var out []RuleSpec
	for i, item := range items {
		path := fmt.Sprintf("%s[%d]", f.path, i)
		node := r.unwrap(item)
		at := position(node, f.at)
		if node.Kind != yaml.MappingNode {
			r.bad(field{path: path, at: at, value: node}, "a rule mapping")
			continue
		}
		rule := RuleSpec{Slots: 1, Line: at.line, Column: at.col}
		seen := map[string]bool{}
		for _, g := range r.fields(node, path, at, "name", "priority", "when", "pool", "slots") {
			seen[g.key] = true
			switch g.key {
			case "name":
				rule.Name, _ = r.str(g)
			case "priority":
				rule.Priority, _ = r.int(g, "an integer")
			case "when":
				rule.When, _ = r.str(g)
				wp := g.valuePos()
				if g.value != nil && g.value.Style&(yaml.LiteralStyle|yaml.FoldedStyle) != 0 {
					wp = r.blockStart(g.value) // the expression, not the | or > indicator
				}
				rule.WhenLine, rule.WhenColumn = wp.line, wp.col
			case "pool":
				rule.Pool, _ = r.str(g)
			case "slots":
				if v, ok := r.int(g, "1 or more"); ok {
					if v < 1 {
						r.fail(g.valuePos(), g.path, "invalid value %d (want 1 or more)", v)
					}
					rule.Slots = v
				}
			}
		}
		for _, req := range []string{"name", "when", "pool"} {
			if !seen[req] {
				r.fail(at, path, "missing %s", req)
			}
		}
		out = append(out, rule)
	}
	return out
}

// hosts reads server.allowed_hosts: a list of host names, each optionally with a port.
func (r *reader) hosts(f field) []string {
	switch {
	case yamlfile.IsNull(f.value):
		return nil
	case f.value.Kind != yaml.SequenceNode:
		r.bad(f, "a list of host names")
		return nil
	}
	var out []string
	for i, item := range f.value.Content {
		g := field{path: fmt.Sprintf("%s[%d]", f.path, i), at: position(item, f.at), value: r.unwrap(item)}
		h, ok := r.str(g)
		switch {
		case !ok:
		case h == "" || strings.ContainsAny(h, "/ \t@"):
			r.fail(g.at, g.path, "invalid host %q (want a name such as poolflow.internal or poolflow.internal:8080)", h)
		default:
			out = append(out, h)
		}
	}
	return out
}

// teams reads a pool's teams: a list of team names (§15).
func (r *reader) teams(f field) ([]string, bool) {
	switch {
	case yamlfile.IsNull(f.value):
		return nil, true
	case f.value.Kind != yaml.SequenceNode:
		r.bad(f, "a list of team names")
		return nil, false
	}
	var out []string
	ok := true
	for i, item := range f.value.Content {
		g := field{path: fmt.Sprintf("%s[%d]", f.path, i), at: position(item, f.at), value: r.unwrap(item)}
		t, good := r.str(g)
		switch {
		case !good:
			ok = false
		case t == "" || strings.ContainsAny(t, ",: \t"):
			r.fail(g.at, g.path, "invalid team %q (want a name without spaces, commas or colons)", t)
			ok = false
		default:
			out = append(out, t)
		}
	}
	return out, ok
}
