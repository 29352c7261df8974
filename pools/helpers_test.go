package pools

import (
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/poolflow/poolflow/vocab"
)

// t0 is the fixed "now" of the table tests.
var t0 = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

// ns parses "pool:slots" pairs into needs.
func ns(specs ...string) []Need {
	out := make([]Need, 0, len(specs))
	for _, s := range specs {
		name, slots, ok := strings.Cut(s, ":")
		if !ok {
			panic("bad need " + s)
		}
		n, err := strconv.Atoi(slots)
		if err != nil {
			panic(err)
		}
		out = append(out, Need{Pool: name, Slots: n})
	}
	return out
}

type opt func(*Entry)

func prio(p int) opt             { return func(e *Entry) { e.Priority = p } }
func dueAgo(d time.Duration) opt { return func(e *Entry) { e.Due = t0.Add(-d) } }
func deadline(t time.Time) opt   { return func(e *Entry) { e.Deadline = t } }
func queuedAgo(d time.Duration) opt {
	return func(e *Entry) { e.Queued = t0.Add(-d) }
}
func notBefore(t time.Time) opt { return func(e *Entry) { e.NotBefore = t } }
func blocked(b Block) opt       { return func(e *Entry) { e.Block = b } }
func force() opt                { return func(e *Entry) { e.Force = true } }
func bf() opt                   { return func(e *Entry) { e.Backfill = true } }
func keeps(specs ...string) opt { return func(e *Entry) { e.Kept = ns(specs...) } }
func entry(id int64, label string, needs []Need, opts ...opt) Entry {
	e := Entry{ID: id, Label: label + " try 1", Due: t0, Needs: needs}
	for _, o := range opts {
		o(&e)
	}
	return e
}

func named(name string, slots int) Pool {
	return Pool{Name: name, Slots: slots, Ordering: vocab.Backfill, StarvationAfter: 10 * time.Minute}
}

func strict(name string, slots int) Pool {
	return Pool{Name: name, Slots: slots, Ordering: vocab.Strict}
}

func noStarve(p Pool) Pool { p.StarvationAfter = 0; return p }

func poolMap(ps ...Pool) map[string]Pool {
	m := make(map[string]Pool, len(ps))
	for _, p := range ps {
		m[p.Name] = p
	}
	return m
}

func hold(id int64, label string, slots int) Holder {
	return Holder{Entry: id, Label: label + " try 1", Slots: slots}
}

func reasonTexts(d Decision) map[int64]string {
	out := make(map[int64]string, d.Waiting())
	for id, r := range d.Reasons() {
		out[id] = r.String()
	}
	return out
}

// reasonMap is every reason of a full walk's decision by entry ID.
func reasonMap(d Decision) map[int64]Reason {
	out := make(map[int64]Reason, d.Waiting())
	for id, r := range d.Reasons() {
		out[id] = r
	}
	return out
}

// sameDecision compares what a pass decides: admissions, expiries, not_mine room and
// rejections; reasons are compared separately.
func sameDecision(a, b Decision) bool {
	return slices.Equal(a.Admitted, b.Admitted) && slices.Equal(a.Expired, b.Expired) &&
		slices.Equal(a.NotMine, b.NotMine) && reflect.DeepEqual(a.Rejected, b.Rejected)
}
