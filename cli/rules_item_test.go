package cli

import (
	"strings"
	"testing"
)

// TestRulesTestMappedItem: `rules test` can be given a mapped instance's item and map_index
// (§14: the pool rules see item), and without them the task is not mapped (map_index -1).
func TestRulesTestMappedItem(t *testing.T) {
	t.Parallel()
	p := newProject(t, poolsYAML+`rules:
  - {name: big_shard, priority: 10, when: 'item != nil and item.shard >= 2', pool: wh, slots: 2}
  - {name: first, priority: 20, when: 'map_index == 0', pool: db}
  - {name: eu, priority: 30, when: 'item == "eu"', pool: db}
`, nil)
	for _, tc := range []struct {
		attrs []string
		want  string
	}{
		{[]string{`item={"shard": 3, "file": "f3.csv"}`, "map_index=3"}, "rule big_shard (priority 10) matched: pool wh, 2 slots"},
		{[]string{`item={"shard": 1}`}, "rule first (priority 20) matched: pool db"},
		{[]string{"item=eu", "map_index=5"}, "rule eu (priority 30) matched: pool db"},
		{[]string{"dag_id=plain"}, "default"},
	} {
		args := []string{"rules", "test"}
		for _, a := range tc.attrs {
			args = append(args, "--attr", a)
		}
		out, errOut, code := p.run(args...)
		if code != 0 || !strings.Contains(out, tc.want) {
			t.Errorf("%v: exit %d, want %q in\n%s%s", tc.attrs, code, tc.want, out, errOut)
		}
	}
	if _, errOut, code := p.run("rules", "test", "--attr", "map_index=x"); code != ExitUsage || !strings.Contains(errOut, "map_index") {
		t.Errorf("bad map_index: exit %d, stderr %q", code, errOut)
	}
}
