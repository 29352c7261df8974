package rules

import (
	"reflect"
	"testing"
	"time"
)

func TestParseAttrs(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		attrs   []string
		params  string
		want    Attrs
		wantErr string
	}{
		{
			name: "defaults",
			want: Attrs{TryNumber: 1, Kind: "command", Params: map[string]any{}, MapIndex: -1},
		},
		{
			name: "every key",
			attrs: []string{"dag_id=etl_x", "task_id=load", "run_id=manual__1", "owner=ana",
				"tags=heavy, nightly,,", "trigger=manual", "try_number=3", "kind=sensor",
				"logical_date=2024-05-01T02:00:00+02:00"},
			params: `{"region": "eu", "n": 3, "nested": {"a": [1, true]}}`,
			want: Attrs{DAGID: "etl_x", TaskID: "load", RunID: "manual__1", Owner: "ana",
				Tags: []string{"heavy", "nightly"}, Trigger: "manual", TryNumber: 3, Kind: "sensor",
				LogicalDate: time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC).In(time.FixedZone("", 2*3600)),
				Params:      map[string]any{"region": "eu", "n": 3.0, "nested": map[string]any{"a": []any{1.0, true}}}, MapIndex: -1},
		},
		{
			name:  "value may contain =",
			attrs: []string{"run_id=a=b"},
			want:  Attrs{RunID: "a=b", TryNumber: 1, Kind: "command", Params: map[string]any{}, MapIndex: -1},
		},
		{
			name:  "empty tags",
			attrs: []string{"tags="},
			want:  Attrs{Tags: []string{}, TryNumber: 1, Kind: "command", Params: map[string]any{}, MapIndex: -1},
		},
		{
			name:  "a mapped instance's item as JSON, map_index 0 unless given",
			attrs: []string{`item={"shard": 2, "file": "a.csv"}`},
			want: Attrs{TryNumber: 1, Kind: "command", Params: map[string]any{},
				Item: map[string]any{"shard": 2.0, "file": "a.csv"}, MapIndex: 0},
		},
		{
			name:  "a word that is not JSON is a string item",
			attrs: []string{"item=eu", "map_index=7"},
			want:  Attrs{TryNumber: 1, Kind: "command", Params: map[string]any{}, Item: "eu", MapIndex: 7},
		},
		{
			name:  "a number item",
			attrs: []string{"item=3"},
			want:  Attrs{TryNumber: 1, Kind: "command", Params: map[string]any{}, Item: 3.0, MapIndex: 0},
		},
		{
			name:  "map_index alone",
			attrs: []string{"map_index=2"},
			want:  Attrs{TryNumber: 1, Kind: "command", Params: map[string]any{}, MapIndex: 2},
		},
		{name: "negative map_index", attrs: []string{"map_index=-1"}, wantErr: `attr map_index: "-1" is not a whole number of at least 0`},
		{name: "unknown key", attrs: []string{"tagz=a"},
			wantErr: "attr tagz: unknown attribute (want one of dag_id, task_id, run_id, owner, team, tags, trigger, try_number, kind, logical_date, item, map_index)"},
		{name: "no equals sign", attrs: []string{"dag_id"}, wantErr: `attr "dag_id": want key=value`},
		{name: "twice", attrs: []string{"owner=a", "owner=b"}, wantErr: "attr owner: given more than once"},
		{name: "bad try number", attrs: []string{"try_number=two"}, wantErr: `attr try_number: "two" is not a whole number of at least 1`},
		{name: "zero try number", attrs: []string{"try_number=0"}, wantErr: `attr try_number: "0" is not a whole number of at least 1`},
		{name: "bad date", attrs: []string{"logical_date=2024-05-01"},
			wantErr: `attr logical_date: "2024-05-01" is not an RFC 3339 time such as 2024-05-01T00:00:00Z`},
		{name: "bad trigger", attrs: []string{"trigger=cron"}, wantErr: `attr trigger: "cron" is not one of schedule, manual, catchup, node, backfill`},
		{name: "bad kind", attrs: []string{"kind=python"}, wantErr: `attr kind: "python" is not one of command, bash, go, sensor`},
		{name: "params as attr", attrs: []string{"params={}"}, wantErr: "attr params: use --params with a JSON object"},
		{name: "params not an object", params: `[1]`,
			wantErr: "params: want a JSON object: json: cannot unmarshal array into Go value of type map[string]interface {}"},
		{name: "params null", params: `null`, wantErr: "params: want a JSON object, got null"},
		{name: "params trailing data", params: `{} {}`, wantErr: "params: want a single JSON object, got more after it"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := ParseAttrs(tt.attrs, tt.params)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("error = %v, want %s", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !got.LogicalDate.Equal(tt.want.LogicalDate) {
				t.Errorf("logical_date = %v, want %v", got.LogicalDate, tt.want.LogicalDate)
			}
			got.LogicalDate, tt.want.LogicalDate = time.Time{}, time.Time{}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("ParseAttrs =\n %#v\nwant\n %#v", got, tt.want)
			}
		})
	}
}
