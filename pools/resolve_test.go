package pools

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/poolflow/poolflow/vocab"
)

func TestResolve(t *testing.T) {
	t.Parallel()
	def := Spec{Name: "default", Slots: 128, Ordering: vocab.Backfill, StarvationAfter: 10 * time.Minute,
		StarvationSet: true, OnResize: "immediate"}
	tests := []struct {
		name       string
		maxRunning int
		specs      []Spec
		want       map[string]Spec
	}{
		{
			name: "empty gets the default pool",
			want: map[string]Spec{"default": def},
		},
		{
			name:       "defaults filled",
			maxRunning: 32,
			specs: []Spec{
				{Name: "db", Slots: 1},
				{Name: "wh", Slots: 4, Ordering: vocab.Strict, OnResize: "drain", MaxQueued: 100},
				{Name: "u", Slots: Unlimited, StarvationSet: true},
				{Name: "z", Slots: 0, StarvationAfter: time.Minute},
			},
			want: map[string]Spec{
				"default": def,
				"db": {Name: "db", Slots: 1, Ordering: vocab.Backfill, StarvationAfter: 10 * time.Minute,
					StarvationSet: true, OnResize: "immediate"},
				"wh": {Name: "wh", Slots: 4, Ordering: vocab.Strict, OnResize: "drain", MaxQueued: 100},
				"u":  {Name: "u", Slots: -1, Ordering: vocab.Backfill, StarvationSet: true, OnResize: "immediate"},
				"z": {Name: "z", Slots: 0, Ordering: vocab.Backfill, StarvationAfter: time.Minute,
					StarvationSet: true, OnResize: "immediate"},
			},
		},
		{
			name:       "remainder leaves out unlimited pools",
			maxRunning: 32,
			specs: []Spec{
				{Name: "db", Slots: 10},
				{Name: "u", Slots: Unlimited},
				{Name: "default", Remainder: true},
			},
			want: map[string]Spec{
				"default": {Name: "default", Slots: 22, Remainder: true, Ordering: vocab.Backfill,
					StarvationAfter: 10 * time.Minute, StarvationSet: true, OnResize: "immediate"},
				"db": {Name: "db", Slots: 10, Ordering: vocab.Backfill, StarvationAfter: 10 * time.Minute,
					StarvationSet: true, OnResize: "immediate"},
				"u": {Name: "u", Slots: -1, Ordering: vocab.Backfill, StarvationAfter: 10 * time.Minute,
					StarvationSet: true, OnResize: "immediate"},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := Resolve(tt.maxRunning, tt.specs)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got  %+v\nwant %+v", got, tt.want)
			}
			// Resolving resolved specs changes nothing (pools round-trip through the store).
			var again []Spec
			for _, s := range got {
				again = append(again, s)
			}
			got2, err := Resolve(tt.maxRunning, again)
			if err != nil || !reflect.DeepEqual(got2, got) {
				t.Fatalf("second resolve: %v\n%+v", err, got2)
			}
		})
	}
}

func TestResolveErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		maxRunning int
		specs      []Spec
		want       []string
	}{
		{name: "reserved name", specs: []Spec{{Name: "_global", Slots: 1}},
			want: []string{`pool _global: name: invalid name "_global" (names starting with _ are reserved for implicit pools)`}},
		{name: "empty name", specs: []Spec{{Slots: 1}}, want: []string{"pool : name: empty pool name"}},
		{name: "slash in name", specs: []Spec{{Name: "a/b", Slots: 1}},
			want: []string{`pool a/b: name: invalid name "a/b" (no '/', spaces or control characters)`}},
		{name: "duplicate", specs: []Spec{{Name: "db", Slots: 1}, {Name: "db", Slots: 2}},
			want: []string{"pool db: name: duplicate pool name"}},
		{name: "slots", specs: []Spec{{Name: "db", Slots: -2}},
			want: []string{"pool db: slots: invalid value -2 (want -1 for unlimited, or 0 or more)"}},
		{name: "max_queued", specs: []Spec{{Name: "db", Slots: 1, MaxQueued: -1}},
			want: []string{"pool db: max_queued: invalid value -1 (want 0 for none, or more)"}},
		{name: "ordering", specs: []Spec{{Name: "db", Slots: 1, Ordering: "fifo"}},
			want: []string{`pool db: ordering: invalid value "fifo" (want strict or backfill)`}},
		{name: "starvation on strict", specs: []Spec{{Name: "db", Slots: 1, Ordering: vocab.Strict, StarvationAfter: time.Minute}},
			want: []string{"pool db: starvation_after: not allowed on a strict pool"}},
		{name: "explicit 0 starvation on strict", specs: []Spec{{Name: "db", Slots: 1, Ordering: vocab.Strict, StarvationSet: true}},
			want: []string{"pool db: starvation_after: not allowed on a strict pool"}},
		{name: "negative starvation", specs: []Spec{{Name: "db", Slots: 1, StarvationAfter: -time.Second}},
			want: []string{"pool db: starvation_after: invalid value -1s (want 0 for off, or more)"}},
		{name: "on_resize", specs: []Spec{{Name: "db", Slots: 1, OnResize: "later"}},
			want: []string{`pool db: on_resize: invalid value "later" (want immediate or drain)`}},
		{name: "remainder elsewhere", maxRunning: 10, specs: []Spec{{Name: "db", Remainder: true}},
			want: []string{"pool db: slots: remainder is only allowed for the default pool"}},
		{name: "remainder below 1", maxRunning: 8, specs: []Spec{{Name: "db", Slots: 5}, {Name: "wh", Slots: 3},
			{Name: "default", Remainder: true}},
			want: []string{"pool default: slots: remainder is 0 (max_running 8 minus 8 finite slots of the other pools), want at least 1"}},
		{name: "remainder without max_running", specs: []Spec{{Name: "default", Remainder: true}},
			want: []string{"pool default: slots: remainder needs max_running, which is 0 (none)"}},
		{name: "all problems reported", specs: []Spec{{Name: "a", Slots: -5, Ordering: "x"}, {Name: "_b", Slots: 1}},
			want: []string{
				"pool a: slots: invalid value -5 (want -1 for unlimited, or 0 or more)",
				`pool a: ordering: invalid value "x" (want strict or backfill)`,
				`pool _b: name: invalid name "_b" (names starting with _ are reserved for implicit pools)`,
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := Resolve(tt.maxRunning, tt.specs)
			if err == nil {
				t.Fatalf("no error, got %+v", got)
			}
			if msg := err.Error(); msg != strings.Join(tt.want, "\n") {
				t.Fatalf("error:\n%s\nwant:\n%s", msg, strings.Join(tt.want, "\n"))
			}
			var se *SpecError
			if !errors.As(err, &se) || se.Field == "" {
				t.Fatalf("error is not a *SpecError: %T", err)
			}
		})
	}
}

func TestSpecPool(t *testing.T) {
	t.Parallel()
	got := Spec{Name: "wh", Slots: 4, Ordering: vocab.Strict, StarvationAfter: time.Minute}.Pool()
	if want := (Pool{Name: "wh", Slots: 4, Ordering: vocab.Strict}); got != want {
		t.Errorf("strict Pool() = %+v, want %+v", got, want)
	}
	got = Spec{Name: "db", Slots: 1, StarvationAfter: time.Minute}.Pool()
	if want := (Pool{Name: "db", Slots: 1, Ordering: vocab.Backfill, StarvationAfter: time.Minute}); got != want {
		t.Errorf("backfill Pool() = %+v, want %+v", got, want)
	}
	if got, want := Implicit(GlobalPool, 8), (Pool{Name: GlobalPool, Slots: 8, Ordering: vocab.Backfill, Implicit: true}); got != want {
		t.Errorf("Implicit = %+v, want %+v", got, want)
	}
}
