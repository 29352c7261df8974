package store

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
)

// An Opener opens a store of one driver: target is what follows the driver's prefix for
// sqlite (a file path) and the whole DSN for postgres.
type Opener func(ctx context.Context, target string, opts Options) (Store, error)

var (
	driversMu sync.RWMutex
	drivers   = map[string]Opener{}
)

// Register makes a driver available to Open. Drivers register themselves in init, so a program
// imports the drivers it offers (package cli imports both).
func Register(driver string, open Opener) {
	driversMu.Lock()
	defer driversMu.Unlock()
	drivers[driver] = open
}

// Target is a parsed store target: the driver and what it opens.
type Target struct {
	Driver string // "sqlite" or "postgres"
	DSN    string // the file path for sqlite, the connection string for postgres
}

// ParseTarget reads a store target: "postgres://…" or "postgresql://…" (PostgreSQL), or
// "sqlite:PATH" or a plain file path (SQLite).
func ParseTarget(s string) (Target, error) {
	switch {
	case s == "":
		return Target{}, fmt.Errorf("%w: empty store target (want postgres://… or sqlite:PATH)", ErrInvalidOption)
	case strings.HasPrefix(s, "postgres://"), strings.HasPrefix(s, "postgresql://"):
		return Target{Driver: "postgres", DSN: s}, nil
	case strings.HasPrefix(s, "sqlite://"):
		return Target{Driver: "sqlite", DSN: strings.TrimPrefix(s, "sqlite://")}, nil
	case strings.HasPrefix(s, "sqlite:"):
		p := strings.TrimPrefix(s, "sqlite:")
		if p == "" {
			return Target{}, fmt.Errorf("%w: %q names no file (want sqlite:PATH)", ErrInvalidOption, s)
		}
		return Target{Driver: "sqlite", DSN: p}, nil
	case strings.Contains(s, "://"):
		return Target{}, fmt.Errorf("%w: store target %q: unknown scheme (want postgres://… or sqlite:PATH)",
			ErrInvalidOption, redactScheme(s))
	}
	return Target{Driver: "sqlite", DSN: s}, nil
}

func redactScheme(s string) string {
	if i := strings.Index(s, "://"); i >= 0 {
		return s[:i] + "://…"
	}
	return s
}

// Open opens the store at target (see ParseTarget), creating and migrating it to the newest
// schema. A database whose schema is newer than this binary is refused with ErrSchemaTooNew.
func Open(ctx context.Context, target string, opts Options) (Store, error) {
	t, err := ParseTarget(target)
	if err != nil {
		return nil, err
	}
	return OpenTarget(ctx, t, opts)
}

// OpenTarget opens a parsed target.
func OpenTarget(ctx context.Context, t Target, opts Options) (Store, error) {
	driversMu.RLock()
	open, ok := drivers[t.Driver]
	driversMu.RUnlock()
	if !ok {
		return nil, fmt.Errorf("%w: store driver %q is not built in (have %s)", ErrInvalidOption, t.Driver, Drivers())
	}
	return open(ctx, t.DSN, opts)
}

// Drivers lists the registered drivers.
func Drivers() string {
	driversMu.RLock()
	defer driversMu.RUnlock()
	names := make([]string, 0, len(drivers))
	for n := range drivers {
		names = append(names, n)
	}
	sort.Strings(names)
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}
