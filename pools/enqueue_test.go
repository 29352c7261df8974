package pools

import (
	"errors"
	"testing"

	"github.com/poolflow/poolflow/vocab"
)

func TestCheckEnqueue(t *testing.T) {
	t.Parallel()
	wh := Spec{Name: "warehouse", Slots: 4, MaxQueued: 100}
	tests := []struct {
		name     string
		spec     Spec
		queued   int
		need     int
		draining bool
		kind     vocab.ReasonCode
		msg      string
	}{
		{name: "accepted", spec: wh, queued: 99, need: 4},
		{name: "backlog full", spec: wh, queued: 100, need: 1, kind: vocab.ReasonBacklogFull,
			msg: "pool warehouse: backlog full (max_queued 100)"},
		{name: "no backlog limit", spec: Spec{Name: "db", Slots: 1}, queued: 1 << 20, need: 1},
		{name: "over capacity", spec: wh, need: 5, kind: vocab.ReasonOverCapacity,
			msg: "pool warehouse: needs 5 slots, capacity 4"},
		{name: "unlimited has no capacity check", spec: Spec{Name: "u", Slots: Unlimited}, need: 1000},
		{name: "draining refuses first", spec: wh, queued: 100, need: 5, draining: true, kind: vocab.ReasonDraining,
			msg: "pool warehouse is draining"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := CheckEnqueue(tt.spec, tt.queued, tt.need, tt.draining)
			if tt.kind == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var r *Refusal
			if !errors.As(err, &r) {
				t.Fatalf("err = %v, want a *Refusal", err)
			}
			if r.Reason != tt.kind || r.Msg != tt.msg || err.Error() != tt.msg || r.Pool != tt.spec.Name {
				t.Errorf("refusal %+v, want %s %q", r, tt.kind, tt.msg)
			}
			if !errors.Is(err, ErrRefused) {
				t.Errorf("errors.Is(err, ErrRefused) = false")
			}
		})
	}
}

// TestCheckEntryNamesTheRefusingPool: an entry needing several pools is refused by the first
// pool, in the order of its needs, that refuses it, and the refusal names that pool, whatever
// pool comes first; needs of names without a backlog (limits, pools not created yet) pass.
func TestCheckEntryNamesTheRefusingPool(t *testing.T) {
	t.Parallel()
	backlogs := map[string]Backlog{
		"a":     {Spec: Spec{Name: "a", Slots: 5}},
		"small": {Spec: Spec{Name: "small", Slots: 2, MaxQueued: 1}, Queued: 1},
		"wh":    {Spec: Spec{Name: "wh", Slots: 4}, Draining: true},
	}
	lookup := func(name string) (Backlog, bool) { b, ok := backlogs[name]; return b, ok }
	tests := []struct {
		name  string
		needs []Need
		pool  string
		kind  vocab.ReasonCode
		msg   string
	}{
		{name: "accepted", needs: ns("a:1", "_global:1", "nope:1")},
		{name: "second pool refuses", needs: ns("a:1", "small:1", "_task/d/t:1"), pool: "small",
			kind: vocab.ReasonBacklogFull, msg: "pool small: backlog full (max_queued 1)"},
		{name: "over capacity in the second", needs: ns("_global:1", "a:6"), pool: "a", kind: vocab.ReasonOverCapacity,
			msg: "pool a: needs 6 slots, capacity 5"},
		{name: "the first of two refusing pools", needs: ns("a:1", "wh:1", "small:1"), pool: "wh",
			kind: vocab.ReasonDraining, msg: "pool wh is draining"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := CheckEntry(tt.needs, lookup)
			if tt.pool == "" {
				if r != nil {
					t.Fatalf("refused: %+v", r)
				}
				return
			}
			if r == nil || r.Pool != tt.pool || r.Reason != tt.kind || r.Msg != tt.msg {
				t.Fatalf("refusal %+v, want pool %s %s %q", r, tt.pool, tt.kind, tt.msg)
			}
		})
	}
}
