package pools

import (
	"errors"
	"fmt"
	"strings"
	"unicode"

	"github.com/poolflow/poolflow/vocab"
)

// SpecError is one invalid field of one pool spec. Field uses the poolflow.yaml key name
// ("slots", "ordering", …; "name" for the pool's name itself), so a config reader can point at
// the offending token.
type SpecError struct {
	Pool  string
	Field string
	Msg   string
}

func (e *SpecError) Error() string {
	return fmt.Sprintf("pool %s: %s: %s", ShortName(e.Pool), e.Field, e.Msg)
}

// ShortName is a pool name fit for a message: a name over MaxNameLen is cut, so an absurd one
// cannot bury the message it appears in.
func ShortName(name string) string {
	if len(name) <= MaxNameLen {
		return name
	}
	return fmt.Sprintf("%.32s… (%d bytes)", name, len(name))
}

// Resolve validates pool specs and fills their defaults (§4.1): a missing default pool is
// added with 128 slots, ordering defaults to backfill, starvation_after to 10m on backfill pools,
// on_resize to immediate, and a remainder pool gets max_running minus the other pools' finite
// slots. maxRunning is max_running (0 = none). Every problem is reported, as *SpecError values
// joined in spec order.
func Resolve(maxRunning int, specs []Spec) (map[string]Spec, error) {
	var errs []error
	fail := func(pool, field, format string, args ...any) {
		errs = append(errs, &SpecError{Pool: pool, Field: field, Msg: fmt.Sprintf(format, args...)})
	}
	out := make(map[string]Spec, len(specs)+1)
	finite := 0 // finite slots of every pool that is not a remainder pool
	var remainder []string
	for _, s := range specs {
		if msg := nameProblem(s.Name); msg != "" {
			fail(s.Name, "name", "%s", msg)
			continue
		}
		if _, dup := out[s.Name]; dup {
			fail(s.Name, "name", "duplicate pool name")
			continue
		}
		switch {
		case s.Remainder && s.Name != DefaultPool:
			fail(s.Name, "slots", "remainder is only allowed for the default pool")
		case s.Remainder:
			remainder = append(remainder, s.Name)
		case s.Slots < Unlimited:
			fail(s.Name, "slots", "invalid value %d (want -1 for unlimited, or 0 or more)", s.Slots)
		case s.Slots > 0:
			finite += s.Slots
		}
		if s.MaxQueued < 0 {
			fail(s.Name, "max_queued", "invalid value %d (want 0 for none, or more)", s.MaxQueued)
		}
		switch s.Ordering {
		case "":
			s.Ordering = vocab.Backfill
		case vocab.Backfill, vocab.Strict:
		default:
			fail(s.Name, "ordering", "invalid value %q (want strict or backfill)", s.Ordering)
		}
		set := s.StarvationSet || s.StarvationAfter != 0
		switch {
		case s.StarvationAfter < 0:
			fail(s.Name, "starvation_after", "invalid value %s (want 0 for off, or more)", s.StarvationAfter)
		case s.Ordering == vocab.Strict && set:
			fail(s.Name, "starvation_after", "not allowed on a strict pool")
		case s.Ordering != vocab.Strict && !set:
			s.StarvationAfter = DefaultStarvationAfter
		}
		if s.Ordering != vocab.Strict {
			s.StarvationSet = true
		}
		switch s.OnResize {
		case "":
			s.OnResize = vocab.ResizeImmediate
		case vocab.ResizeImmediate, vocab.ResizeDrain:
		default:
			fail(s.Name, "on_resize", "invalid value %q (want immediate or drain)", s.OnResize)
		}
		out[s.Name] = s
	}
	for _, name := range remainder {
		s := out[name]
		switch left := maxRunning - finite; {
		case maxRunning == 0:
			fail(name, "slots", "remainder needs max_running, which is 0 (none)")
		case left < 1:
			fail(name, "slots", "remainder is %d (max_running %d minus %d finite slots of the other pools), want at least 1",
				left, maxRunning, finite)
		default:
			s.Slots = left
		}
		out[name] = s
	}
	if _, ok := out[DefaultPool]; !ok {
		out[DefaultPool] = Spec{
			Name: DefaultPool, Slots: DefaultPoolSlots, Ordering: vocab.Backfill,
			StarvationAfter: DefaultStarvationAfter, StarvationSet: true, OnResize: vocab.ResizeImmediate,
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return out, nil
}

// MaxNameLen is the longest pool name, in bytes. Names are path segments, label values and
// table keys; Airflow's pool column holds 256, and 128 leaves room for the implicit prefixes.
const MaxNameLen = 128

// nameProblem says what is wrong with a pool name, or "". Names appear in URL paths, log keys
// and CLI arguments, so they are kept to printable characters without '/' or spaces.
func nameProblem(name string) string {
	switch {
	case name == "":
		return "empty pool name"
	case len(name) > MaxNameLen:
		// The name is not quoted back: a 100,000-character name would bury the message.
		return fmt.Sprintf("name of %d bytes is too long (at most %d)", len(name), MaxNameLen)
	case strings.HasPrefix(name, "_"):
		return fmt.Sprintf("invalid name %q (names starting with _ are reserved for implicit pools)", name)
	case strings.IndexFunc(name, func(r rune) bool { return r == '/' || !unicode.IsPrint(r) || unicode.IsSpace(r) }) >= 0:
		return fmt.Sprintf("invalid name %q (no '/', spaces or control characters)", name)
	}
	return ""
}
