package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/poolflow/poolflow/auth"
	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/vocab"
)

func init() { auth.Cost = bcrypt.MinCost }

// runAs runs the CLI with $POOLFLOW_TOKEN set to token and stdin.
func (p *project) runAs(token, stdin string, args ...string) (string, string, int) {
	var out, errb bytes.Buffer
	all := append([]string{"--config", p.config, "--dags", p.dags, "--state", p.state}, args...)
	env := map[string]string{tokenEnv: token}
	err := RunOptions(context.Background(), all, &out, &errb, Options{Stdin: strings.NewReader(stdin),
		Getenv: func(k string) string { return env[k] }})
	code := 0
	var ee *ExitError
	switch {
	case errors.As(err, &ee):
		code = ee.Code
		if ee.Err != nil {
			errb.WriteString(ee.Err.Error())
		}
	case err != nil:
		code = 1
		errb.WriteString(err.Error())
	}
	return out.String(), errb.String(), code
}

// TestUsersAndTokens: the first user must be an admin and turns authentication on for the
// CLI's writes; an admin's token manages users and tokens; a viewer's writes are refused naming
// the permission; a user revokes their own tokens only; the last admin stays.
func TestUsersAndTokens(t *testing.T) {
	t.Parallel()
	p := newProject(t, poolsYAML, nil)
	// No users: writes act as the OS user, as before.
	if _, errOut, code := p.runAs("", "", "pools", "set", "api", "--slots", "2"); code != 0 {
		t.Fatalf("pools set without users: %d %s", code, errOut)
	}
	if _, errOut, code := p.runAs("", "", "users", "create", "vic", "--role", "viewer"); code != ExitUsage ||
		!strings.Contains(errOut, "first user must be an admin") {
		t.Fatalf("a viewer first: %d %s", code, errOut)
	}
	if out, errOut, code := p.runAs("", "correct horse\n", "users", "create", "ada", "--role", "admin", "--password-stdin"); code != 0 ||
		!strings.Contains(errOut, "authentication is now on") || !strings.Contains(out, "user ada created (admin)") {
		t.Fatalf("first admin: %d %s %s", code, out, errOut)
	}
	// Authentication is on: a write without a token is refused.
	if _, errOut, code := p.runAs("", "", "pools", "set", "api", "--slots", "3"); code != ExitDenied ||
		!strings.Contains(errOut, "permission pools needs a user's API token in $POOLFLOW_TOKEN") {
		t.Fatalf("pools set without a token: %d %s", code, errOut)
	}
	if _, errOut, code := p.runAs("", "", "users", "create", "eve", "--role", "admin"); code != ExitDenied {
		t.Fatalf("users create without a token: %d %s", code, errOut)
	}
	// The first admin's token, made before authentication needed one... by nobody: the bootstrap
	// is the store itself. An admin token is made with the store's help here.
	st := openTestStore(t, p)
	_, adminTok, err := auth.CreateToken(context.Background(), st, "test", "ada", "", 0, nowUTC())
	if err != nil {
		t.Fatal(err)
	}
	if _, errOut, code := p.runAs("pf_wrong", "", "pools", "set", "api", "--slots", "3"); code != ExitDenied ||
		!strings.Contains(errOut, "unknown token") {
		t.Fatalf("a wrong token: %d %s", code, errOut)
	}
	if _, errOut, code := p.runAs(adminTok, "", "users", "create", "vic", "--role", "viewer"); code != 0 {
		t.Fatalf("admin creates vic: %d %s", code, errOut)
	}
	if _, errOut, code := p.runAs(adminTok, "", "users", "create", "finn", "--role", "operator", "--team", "finance"); code != 0 {
		t.Fatalf("admin creates finn: %d %s", code, errOut)
	}
	vicTok, errOut, code := p.runAs(adminTok, "", "tokens", "create", "--user", "vic", "--expires", "90d", "--name", "laptop")
	vicTok = strings.TrimSpace(vicTok)
	if code != 0 || !strings.HasPrefix(vicTok, auth.TokenPrefix) || !strings.Contains(errOut, "not shown again") {
		t.Fatalf("tokens create: %d %q %s", code, vicTok, errOut)
	}
	// vic is a viewer: writes are refused naming the permission; vic's own tokens are vic's.
	for _, args := range [][]string{
		{"pools", "set", "api", "--slots", "3"},
		{"dags", "pause", "x"},
		{"users", "create", "mal", "--role", "admin"},
		{"tokens", "create", "--user", "ada"},
	} {
		if _, errOut, code := p.runAs(vicTok, "", args...); code != ExitDenied || !strings.Contains(errOut, "refused to vic") {
			t.Errorf("vic %v: %d %s", args, code, errOut)
		}
	}
	own, errOut, code := p.runAs(vicTok, "", "tokens", "create", "--user", "vic")
	if code != 0 {
		t.Fatalf("vic's own token: %d %s", code, errOut)
	}
	out, _, code := p.runAs(vicTok, "", "tokens", "list", "-o", "json")
	var list struct {
		Tokens []TokenView `json:"tokens"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &list) != nil || len(list.Tokens) != 2 {
		t.Fatalf("vic's tokens: %d %s", code, out)
	}
	for _, tk := range list.Tokens {
		if tk.User != "vic" || tk.State != vocab.TokenActive {
			t.Fatalf("vic lists %+v", tk)
		}
	}
	if strings.Contains(out, strings.TrimSpace(own)) {
		t.Fatal("tokens list shows a secret")
	}
	// vic cannot revoke ada's token; ada can revoke vic's.
	adaTokens, _ := st.ListTokens(context.Background(), "ada")
	if _, errOut, code := p.runAs(vicTok, "", "tokens", "revoke", itoa(int(adaTokens[0].ID))); code == 0 {
		t.Fatalf("vic revoked ada's token: %s", errOut)
	}
	if out, errOut, code := p.runAs(adminTok, "", "tokens", "revoke", itoa(int(list.Tokens[0].ID))); code != 0 ||
		!strings.Contains(out, "revoked") {
		t.Fatalf("ada revokes: %d %s %s", code, out, errOut)
	}
	// The admin's writes name ada in the audit log.
	if _, errOut, code := p.runAs(adminTok, "", "pools", "set", "api", "--slots", "3"); code != 0 {
		t.Fatalf("admin pools set: %d %s", code, errOut)
	}
	evs, _, err := st.ListEvents(context.Background(), store.EventFilter{Action: "pool_set"})
	if err != nil || len(evs) != 2 || evs[0].Actor != "ada" || !strings.HasPrefix(evs[1].Actor, "cli:") {
		t.Fatalf("pool_set events %+v %v", evs, err)
	}
	// set-roles, set-password, the last admin, users list.
	if _, errOut, code := p.runAs(adminTok, "", "users", "set-roles", "ada", "--role", "viewer"); code == 0 ||
		!strings.Contains(errOut, "no admin") {
		t.Fatalf("demoting the last admin: %d %s", code, errOut)
	}
	if _, errOut, code := p.runAs(adminTok, "", "users", "delete", "ada"); code == 0 || !strings.Contains(errOut, "no admin") {
		t.Fatalf("deleting the last admin: %d %s", code, errOut)
	}
	if _, errOut, code := p.runAs(adminTok, "", "users", "set-roles", "vic", "--role", "operator:ops", "--role", "viewer"); code != 0 {
		t.Fatalf("set-roles: %d %s", code, errOut)
	}
	if _, errOut, code := p.runAs(vicTok, "short\n", "users", "set-password", "vic", "--password-stdin"); code == 0 ||
		!strings.Contains(errOut, "too short") {
		t.Fatalf("a short password: %d %s", code, errOut)
	}
	if _, errOut, code := p.runAs(vicTok, "vic's long password\n", "users", "set-password", "vic", "--password-stdin"); code != 0 {
		t.Fatalf("vic sets own password: %d %s", code, errOut)
	}
	if _, errOut, code := p.runAs(vicTok, "x-long-password\n", "users", "set-password", "ada", "--password-stdin"); code != ExitDenied {
		t.Fatalf("vic sets ada's password: %d %s", code, errOut)
	}
	out, _, _ = p.runAs(adminTok, "", "users", "list")
	for _, want := range []string{"ada", "admin", "finn", "operator:finance", "vic", "operator:ops,viewer"} {
		if !strings.Contains(out, want) {
			t.Errorf("users list lacks %q:\n%s", want, out)
		}
	}
	u, err := st.GetUser(context.Background(), "vic")
	if err != nil || !auth.PasswordMatches(u.PasswordHash, "vic's long password") {
		t.Fatalf("vic's password was not set: %v", err)
	}
	if _, errOut, code := p.runAs(adminTok, "", "users", "delete", "vic"); code != 0 {
		t.Fatalf("delete vic: %d %s", code, errOut)
	}
	if _, errOut, code := p.runAs(vicTok, "", "tokens", "list"); code != ExitDenied {
		t.Fatalf("a deleted user's token: %d %s", code, errOut)
	}
}

func openTestStore(t *testing.T, p *project) store.Store {
	t.Helper()
	st, err := store.Open(context.Background(), filepath.Join(p.state, "poolflow.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func nowUTC() time.Time { return time.Now().UTC() }

// TestTeamsCLI: an operator of finance pauses finance's DAG and not another's; an admin of
// finance sets finance's pools only; a DAG of finance requiring another team's pool is invalid.
func TestTeamsCLI(t *testing.T) {
	t.Parallel()
	p := newProject(t, "pools:\n  wh:\n    slots: 2\n    teams: [analytics]\n", map[string]string{
		"fin.yaml":    "team: finance\ntasks:\n  - {id: a, bash: echo}\n",
		"open.yaml":   "tasks:\n  - {id: a, bash: echo}\n",
		"fin_d.yaml":  "team: finance\nschedule: '@daily'\ntasks:\n  - {id: a, bash: echo}\n",
		"open_d.yaml": "schedule: '@daily'\ntasks:\n  - {id: a, bash: echo}\n",
	})
	if _, errOut, code := p.runAs("", "", "store", "migrate"); code != 0 {
		t.Fatalf("store migrate: %s", errOut)
	}
	st := openTestStore(t, p)
	ctx := context.Background()
	mk := func(name, grants string) string {
		gs, _ := store.ParseGrants(grants)
		if err := auth.CreateUser(ctx, st, "test", name, "", gs, nowUTC()); err != nil {
			t.Fatal(err)
		}
		_, tok, err := auth.CreateToken(ctx, st, "test", name, "", 0, nowUTC())
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	ada, finn, fa := mk("ada", "admin"), mk("finn", "operator:finance"), mk("fa", "admin:finance")
	if _, errOut, code := p.runAs(finn, "", "dags", "pause", "fin"); code != 0 {
		t.Fatalf("finn pauses fin: %d %s", code, errOut)
	}
	if _, errOut, code := p.runAs(finn, "", "dags", "pause", "open"); code != ExitDenied || !strings.Contains(errOut, "permission pause") {
		t.Fatalf("finn pauses open: %d %s", code, errOut)
	}
	// Backfills too (§11): finn backfills finance's DAG only.
	if _, errOut, code := p.runAs(finn, "", "dags", "backfill", "open_d", "--from", "2025-01-01", "--to", "2025-01-02"); code != ExitDenied ||
		!strings.Contains(errOut, "permission backfill") {
		t.Fatalf("finn backfills open_d: %d %s", code, errOut)
	}
	if _, errOut, code := p.runAs(finn, "", "dags", "backfill", "fin_d", "--from", "2025-01-01", "--to", "2025-01-02"); code != 0 {
		t.Fatalf("finn backfills fin_d: %d %s", code, errOut)
	}
	if _, errOut, code := p.runAs(fa, "", "pools", "set", "ledger", "--slots", "2", "--team", "finance"); code != 0 {
		t.Fatalf("fa sets ledger: %d %s", code, errOut)
	}
	if _, errOut, code := p.runAs(fa, "", "pools", "set", "shared", "--slots", "2"); code != ExitDenied {
		t.Fatalf("fa sets a pool for every team: %d %s", code, errOut)
	}
	if _, errOut, code := p.runAs(ada, "", "pools", "set", "shared", "--slots", "2"); code != 0 {
		t.Fatalf("ada sets shared: %d %s", code, errOut)
	}
	if ps, _ := st.ListPools(ctx); !slices.ContainsFunc(ps, func(p store.Pool) bool { return p.Name == "ledger" && slices.Equal(p.Teams, []string{"finance"}) }) {
		t.Fatalf("ledger's teams: %+v", ps)
	}
	if err := os.WriteFile(filepath.Join(p.dags, "bad.yaml"), []byte("team: finance\ntasks:\n  - {id: a, bash: echo, pool: wh}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, errOut, code := p.runAs("", "", "dags", "validate"); code != ExitFailed || !strings.Contains(errOut, "pool wh is for team analytics, not team finance") {
		t.Fatalf("validate: %d %s", code, errOut)
	}
}
