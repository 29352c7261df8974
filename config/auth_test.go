package config

import (
	"strings"
	"testing"

	"github.com/poolflow/poolflow/vocab"
)

func TestParseAuth(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, src string
		want      Auth
		err       string
	}{
		{"absent", "max_running: 4\n", Auth{}, ""},
		{"required", "auth: {required: true}\n", Auth{Required: true}, ""},
		{"anonymous viewer", "auth:\n  anonymous: viewer\n", Auth{Anonymous: vocab.RoleViewer}, ""},
		{"anonymous none", "auth: {anonymous: none, required: false}\n", Auth{}, ""},
		{"anonymous operator", "auth: {anonymous: operator}\n", Auth{},
			`p.yaml:1:19: auth.anonymous: invalid value "operator" (want viewer or none: anonymous callers may only read)`},
		{"required not a bool", "auth: {required: yes please}\n", Auth{}, "auth.required"},
		{"unknown key", "auth:\n  users: []\n", Auth{}, "p.yaml:2:3: auth.users: unknown field"},
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
			if c.Auth != tt.want {
				t.Fatalf("Auth = %+v, want %+v", c.Auth, tt.want)
			}
		})
	}
}

func TestParsePoolTeams(t *testing.T) {
	t.Parallel()
	c, err := Parse("p.yaml", []byte("pools:\n  wh:\n    slots: 2\n    teams: [finance, audit]\n  open: 1\n"))
	if err != nil {
		t.Fatal(err)
	}
	e := NewEffective(c, nil)
	if got := e.PoolTeams("wh"); len(got) != 2 || got[0] != "finance" || got[1] != "audit" {
		t.Fatalf("wh's teams %v", got)
	}
	if got := e.PoolTeams("open"); len(got) != 0 {
		t.Fatalf("open's teams %v", got)
	}
	for src, want := range map[string]string{
		"pools:\n  wh:\n    slots: 1\n    teams: finance\n":       "p.yaml:4:12: pools.wh.teams: invalid value \"finance\" (want a list of team names)",
		"pools:\n  wh:\n    slots: 1\n    teams: [\"a b\"]\n":     "pools.wh.teams[0]: invalid team \"a b\"",
		"pools:\n  wh:\n    slots: 1\n    teams: [\"fin:ops\"]\n": "invalid team \"fin:ops\"",
	} {
		if _, err := Parse("p.yaml", []byte(src)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", src, err, want)
		}
	}
}
