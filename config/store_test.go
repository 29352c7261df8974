package config

import (
	"strings"
	"testing"
)

func TestParseStore(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, src      string
		driver, target string // target with state folder "st"
		err            string
	}{
		{"default", "max_running: 2\n", "", "sqlite:st/poolflow.db", ""},
		{"sqlite", "store: {driver: sqlite, synchronous: normal}\n", "sqlite", "sqlite:st/poolflow.db", ""},
		{"sqlite file", "store: {dsn: /var/lib/pf.db}\n", "", "sqlite:/var/lib/pf.db", ""},
		{"sqlite prefixed file", "store: {driver: sqlite, dsn: 'sqlite:/x.db'}\n", "sqlite", "sqlite:/x.db", ""},
		{"postgres", "store:\n  driver: postgres\n  dsn: postgres://u:p@db:5432/pf\n", "postgres", "postgres://u:p@db:5432/pf", ""},
		{"postgres inferred", "store: {dsn: 'postgresql://db/pf'}\n", "postgres", "postgresql://db/pf", ""},
		{"bad driver", "store: {driver: mysql}\n", "", "", `p.yaml:1:17: store.driver: invalid value "mysql" (want sqlite or postgres)`},
		{"postgres without dsn", "store: {driver: postgres}\n", "", "", "p.yaml:1:1: store.dsn: missing (driver postgres needs a dsn"},
		{"postgres with a path", "store: {driver: postgres, dsn: /x.db}\n", "", "", `p.yaml:1:32: store.dsn: invalid value "/x.db" for driver postgres`},
		{"sqlite with a postgres dsn", "store: {driver: sqlite, dsn: 'postgres://db/pf'}\n", "", "", "p.yaml:1:30: store.dsn: a postgres dsn with driver sqlite"},
		{"synchronous on postgres", "store: {dsn: 'postgres://db/pf', synchronous: full}\n", "", "", "p.yaml:1:47: store.synchronous: applies to driver sqlite only"},
		{"empty dsn", "store: {dsn: ''}\n", "", "", "p.yaml:1:14: store.dsn: empty"},
		{"unknown field", "store: {url: x}\n", "", "", "p.yaml:1:9: store.url: unknown field"},
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
			if c.StoreDriver != tt.driver || c.StoreTarget("st") != tt.target {
				t.Fatalf("driver %q target %q, want %q %q", c.StoreDriver, c.StoreTarget("st"), tt.driver, tt.target)
			}
		})
	}
}
