package server

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// The rules test's item and map_index (§14): a body with an item is a mapped instance's
// attempt (map_index 0 unless given); one with neither is a task that is not mapped (-1).
func TestRulesTestItem(t *testing.T) {
	t.Parallel()
	two := 2
	for _, tc := range []struct {
		body    string
		item    any
		index   int
		wantErr string
	}{
		{body: `{}`, item: nil, index: -1},
		{body: `{"item": {"shard": 3}}`, item: map[string]any{"shard": 3.0}, index: 0},
		{body: `{"item": "eu", "map_index": 2}`, item: "eu", index: two},
		{body: `{"item": null}`, item: nil, index: -1},
		{body: `{"map_index": -1}`, wantErr: "map_index: want a whole number of at least 0, got -1"},
	} {
		var b rulesTestBody
		if err := json.Unmarshal([]byte(tc.body), &b); err != nil {
			t.Fatal(err)
		}
		a, err := b.attrs(func(string) string { return "" })
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%s: error %v, want %q", tc.body, err, tc.wantErr)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(a.Item, tc.item) || a.MapIndex != tc.index {
			t.Errorf("%s: item %#v map_index %d (%v), want %#v %d", tc.body, a.Item, a.MapIndex, err, tc.item, tc.index)
		}
	}
}
