package rules

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// Result is the outcome of Assign: the pool and slots, and why.
type Result struct {
	Rule  string // the matching rule; "" when no rule matched
	Pool  string
	Slots int
	Why   string
	// Rules lists every rule evaluated, in priority order, up to and including the winner, so
	// an explanation can say why each earlier rule did not match.
	Rules []Trace
}

// Trace is the evaluation of one rule.
type Trace struct {
	Name     string
	Priority int
	Matched  bool
	Error    string // the runtime error that made it not match; "" when it evaluated
	// Skipped says why a rule that matched was passed over: its pool is not open to the
	// attempt's team (§15). "" when it was not.
	Skipped string
}

// Skipped says which rules matched but were skipped for the attempt's team, and why, in one
// line ("rule heavy-etl skipped: pool warehouse is for team finance, not team sales"); "" when
// none was. It is stored with the queue entry, beside the rule that assigned its pool.
func (r Result) Skipped() string {
	var parts []string
	for _, t := range r.Rules {
		if t.Skipped != "" {
			parts = append(parts, fmt.Sprintf("rule %s skipped: %s", t.Name, t.Skipped))
		}
	}
	return strings.Join(parts, "; ")
}

type resultJSON struct {
	Rule  *string     `json:"rule"`
	Pool  string      `json:"pool"`
	Slots int         `json:"slots"`
	Why   string      `json:"why"`
	Rules []traceJSON `json:"rules"`
}

type traceJSON struct {
	Name     string  `json:"name"`
	Priority int     `json:"priority"`
	Matched  bool    `json:"matched"`
	Error    *string `json:"error"`
	Skipped  *string `json:"skipped"`
}

// MarshalJSON gives the shape shared by `poolflow rules test -o json` and
// POST /api/v1/rules/test: "rule" and each trace's "error" are null when absent.
func (r Result) MarshalJSON() ([]byte, error) {
	out := resultJSON{Pool: r.Pool, Slots: r.Slots, Why: r.Why, Rules: make([]traceJSON, len(r.Rules))}
	if r.Rule != "" {
		out.Rule = &r.Rule
	}
	for i, t := range r.Rules {
		out.Rules[i] = traceJSON{Name: t.Name, Priority: t.Priority, Matched: t.Matched}
		if t.Error != "" {
			out.Rules[i].Error = &r.Rules[i].Error
		}
		if t.Skipped != "" {
			out.Rules[i].Skipped = &r.Rules[i].Skipped
		}
	}
	return marshalPlain(out)
}

// JSON is the MarshalJSON shape without HTML escaping, so that an error such as
// "<nil> > int" prints as written.
func (r Result) JSON() ([]byte, error) { return marshalPlain(r) }

func marshalPlain(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// Text explains the result for people: the winner (or that none matched) and, for every rule
// evaluated before it, why it did not match.
func (r Result) Text() string {
	var b strings.Builder
	if r.Rule != "" {
		fmt.Fprintf(&b, "%s: pool %s, %s\n", r.Why, r.Pool, slotsText(r.Slots))
	} else {
		fmt.Fprintf(&b, "%s %s, %s\n", r.Why, r.Pool, slotsText(r.Slots))
	}
	for _, t := range r.Rules {
		if t.Skipped != "" {
			fmt.Fprintf(&b, "  rule %s (priority %d) matched but is skipped: %s\n", t.Name, t.Priority, t.Skipped)
			continue
		}
		if t.Matched {
			break
		}
		reason := "condition false"
		if t.Error != "" {
			reason = "evaluation error: " + t.Error
		}
		fmt.Fprintf(&b, "  rule %s (priority %d) did not match: %s\n", t.Name, t.Priority, reason)
	}
	return b.String()
}

func slotsText(n int) string {
	if n == 1 {
		return "1 slot"
	}
	return fmt.Sprintf("%d slots", n)
}
