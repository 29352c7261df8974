package vocab

// Ordering is a pool's admission policy (§4.4).
type Ordering string

const (
	Backfill Ordering = "backfill" // a later entry that fits may start ahead of one that does not (the default)
	Strict   Ordering = "strict"   // a head that lacks room blocks every later entry of the pool
)

// Orderings lists every ordering, the default first.
func Orderings() []Ordering { return []Ordering{Backfill, Strict} }

// Valid reports whether o is an ordering.
func (o Ordering) Valid() bool { return in(o, Orderings()) }

// OnResize is what a pool does when its capacity changes (§4.7).
type OnResize string

const (
	ResizeImmediate OnResize = "immediate" // the new capacity applies at once (the default)
	ResizeDrain     OnResize = "drain"     // the old capacity holds until the old queue has drained
)

// OnResizes lists every resize policy, the default first.
func OnResizes() []OnResize { return []OnResize{ResizeImmediate, ResizeDrain} }

// Valid reports whether r is a resize policy.
func (r OnResize) Valid() bool { return in(r, OnResizes()) }

// OwnerKind says what kind of process an owner is (§9).
type OwnerKind string

const (
	OwnerDaemon OwnerKind = "daemon" // poolflow serve
	OwnerTest   OwnerKind = "test"   // poolflow dags test
)

// OwnerKinds lists every owner kind.
func OwnerKinds() []OwnerKind { return []OwnerKind{OwnerDaemon, OwnerTest} }

// Valid reports whether k is an owner kind.
func (k OwnerKind) Valid() bool { return in(k, OwnerKinds()) }

func in[T comparable](v T, vs []T) bool {
	for _, x := range vs {
		if x == v {
			return true
		}
	}
	return false
}

// Strings is vs as plain strings, for the places that list accepted values (API filters,
// flag help).
func Strings[T ~string](vs []T) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = string(v)
	}
	return out
}
