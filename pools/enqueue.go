package pools

import (
	"errors"
	"fmt"

	"github.com/poolflow/poolflow/vocab"
)

// ErrRefused matches every *Refusal with errors.Is, for callers that map kinds of errors to
// answers (HTTP 409).
var ErrRefused = errors.New("refused by pool")

// Refusal is a pool refusing a new entry at enqueue time (§4.6, §4.7). Msg is the pool's own
// message, returned as is by HTTP 409 and in `rejected: <msg>` attempt reasons.
type Refusal struct {
	Pool   string
	Reason vocab.ReasonCode // vocab.ReasonDraining, vocab.ReasonOverCapacity or vocab.ReasonBacklogFull
	Msg    string
}

func (r *Refusal) Error() string { return r.Msg }

// Is makes errors.Is(err, ErrRefused) true for any refusal.
func (r *Refusal) Is(target error) bool { return target == ErrRefused }

// CheckEnqueue decides whether pool spec accepts one more waiting entry needing need slots, with
// queued entries already counting against its backlog (waiting entries plus terminal ones the
// task scheduler has not observed yet). draining says the pool drains its old queue under
// on_resize: drain; the caller knows whether the new capacity would fit, so a draining pool
// refuses everything new. Pass the capacity admission uses now in spec.Slots.
func CheckEnqueue(spec Spec, queued int, need int, draining bool) error {
	if r := refusal(spec, queued, need, draining); r != nil {
		return r
	}
	return nil
}

func refusal(spec Spec, queued int, need int, draining bool) *Refusal {
	switch {
	case draining:
		return &Refusal{Pool: spec.Name, Reason: vocab.ReasonDraining,
			Msg: fmt.Sprintf("pool %s is draining", spec.Name)}
	case spec.Slots != Unlimited && need > spec.Slots:
		return &Refusal{Pool: spec.Name, Reason: vocab.ReasonOverCapacity,
			Msg: fmt.Sprintf("pool %s: needs %d slots, capacity %d", spec.Name, need, spec.Slots)}
	case spec.MaxQueued > 0 && queued >= spec.MaxQueued:
		return &Refusal{Pool: spec.Name, Reason: vocab.ReasonBacklogFull,
			Msg: fmt.Sprintf("pool %s: backlog full (max_queued %d)", spec.Name, spec.MaxQueued)}
	}
	return nil
}

// Backlog is one pool as an enqueue-time check sees it: its spec (with the capacity admission
// uses now in Slots), the entries already counting against its backlog, and whether it drains
// its old queue (see CheckEnqueue).
type Backlog struct {
	Spec     Spec
	Queued   int
	Draining bool
}

// CheckEntry decides whether the pools a new entry needs accept it: each pool is checked as
// CheckEnqueue does, in the order of needs, and the first that refuses gives the refusal, which
// names it — not the entry's first pool. backlog returns a pool's backlog, or false for a name
// that is not a configured pool (an implicit limit, which has no backlog, or a pool that does
// not exist yet, which the entry waits for as unknown_pool): those needs are not checked.
// It returns nil when every pool accepts.
func CheckEntry(needs []Need, backlog func(pool string) (Backlog, bool)) *Refusal {
	for _, n := range needs {
		b, ok := backlog(n.Pool)
		if !ok {
			continue
		}
		if r := refusal(b.Spec, b.Queued, n.Slots, b.Draining); r != nil {
			return r
		}
	}
	return nil
}
