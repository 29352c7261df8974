package rules

import (
	"testing"
)

func explainSet(t *testing.T) *Set {
	t.Helper()
	set := mustCompile(t,
		Spec{Name: "manual", Priority: 1, When: `trigger == "manual"`, Pool: "interactive"},
		Spec{Name: "big-batch", Priority: 5, When: `params.batch > 100`, Pool: "big"},
		Spec{Name: "heavy-etl", Priority: 10, When: `dag_id startsWith "etl_" and "heavy" in tags`, Pool: "warehouse", Slots: 2},
	)
	return set
}

func TestResultGolden(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		attrs    Attrs
		wantJSON string
		wantText string
	}{
		{
			name:  "match after a false and a failing rule",
			attrs: Attrs{DAGID: "etl_x", Tags: []string{"heavy"}, Trigger: "schedule"},
			wantJSON: `{"rule":"heavy-etl","pool":"warehouse","slots":2,"why":"rule heavy-etl (priority 10) matched","rules":[` +
				`{"name":"manual","priority":1,"matched":false,"error":null,"skipped":null},` +
				`{"name":"big-batch","priority":5,"matched":false,"error":"invalid operation: <nil> > int (1:14)","skipped":null},` +
				`{"name":"heavy-etl","priority":10,"matched":true,"error":null,"skipped":null}]}`,
			wantText: "rule heavy-etl (priority 10) matched: pool warehouse, 2 slots\n" +
				"  rule manual (priority 1) did not match: condition false\n" +
				"  rule big-batch (priority 5) did not match: evaluation error: invalid operation: <nil> > int (1:14)\n",
		},
		{
			name:  "first rule matches",
			attrs: Attrs{Trigger: "manual"},
			wantJSON: `{"rule":"manual","pool":"interactive","slots":1,"why":"rule manual (priority 1) matched","rules":[` +
				`{"name":"manual","priority":1,"matched":true,"error":null,"skipped":null}]}`,
			wantText: "rule manual (priority 1) matched: pool interactive, 1 slot\n",
		},
		{
			name:  "no match",
			attrs: Attrs{DAGID: "report", Params: map[string]any{"batch": 7.0}},
			wantJSON: `{"rule":null,"pool":"default","slots":1,"why":"no rule matched: default pool","rules":[` +
				`{"name":"manual","priority":1,"matched":false,"error":null,"skipped":null},` +
				`{"name":"big-batch","priority":5,"matched":false,"error":null,"skipped":null},` +
				`{"name":"heavy-etl","priority":10,"matched":false,"error":null,"skipped":null}]}`,
			wantText: "no rule matched: default pool default, 1 slot\n" +
				"  rule manual (priority 1) did not match: condition false\n" +
				"  rule big-batch (priority 5) did not match: condition false\n" +
				"  rule heavy-etl (priority 10) did not match: condition false\n",
		},
	}
	set := explainSet(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			res := set.Assign(tt.attrs)
			got, err := res.JSON()
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.wantJSON {
				t.Errorf("JSON:\n got: %s\nwant: %s", got, tt.wantJSON)
			}
			if got := res.Text(); got != tt.wantText {
				t.Errorf("Text:\n got: %q\nwant: %q", got, tt.wantText)
			}
		})
	}
}

func TestResultJSONNoRules(t *testing.T) {
	t.Parallel()
	got, err := mustCompile(t).Assign(Attrs{}).JSON()
	if err != nil {
		t.Fatal(err)
	}
	want := `{"rule":null,"pool":"default","slots":1,"why":"no rules configured: default pool","rules":[]}`
	if string(got) != want {
		t.Errorf("JSON:\n got: %s\nwant: %s", got, want)
	}
}
