package config

import (
	"errors"
	"flag"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/poolflow/poolflow/pools"
	"github.com/poolflow/poolflow/vocab"
)

var update = flag.Bool("update", false, "rewrite testdata/errors/*.golden")

const example = `# poolflow.yaml as in SPEC §4.1
state: {path: ./state}
max_running: 32
pools:
  db: 1
  unlimited: -1
  warehouse:
    slots: 4
    max_queued: 100
    ordering: strict
    include_deferred: true
    on_resize: drain
    description: the data warehouse
  api:
    slots: 2
    starvation_after: 90
  batch:
    slots: 3
    starvation_after: 0
  default:
    slots: remainder
rules:
  - name: heavy-etl
    priority: 10
    when: 'dag_id startsWith "etl_" and "heavy" in tags'
    pool: warehouse
    slots: 2
  - name: heavy-etl
    priority: 10
    when: |
      kind == "sensor"
    pool: nowhere
api:
  token: s3cret
store:
  synchronous: normal
`

func TestParseExample(t *testing.T) {
	t.Parallel()
	c, err := Parse("poolflow.yaml", []byte(example))
	if err != nil {
		t.Fatal(err)
	}
	backfill := func(s pools.Spec) pools.Spec {
		s.Ordering, s.OnResize, s.Source, s.StarvationSet = vocab.Backfill, "immediate", "file", true
		if s.StarvationAfter == 0 && s.Name != "batch" {
			s.StarvationAfter = 10 * time.Minute
		}
		return s
	}
	want := &Config{
		File:       "poolflow.yaml",
		StatePath:  "./state",
		MaxRunning: 32,
		Pools: []pools.Spec{
			backfill(pools.Spec{Name: "db", Slots: 1, Line: 5, Column: 3}),
			backfill(pools.Spec{Name: "unlimited", Slots: -1, Line: 6, Column: 3}),
			{Name: "warehouse", Slots: 4, MaxQueued: 100, Ordering: vocab.Strict, IncludeDeferred: true,
				OnResize: "drain", Description: "the data warehouse", Source: "file", Line: 7, Column: 3},
			backfill(pools.Spec{Name: "api", Slots: 2, StarvationAfter: 90 * time.Second, Line: 14, Column: 3}),
			backfill(pools.Spec{Name: "batch", Slots: 3, Line: 17, Column: 3}),
			// 32 minus the finite slots of the others: 1 + 4 + 2 + 3.
			backfill(pools.Spec{Name: "default", Slots: 22, Remainder: true, Line: 20, Column: 3}),
		},
		Rules: []RuleSpec{
			{Name: "heavy-etl", Priority: 10, When: `dag_id startsWith "etl_" and "heavy" in tags`,
				Pool: "warehouse", Slots: 2, Line: 23, Column: 5, WhenLine: 25, WhenColumn: 11},
			// Duplicate names and unknown pools are package rules' to report.
			{Name: "heavy-etl", Priority: 10, When: "kind == \"sensor\"\n", Pool: "nowhere", Slots: 1,
				Line: 28, Column: 5, WhenLine: 31, WhenColumn: 7},
		},
		APIToken:    "s3cret",
		Synchronous: SyncNormal,
	}
	if !reflect.DeepEqual(c, want) {
		t.Fatalf("got\n%+v\nwant\n%+v", c, want)
	}
}

