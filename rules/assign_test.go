package rules

import (
	"bytes"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"
)

// mustCompile compiles specs against any pool name, failing the test on error. Warnings are
// discarded; tests about them set their own logger.
func mustCompile(t testing.TB, specs ...Spec) *Set {
	t.Helper()
	set, err := Compile(specs, nil, "default")
	if err != nil {
		t.Fatalf("compile: %v", err)
	}
	set.SetLogger(slog.New(slog.DiscardHandler))
	return set
}

func TestAssign(t *testing.T) {
	t.Parallel()
	heavy := Spec{Name: "heavy-etl", Priority: 10, When: `dag_id startsWith "etl_" and "heavy" in tags`, Pool: "warehouse", Slots: 2}
	manual := Spec{Name: "manual", Priority: 5, When: `trigger == "manual"`, Pool: "interactive"}
	anyETL := Spec{Name: "any-etl", Priority: 20, When: `dag_id startsWith "etl_"`, Pool: "etl"}
	retry := Spec{Name: "retries", Priority: 1, When: `try_number > 1`, Pool: "retry"}
	night := Spec{Name: "night", Priority: 3, When: `logical_date.Hour() < 6 and kind in ["command", "bash"]`, Pool: "night"}
	eu := Spec{Name: "eu", Priority: 4, When: `params.region == "eu" and owner == "ana"`, Pool: "eu"}

	noon := time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name      string
		specs     []Spec
		attrs     Attrs
		wantRule  string
		wantPool  string
		wantSlots int
		wantTrace []string // names of the evaluated rules
	}{
		{
			name:  "single match with slots",
			specs: []Spec{heavy}, attrs: Attrs{DAGID: "etl_sales", Tags: []string{"nightly", "heavy"}},
			wantRule: "heavy-etl", wantPool: "warehouse", wantSlots: 2, wantTrace: []string{"heavy-etl"},
		},
		{
			name:  "slots default to 1",
			specs: []Spec{anyETL}, attrs: Attrs{DAGID: "etl_sales"},
			wantRule: "any-etl", wantPool: "etl", wantSlots: 1, wantTrace: []string{"any-etl"},
		},
		{
			name:  "lowest priority is evaluated first, whatever the file order",
			specs: []Spec{anyETL, heavy}, attrs: Attrs{DAGID: "etl_sales", Tags: []string{"heavy"}},
			wantRule: "heavy-etl", wantPool: "warehouse", wantSlots: 2, wantTrace: []string{"heavy-etl"},
		},
		{
			name:  "first match wins and later rules are not evaluated",
			specs: []Spec{anyETL, heavy, manual}, attrs: Attrs{DAGID: "etl_sales", Tags: []string{"heavy"}, Trigger: "manual"},
			wantRule: "manual", wantPool: "interactive", wantSlots: 1, wantTrace: []string{"manual"},
		},
		{
			name:  "falls through non-matching rules",
			specs: []Spec{anyETL, heavy, manual}, attrs: Attrs{DAGID: "etl_sales", Trigger: "schedule"},
			wantRule: "any-etl", wantPool: "etl", wantSlots: 1, wantTrace: []string{"manual", "heavy-etl", "any-etl"},
		},
		{
			name:  "no match gives the default pool with one slot",
			specs: []Spec{anyETL, heavy, manual}, attrs: Attrs{DAGID: "report", Trigger: "schedule"},
			wantRule: "", wantPool: "default", wantSlots: 1, wantTrace: []string{"manual", "heavy-etl", "any-etl"},
		},
		{
			name:     "no rules",
			attrs:    Attrs{DAGID: "etl_sales"},
			wantRule: "", wantPool: "default", wantSlots: 1, wantTrace: []string{},
		},
		{
			name:  "first try does not match a retry rule",
			specs: []Spec{retry, anyETL}, attrs: Attrs{DAGID: "etl_sales", TryNumber: 1},
			wantRule: "any-etl", wantPool: "etl", wantSlots: 1, wantTrace: []string{"retries", "any-etl"},
		},
		{
			name:  "logical date and kind",
			specs: []Spec{night}, attrs: Attrs{Kind: "bash", LogicalDate: noon.Add(-9 * time.Hour)},
			wantRule: "night", wantPool: "night", wantSlots: 1, wantTrace: []string{"night"},
		},
		{
			name:  "logical date outside the window",
			specs: []Spec{night}, attrs: Attrs{Kind: "bash", LogicalDate: noon},
			wantRule: "", wantPool: "default", wantSlots: 1, wantTrace: []string{"night"},
		},
		{
			name:  "params",
			specs: []Spec{eu}, attrs: Attrs{Owner: "ana", Params: map[string]any{"region": "eu"}},
			wantRule: "eu", wantPool: "eu", wantSlots: 1, wantTrace: []string{"eu"},
		},
		{
			name:  "missing param reads as nil and does not match",
			specs: []Spec{eu}, attrs: Attrs{Owner: "ana"},
			wantRule: "", wantPool: "default", wantSlots: 1, wantTrace: []string{"eu"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := mustCompile(t, tt.specs...).Assign(tt.attrs)
			if got.Rule != tt.wantRule || got.Pool != tt.wantPool || got.Slots != tt.wantSlots {
				t.Errorf("Assign = rule %q pool %q slots %d, want rule %q pool %q slots %d",
					got.Rule, got.Pool, got.Slots, tt.wantRule, tt.wantPool, tt.wantSlots)
			}
			names := []string{}
			for i, tr := range got.Rules {
				names = append(names, tr.Name)
				if last := i == len(got.Rules)-1; tr.Matched != (last && tt.wantRule != "") {
					t.Errorf("trace %s: matched = %v", tr.Name, tr.Matched)
				}
				if tr.Error != "" {
					t.Errorf("trace %s: unexpected error %q", tr.Name, tr.Error)
				}
			}
			if strings.Join(names, ",") != strings.Join(tt.wantTrace, ",") {
				t.Errorf("trace = %v, want %v", names, tt.wantTrace)
			}
		})
	}
}

