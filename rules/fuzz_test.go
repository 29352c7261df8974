package rules

import (
	"log/slog"
	"strings"
	"testing"
	"time"
)

// FuzzRule compiles an arbitrary condition and evaluates it against arbitrary attributes:
// neither may panic, and a compiled rule either matches (its pool) or does not (the default).
func FuzzRule(f *testing.F) {
	seeds := []string{
		`dag_id startsWith "etl_" and "heavy" in tags`,
		`params.region == "eu" or params.n > 3`,
		`try_number > 1 && kind in ["command", "bash"]`,
		`logical_date.Hour() < 6`,
		`tags[3] == "x"`,
		`len(filter(tags, # matches "^h")) > 0`,
		`params.a.b.c`,
		`1..100000 | any(# == try_number)`,
		`int(params.n) / 0 == 1`,
		`dag_id ==`,
		`$env.dag_id == trigger`,
	}
	for i, s := range seeds {
		f.Add(s, "etl_sales", "heavy,nightly", i, `{"region":"eu","n":4,"a":{"b":{"c":true}}}`, int64(i)*3600)
	}
	f.Fuzz(func(t *testing.T, when, dagID, tags string, try int, paramsJSON string, unix int64) {
		set, err := Compile([]Spec{{Name: "fz", Priority: 1, When: when, Pool: "p", Slots: 2}}, nil, "default")
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("compile error spans lines: %q", err)
			}
			return
		}
		set.SetLogger(slog.New(slog.DiscardHandler))
		params, err := parseParams(paramsJSON)
		if err != nil {
			params = map[string]any{"raw": paramsJSON}
		}
		a := Attrs{DAGID: dagID, TaskID: dagID, RunID: dagID, Owner: tags, Tags: splitTags(tags),
			Trigger: "manual", Params: params, TryNumber: try, Kind: "go", LogicalDate: time.Unix(unix, 0).UTC()}
		for range 2 {
			res := set.Assign(a)
			switch {
			case res.Rule == "fz" && res.Pool == "p" && res.Slots == 2:
			case res.Rule == "" && res.Pool == "default" && res.Slots == 1:
			default:
				t.Fatalf("Assign = %+v", res)
			}
			if len(res.Rules) != 1 || res.Rules[0].Matched != (res.Rule == "fz") {
				t.Fatalf("trace = %+v", res.Rules)
			}
			if strings.Contains(res.Rules[0].Error, "\n") {
				t.Fatalf("evaluation error spans lines: %q", res.Rules[0].Error)
			}
			if _, err := res.JSON(); err != nil {
				t.Fatal(err)
			}
			_ = res.Text()
		}
	})
}

// FuzzParseAttrs checks that any command-line attribute either parses or is refused, never
// panics.
func FuzzParseAttrs(f *testing.F) {
	f.Add("dag_id=etl_x", "tags=a,b", "try_number=2", `{"a":1}`)
	f.Add("logical_date=2024-05-01T00:00:00Z", "kind=go", "trigger=manual", `[]`)
	f.Fuzz(func(t *testing.T, a, b, c, params string) {
		got, err := ParseAttrs([]string{a, b, c}, params)
		if err == nil && (got.TryNumber < 1 || got.Kind == "") {
			t.Fatalf("ParseAttrs = %+v", got)
		}
	})
}