func TestParseDefaults(t *testing.T) {
	t.Parallel()
	def := pools.Spec{Name: "default", Slots: 128, Ordering: vocab.Backfill,
		StarvationAfter: 10 * time.Minute, StarvationSet: true, OnResize: "immediate"}
	tests := []struct {
		name string
		src  string
		want *Config
	}{
		{"empty", "", &Config{File: "p.yaml", MaxRunning: 32, Pools: []pools.Spec{def}}},
		{"comments only", "# nothing yet\n", &Config{File: "p.yaml", MaxRunning: 32, Pools: []pools.Spec{def}}},
		{"null sections", "pools:\nrules:\nstate:\napi:\n", &Config{File: "p.yaml", MaxRunning: 32, Pools: []pools.Spec{def}}},
		{"max_running none", "max_running: 0\n", &Config{File: "p.yaml", MaxRunning: 0, Pools: []pools.Spec{def}}},
		{"default without slots", "pools:\n  default:\n    description: rest\n",
			&Config{File: "p.yaml", MaxRunning: 32, Pools: []pools.Spec{{Name: "default", Slots: 128,
				Ordering: vocab.Backfill, StarvationAfter: 10 * time.Minute, StarvationSet: true,
				OnResize: "immediate", Description: "rest", Source: "file", Line: 2, Column: 3}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, err := Parse("p.yaml", []byte(tt.src))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(c, tt.want) {
				t.Fatalf("got\n%+v\nwant\n%+v", c, tt.want)
			}
		})
	}
	d := Default()
	if d.File != "" || d.MaxRunning != 32 || !reflect.DeepEqual(d.Pools, []pools.Spec{def}) {
		t.Fatalf("Default() = %+v", d)
	}
}

// TestParseErrors compares each testdata/errors/*.yaml against its .golden error text.
func TestParseErrors(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob(filepath.Join("testdata", "errors", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no testdata: %v", err)
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".yaml"), func(t *testing.T) {
			t.Parallel()
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			c, err := Parse("poolflow.yaml", data)
			if err == nil {
				t.Fatalf("no error, got %+v", c)
			}
			var ce *Error
			if !errors.As(err, &ce) {
				t.Fatalf("error %T is not a *config.Error: %v", err, err)
			}
			got := err.Error() + "\n"
			golden := strings.TrimSuffix(file, ".yaml") + ".golden"
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if got != string(want) {
				t.Errorf("error:\n%s\nwant:\n%s", got, want)
			}
		})
	}
}

func TestLoad(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "poolflow.yaml")
	if err := os.WriteFile(path, []byte("max_running: 4\npools:\n  db: 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if c.File != path || c.MaxRunning != 4 || len(c.Pools) != 2 {
		t.Fatalf("Load = %+v", c)
	}
	if s, ok := c.Pool("default"); !ok || s.Slots != 128 {
		t.Fatalf("default pool %+v %v", s, ok)
	}
	if _, err := Load(filepath.Join(dir, "missing.yaml")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("missing file: %v, want fs.ErrNotExist", err)
	}
}

func TestErrorText(t *testing.T) {
	t.Parallel()
	tests := []struct {
		e    Error
		want string
	}{
		{Error{File: "f.yaml", Line: 4, Column: 3, Field: "pools.db.slots", Msg: "bad"}, "f.yaml:4:3: pools.db.slots: bad"},
		{Error{File: "f.yaml", Msg: "bad"}, "f.yaml: bad"},
		{Error{Field: "x", Msg: "bad"}, "x: bad"},
	}
	for _, tt := range tests {
		if got := tt.e.Error(); got != tt.want {
			t.Errorf("Error() = %q, want %q", got, tt.want)
		}
	}
}

// FuzzParseConfig checks that no input makes Parse panic, and that what it accepts is
// complete: a default pool and resolved specs.
func FuzzParseConfig(f *testing.F) {
	f.Add([]byte(example))
	files, _ := filepath.Glob(filepath.Join("testdata", "errors", "*.yaml"))
	for _, file := range files {
		if data, err := os.ReadFile(file); err == nil {
			f.Add(data)
		}
	}
	f.Add([]byte("pools: {a: &x 1, b: *x}\n"))
	f.Add([]byte("pools:\n  db: !!int 3\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Parse("fuzz.yaml", data)
		if err != nil {
			var ce *Error
			if !errors.As(err, &ce) {
				t.Fatalf("error %T is not a *config.Error: %v", err, err)
			}
			return
		}
		if _, ok := c.Pool(pools.DefaultPool); !ok {
			t.Fatalf("no default pool in %+v", c.Pools)
		}
		for _, s := range c.Pools {
			if s.Ordering == "" || s.OnResize == "" || s.Slots < pools.Unlimited {
				t.Fatalf("unresolved pool %+v", s)
			}
		}
	})
}

