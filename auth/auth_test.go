package auth

import (
	"errors"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/vocab"
)

func init() { Cost = bcrypt.MinCost }

// TestRolesHoldPermissions: §15's table, every role × every permission.
func TestRolesHoldPermissions(t *testing.T) {
	t.Parallel()
	want := map[vocab.Role][]vocab.Permission{
		vocab.RoleViewer:   {vocab.PermPublic, vocab.PermRead, vocab.PermLogs, vocab.PermOwnToken},
		vocab.RoleOperator: {vocab.PermPublic, vocab.PermRead, vocab.PermLogs, vocab.PermOwnToken, vocab.PermTrigger, vocab.PermPause, vocab.PermRepair, vocab.PermApprove, vocab.PermCancel, vocab.PermBackfill},
		vocab.RoleAdmin:    vocab.Permissions(),
	}
	for role, perms := range want {
		for _, p := range vocab.Permissions() {
			holds := false
			for _, q := range perms {
				holds = holds || q == p
			}
			if role.Allows(p) != holds {
				t.Errorf("%s allows %s: %v, want %v", role, p, role.Allows(p), holds)
			}
		}
	}
	if vocab.Role("root").Allows(vocab.PermRead) || vocab.Role("").Allows(vocab.PermRead) {
		t.Error("an unknown role allows reads")
	}
}

// TestTeams: reads need no team; a scoped grant acts only on its team's DAGs and pools.
func TestTeams(t *testing.T) {
	t.Parallel()
	fin := Principal{Kind: KindUser, Name: "finn", Grants: []store.Grant{{Role: vocab.RoleOperator, Team: "finance"}}}
	both := Principal{Kind: KindUser, Name: "bo", Grants: []store.Grant{{Role: vocab.RoleOperator, Team: "finance"}, {Role: vocab.RoleViewer}}}
	admin := Principal{Kind: KindUser, Name: "ada", Grants: []store.Grant{{Role: vocab.RoleAdmin}}}
	finAdmin := Principal{Kind: KindUser, Name: "fa", Grants: []store.Grant{{Role: vocab.RoleAdmin, Team: "finance"}}}
	tests := []struct {
		p    Principal
		perm vocab.Permission
		team string
		want bool
	}{
		{fin, vocab.PermRead, "ops", true},
		{fin, vocab.PermLogs, "", true},
		{fin, vocab.PermTrigger, "finance", true},
		{fin, vocab.PermTrigger, "ops", false},
		{fin, vocab.PermTrigger, "", false},
		{fin, vocab.PermPools, "finance", false},
		{both, vocab.PermApprove, "ops", false},
		{both, vocab.PermApprove, "finance", true},
		{admin, vocab.PermPools, "ops", true},
		{finAdmin, vocab.PermPools, "finance", true},
		{finAdmin, vocab.PermPools, "ops", false},
		{Open, vocab.PermUsers, "x", true},
		{Anonymous(vocab.RoleViewer), vocab.PermRead, "", true},
		{Anonymous(vocab.RoleViewer), vocab.PermLogs, "", false},
		{Anonymous(""), vocab.PermRead, "", false},
		{Anonymous(""), vocab.PermPublic, "", true},
	}
	for _, tt := range tests {
		if got := tt.p.Can(tt.perm, tt.team); got != tt.want {
			t.Errorf("%s %v can %s on team %q: %v, want %v", tt.p.Name, tt.p.Grants, tt.perm, tt.team, got, tt.want)
		}
	}
	if !finAdmin.CanPool(vocab.PermPools, []string{"ops", "finance"}) || finAdmin.CanPool(vocab.PermPools, nil) ||
		!admin.CanPool(vocab.PermPools, nil) || fin.CanPool(vocab.PermCancel, []string{"ops"}) {
		t.Error("CanPool")
	}
	err := fin.Check(vocab.PermTrigger, "ops")
	var d *Denied
	if !errors.As(err, &d) || d.Anonymous || !strings.Contains(err.Error(), "permission trigger refused to finn") ||
		!strings.Contains(err.Error(), "team ops") {
		t.Fatalf("denied: %v", err)
	}
	if err := Anonymous("").CheckAny(vocab.PermRead); !errors.As(err, &d) || !d.Anonymous {
		t.Fatalf("anonymous denied: %v", err)
	}
}

func TestPasswords(t *testing.T) {
	t.Parallel()
	h, err := HashPassword("correct horse")
	if err != nil {
		t.Fatal(err)
	}
	if !PasswordMatches(h, "correct horse") || PasswordMatches(h, "correct horsf") || PasswordMatches("", "") ||
		PasswordMatches("garbage", "correct horse") {
		t.Fatal("PasswordMatches")
	}
	for _, pw := range []string{"short", strings.Repeat("x", 73)} {
		if _, err := HashPassword(pw); err == nil {
			t.Errorf("password of %d bytes accepted", len(pw))
		}
	}
}

func TestTokens(t *testing.T) {
	t.Parallel()
	a, ha, pa := NewToken()
	b, hb, _ := NewToken()
	if a == b || ha == hb || !strings.HasPrefix(a, TokenPrefix) || len(a) != len(TokenPrefix)+43 || !strings.HasPrefix(a, pa) ||
		HashToken(a) != ha || strings.Contains(ha, a) {
		t.Fatalf("tokens %q %q", a, b)
	}
	for in, want := range map[string]time.Duration{"": 0, "never": 0, "90d": 90 * 24 * time.Hour, "720h": 720 * time.Hour} {
		if got, err := ParseExpiry(in); err != nil || got != want {
			t.Errorf("ParseExpiry(%q) = %v %v", in, got, err)
		}
	}
	for _, in := range []string{"0d", "-1h", "soon", "d"} {
		if _, err := ParseExpiry(in); err == nil {
			t.Errorf("ParseExpiry(%q) accepted", in)
		}
	}
	for _, name := range []string{"", "a b", "a:b", "a,b", "a/b", strings.Repeat("n", 65)} {
		if CheckName("user", name) == nil {
			t.Errorf("name %q accepted", name)
		}
	}
}
