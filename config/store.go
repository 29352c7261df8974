package config

import (
	"path/filepath"
	"strings"
)

// store.driver values.
const (
	DriverSQLite   = "sqlite"   // one file under the state folder: one machine (the default)
	DriverPostgres = "postgres" // one PostgreSQL database shared by daemons on several machines
)

// store reads the store block:
//
//	store:
//	  driver: sqlite | postgres         # default sqlite
//	  dsn: postgres://user@host/db       # postgres: required; sqlite: the file (default <state>/poolflow.db)
//	  synchronous: full | normal         # sqlite only
func (r *reader) store(f field, c *Config) {
	var sync, dsn *field
	for _, g := range r.fields(f.value, f.path, f.at, "driver", "dsn", "synchronous") {
		v, ok := r.str(g)
		if !ok {
			continue
		}
		switch g.key {
		case "driver":
			switch v {
			case DriverSQLite, DriverPostgres:
				c.StoreDriver = v
			default:
				r.fail(g.valuePos(), g.path, "invalid value %q (want sqlite or postgres)", v)
			}
		case "dsn":
			if v == "" {
				r.fail(g.valuePos(), g.path, "empty (want postgres://… or a file path)")
				continue
			}
			c.StoreDSN, dsn = v, &g
		case "synchronous":
			switch v {
			case SyncFull, SyncNormal:
				c.Synchronous, sync = v, &g
			default:
				r.fail(g.valuePos(), g.path, "invalid value %q (want full or normal)", v)
			}
		}
	}
	postgresDSN := strings.HasPrefix(c.StoreDSN, "postgres://") || strings.HasPrefix(c.StoreDSN, "postgresql://")
	if c.StoreDriver == "" && postgresDSN {
		c.StoreDriver = DriverPostgres
	}
	switch {
	case c.StoreDriver == DriverPostgres && c.StoreDSN == "":
		r.fail(f.at, f.path+".dsn", "missing (driver postgres needs a dsn: postgres://user:password@host:5432/db)")
	case c.StoreDriver == DriverPostgres && !postgresDSN:
		r.fail(dsn.valuePos(), dsn.path, "invalid value %q for driver postgres (want postgres://… or postgresql://…)",
			c.StoreDSN)
	case c.StoreDriver != DriverPostgres && postgresDSN:
		r.fail(dsn.valuePos(), dsn.path, "a postgres dsn with driver sqlite (set driver: postgres)")
	case c.StoreDriver == DriverPostgres && sync != nil:
		r.fail(sync.valuePos(), sync.path, "applies to driver sqlite only (PostgreSQL's durability is the server's)")
	}
}

// StoreTarget is the store this configuration names, in the form store.Open takes: the
// PostgreSQL DSN, or sqlite:PATH (store.dsn, else <stateDir>/poolflow.db).
func (c *Config) StoreTarget(stateDir string) string {
	if c.StoreDriver == DriverPostgres {
		return c.StoreDSN
	}
	path := strings.TrimPrefix(c.StoreDSN, "sqlite:")
	if path == "" {
		path = filepath.Join(stateDir, "poolflow.db")
	}
	return "sqlite:" + path
}
