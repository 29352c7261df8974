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
