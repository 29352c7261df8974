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
		vocab.RoleOperator: {vocab.PermPublic, vocab.PermRead, vocab.PermLogs, vocab.PermOwnToken, vocab.PermTrigger, vocab.PermPause, vocab.PermRepair, vocab.PermApprove, vocab.PermCancel, vocab.PermBackfill, vocab.PermNotify},
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

// TestThrottle: 1,000 wrong passwords in a minute from one address for one name are checked
// only while the buckets last; a minute after the flood the real user gets in, from anywhere.
func TestThrottle(t *testing.T) {
	t.Parallel()
	th := DefaultThrottle()
	now := time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC)
	checked := 0
	for i := range 1000 {
		at := now.Add(time.Duration(i) * 60 * time.Millisecond) // 1,000 in 60 s
		if th.Wait("ada", "203.0.113.9", at) > 0 {
			continue
		}
		checked++
		th.Failed("ada", "203.0.113.9", at)
	}
	// 10 at once, then one per 6 s for a minute: about 20.
	if checked < 10 || checked > 21 {
		t.Fatalf("%d of 1000 attempts were checked", checked)
	}
	end := now.Add(60 * time.Second)
	if w := th.Wait("ada", "198.51.100.7", end); w <= 0 || w > 6*time.Second {
		t.Fatalf("right after the flood the name waits %v", w)
	}
	if w := th.Wait("bob", "198.51.100.7", end); w != 0 {
		t.Fatalf("another name from another address waits %v", w)
	}
	if w := th.Wait("ada", "198.51.100.7", end.Add(6*time.Second)); w != 0 {
		t.Fatalf("6 s after the flood the real user still waits %v", w)
	}
}

// TestThrottleSpray: one address trying a different name each time is slowed by its address.
func TestThrottleSpray(t *testing.T) {
	t.Parallel()
	th := DefaultThrottle()
	now := time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC)
	checked := 0
	for i := range 1000 {
		at := now.Add(time.Duration(i) * 60 * time.Millisecond)
		name := "user" + strings.Repeat("x", i%50) + string(rune('a'+i%26))
		if th.Wait(name, "203.0.113.9", at) > 0 {
			continue
		}
		checked++
		th.Failed(name, "203.0.113.9", at)
	}
	if checked < 10 || checked > 41 { // 10 at once, then one per 2 s
		t.Fatalf("%d of 1000 sprayed attempts were checked", checked)
	}
}