func TestParseAllowedHosts(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, src string
		want      []string
		err       string
	}{
		{"list", "server:\n  allowed_hosts: [poolflow.internal, 'box:8080']\n", []string{"poolflow.internal", "box:8080"}, ""},
		{"block list", "server:\n  allowed_hosts:\n    - a.example\n", []string{"a.example"}, ""},
		{"empty", "server:\n  allowed_hosts:\n", nil, ""},
		{"not a list", "server:\n  allowed_hosts: a.example\n", nil,
			`p.yaml:2:18: server.allowed_hosts: invalid value "a.example" (want a list of host names)`},
		{"bad host", "server:\n  allowed_hosts: [ok, 'http://x/']\n", nil,
			`p.yaml:2:23: server.allowed_hosts[1]: invalid host "http://x/"`},
		{"unknown field", "server:\n  listen: x\n", nil, "p.yaml:2:3: server.listen: unknown field"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, err := Parse("p.yaml", []byte(tt.src))
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error %v, want it to contain %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(c.AllowedHosts, tt.want) {
				t.Fatalf("AllowedHosts = %q, want %q", c.AllowedHosts, tt.want)
			}
		})
	}
}

// TestParseAliasesNotSupported: an alias is refused where a value is read, whether its anchor
// exists or not (the parser stops at an unknown one; internal/yamlfile reads past it).
func TestParseAliasesNotSupported(t *testing.T) {
	t.Parallel()
	tests := map[string]string{
		"state: {path: *x}\n": "c.yaml:1:15: state.path: want a string, got an alias (not supported)",
		"pools:\n  db: *z\n":  "c.yaml:2:7: pools.db: want a number of slots, -1 for unlimited, or remainder, got an alias (not supported)",
	}
	for src, want := range tests {
		if _, err := Parse("c.yaml", []byte(src)); err == nil || err.Error() != want {
			t.Errorf("%q: error %v, want %s", src, err, want)
		}
	}
}

// TestParseRetention: retention's ages in days or with a Go duration's unit; absent, null or 0
// keeps everything; a bare number, a negative or unknown age, an unknown key are refused with
// the field named.
func TestParseRetention(t *testing.T) {
	t.Parallel()
	day := 24 * time.Hour
	tests := []struct {
		name, src string
		want      Retention
		err       string
	}{
		{"spec's example", "retention: {runs: 90d, logs: 30d, events: 365d}\n", Retention{90 * day, 30 * day, 365 * day}, ""},
		{"hours and minutes", "retention:\n  runs: 36h\n  logs: 90m\n", Retention{Runs: 36 * time.Hour, Logs: 90 * time.Minute}, ""},
		{"absent", "max_running: 4\n", Retention{}, ""},
		{"null and zero", "retention:\n  runs:\n  events: 0\n", Retention{}, ""},
		{"a bare number", "retention:\n  runs: 90\n", Retention{},
			`p.yaml:2:9: retention.runs: invalid value 90 (want an age such as 90d, 36h or 30m; 0 keeps everything)`},
		{"negative", "retention:\n  logs: -3d\n", Retention{}, `p.yaml:2:9: retention.logs: invalid value "-3d"`},
		{"no unit", "retention:\n  events: soon\n", Retention{}, `p.yaml:2:11: retention.events: invalid value "soon"`},
		{"unknown key", "retention:\n  attempts: 3d\n", Retention{}, "p.yaml:2:3: retention.attempts: unknown field"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, err := Parse("p.yaml", []byte(tt.src))
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error %v, want it to contain %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.Retention != tt.want {
				t.Fatalf("Retention = %+v, want %+v", c.Retention, tt.want)
			}
		})
	}
}

// TestBackfillBound: backfill.max_runs bounds one backfill's dates (default 10,000); below 1 is
// an error naming the field.
func TestBackfillBound(t *testing.T) {
	t.Parallel()
	c, err := Parse("poolflow.yaml", []byte("backfill: {max_runs: 50}\n"))
	if err != nil || c.Backfill.MaxRunsOrDefault() != 50 {
		t.Fatalf("max_runs 50: %+v %v", c.Backfill, err)
	}
	if d := Default(); d.Backfill.MaxRunsOrDefault() != DefaultBackfillMaxRuns || DefaultBackfillMaxRuns != 10_000 {
		t.Fatalf("default %+v", d.Backfill)
	}
	if _, err := Parse("poolflow.yaml", []byte("backfill:\n  max_runs: 0\n")); err == nil ||
		!strings.Contains(err.Error(), "poolflow.yaml:2:13: backfill.max_runs: invalid value 0") {
		t.Fatalf("max_runs 0: %v", err)
	}
}
