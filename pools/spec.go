package pools

import (
	"time"

	"github.com/poolflow/poolflow/vocab"
	// Spec is a pool as configured in poolflow.yaml or stored through the CLI/API (§4.1).
)

type Spec struct {
	Name            string
	Slots           int  // -1 = unlimited
	Remainder       bool // default pool only: max_running minus the other pools' finite slots
	MaxQueued       int  // 0 = no backlog limit
	Ordering        vocab.Ordering
	StarvationAfter time.Duration // backfill only; default 10m; 0 = off
	// StarvationSet says starvation_after was given, so an explicit 0 (off) is kept rather than
	// defaulted. A non-zero StarvationAfter counts as set too.
	StarvationSet   bool
	IncludeDeferred bool
	OnResize        vocab.OnResize
	Description     string
	// Teams are the teams whose DAGs may use the pool (§15); none = every team.
	Teams        []string
	Source       string // "file" or "store"
	Line, Column int    // position in poolflow.yaml, 0 for stored pools
}

// Default pool settings (§4.1).
const (
	DefaultPool            = "default"
	DefaultPoolSlots       = 128
	DefaultStarvationAfter = 10 * time.Minute
)

// Pool is the pool admission uses for this spec. Resolve it first: Pool does not fill defaults.
func (s Spec) Pool() Pool {
	p := Pool{Name: s.Name, Slots: s.Slots, Ordering: s.Ordering, StarvationAfter: s.StarvationAfter}
	if p.Ordering == "" {
		p.Ordering = vocab.Backfill
	}
	if p.Ordering == vocab.Strict {
		p.StarvationAfter = 0
	}
	return p
}

// Implicit is the implicit pool of a limit (§4.2): backfill, never starve-promoted.
func Implicit(name string, slots int) Pool {
	return Pool{Name: name, Slots: slots, Ordering: vocab.Backfill, Implicit: true}
}
