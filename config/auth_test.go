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