// syncBuffer lets concurrent Assign calls share one log buffer under -race.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func TestAssignRuntimeErrorIsNonMatchWarnedOncePerRule(t *testing.T) {
	t.Parallel()
	set := mustCompile(t,
		Spec{Name: "big-batch", Priority: 1, When: `params.batch > 100`, Pool: "big"},
		Spec{Name: "third-tag", Priority: 2, When: `tags[2] == "x"`, Pool: "x"},
		Spec{Name: "fallback", Priority: 3, When: `kind == "go"`, Pool: "go"},
	)
	var logs syncBuffer
	set.SetLogger(slog.New(slog.NewTextHandler(&logs, nil)))

	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 50 {
				got := set.Assign(Attrs{DAGID: "d", Kind: "go", Params: map[string]any{}})
				if got.Rule != "fallback" || got.Pool != "go" {
					t.Errorf("Assign = %q/%q, want fallback/go", got.Rule, got.Pool)
					return
				}
				if len(got.Rules) != 3 || got.Rules[0].Matched || got.Rules[1].Matched {
					t.Errorf("trace = %+v", got.Rules)
					return
				}
				if want := "invalid operation: <nil> > int (1:14)"; got.Rules[0].Error != want {
					t.Errorf("big-batch error = %q, want %q", got.Rules[0].Error, want)
				}
				if want := "index out of range: 2 (array length is 0) (1:5)"; got.Rules[1].Error != want {
					t.Errorf("third-tag error = %q, want %q", got.Rules[1].Error, want)
				}
			}
		})
	}
	wg.Wait()

	lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("got %d log lines, want one per failing rule:\n%s", len(lines), logs.String())
	}
	for i, rule := range []string{"big-batch", "third-tag"} {
		found := false
		for _, l := range lines {
			found = found || (strings.Contains(l, "level=WARN") && strings.Contains(l, "rule="+rule+" "))
		}
		if !found {
			t.Errorf("no warning for rule %d (%s) in:\n%s", i, rule, logs.String())
		}
	}
}

func TestAssignNonBoolResultIsNonMatch(t *testing.T) {
	t.Parallel()
	// params values are typed any, so `params.flag` compiles and may hold a non-boolean.
	set := mustCompile(t, Spec{Name: "flag", Priority: 1, When: `params.flag`, Pool: "p"})
	got := set.Assign(Attrs{Params: map[string]any{"flag": "yes"}})
	if got.Rule != "" || got.Rules[0].Error == "" {
		t.Errorf("Assign = %+v, want no match with an error", got)
	}
	if got := set.Assign(Attrs{Params: map[string]any{"flag": true}}); got.Rule != "flag" {
		t.Errorf("Assign with flag=true = %+v, want rule flag", got)
	}
}

// The daemon keeps each attempt's stored assignment; here we check what it relies on: a
// Result is a value that a later Set cannot change, Assign is deterministic, and a retry is
// assigned afresh with its own try number.
func TestAssignDeterministicAndRetry(t *testing.T) {
	t.Parallel()
	specs := []Spec{
		{Name: "retries", Priority: 1, When: `try_number > 1`, Pool: "retry"},
		{Name: "etl", Priority: 2, When: `dag_id startsWith "etl_"`, Pool: "etl", Slots: 2},
	}
	old := mustCompile(t, specs...)
	first := Attrs{DAGID: "etl_sales", TryNumber: 1, Params: map[string]any{"n": 1.0}}
	stored := old.Assign(first)
	snapshot, err := stored.JSON()
	if err != nil {
		t.Fatal(err)
	}

	changed := append([]Spec(nil), specs...)
	changed[1].Pool, changed[1].Slots = "warehouse", 4
	reloaded := mustCompile(t, changed...)
	if got := reloaded.Assign(first); got.Pool != "warehouse" || got.Slots != 4 {
		t.Errorf("reloaded Assign = %s/%d, want warehouse/4", got.Pool, got.Slots)
	}
	if again, _ := stored.JSON(); string(again) != string(snapshot) {
		t.Errorf("stored result changed after recompiling:\n%s\n%s", snapshot, again)
	}
	for range 3 {
		if again, _ := old.Assign(first).JSON(); string(again) != string(snapshot) {
			t.Errorf("Assign not deterministic:\n%s\n%s", snapshot, again)
		}
	}

	retry := first
	retry.TryNumber = 2
	if got := reloaded.Assign(retry); got.Rule != "retries" || got.Pool != "retry" {
		t.Errorf("retry Assign = %q/%q, want retries/retry", got.Rule, got.Pool)
	}
}
