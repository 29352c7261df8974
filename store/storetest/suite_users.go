package storetest

import (
	"errors"
	"io/fs"
	"reflect"
	"testing"
	"time"

	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/vocab"
)

// testUsers: users are created once by name, updated and deleted with their tokens; HasUsers
// says whether any exists; roles keep their teams.
func testUsers(t *testing.T, h Harness) {
	st := h.New(t)
	if has, err := st.HasUsers(bg()); err != nil || has {
		t.Fatalf("a new store has users: %v %v", has, err)
	}
	ann := store.User{Name: "ann", PasswordHash: "$2a$hash", Roles: []store.Grant{{Role: vocab.RoleAdmin}}}
	bob := store.User{Name: "bob", Roles: []store.Grant{{Role: vocab.RoleOperator, Team: "finance"}, {Role: vocab.RoleViewer}}}
	must(t, st.WithTx(bg(), func(tx store.Tx) error {
		if err := tx.InsertUser(&ann, day); err != nil {
			return err
		}
		return tx.InsertUser(&bob, day)
	}))
	dup := store.User{Name: "ann"}
	if err := st.WithTx(bg(), func(tx store.Tx) error { return tx.InsertUser(&dup, day) }); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("a second ann: %v", err)
	}
	if has, err := st.HasUsers(bg()); err != nil || !has {
		t.Fatalf("HasUsers after two: %v %v", has, err)
	}
	got, err := st.GetUser(bg(), "bob")
	if err != nil || !reflect.DeepEqual(got.Roles, bob.Roles) || got.PasswordHash != "" || !got.CreatedAt.Equal(day) {
		t.Fatalf("bob %+v %v", got, err)
	}
	bob.PasswordHash, bob.Roles = "$2a$other", []store.Grant{{Role: vocab.RoleViewer, Team: "ops"}}
	must(t, st.WithTx(bg(), func(tx store.Tx) error { return tx.UpdateUser(&bob, day.Add(time.Hour)) }))
	if got, err := st.GetUser(bg(), "bob"); err != nil || got.PasswordHash != "$2a$other" || got.Roles[0].Team != "ops" ||
		!got.UpdatedAt.Equal(day.Add(time.Hour)) {
		t.Fatalf("bob updated %+v %v", got, err)
	}
	nobody := store.User{Name: "nobody"}
	if err := st.WithTx(bg(), func(tx store.Tx) error { return tx.UpdateUser(&nobody, day) }); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("update of nobody: %v", err)
	}
	if _, err := st.GetUser(bg(), "nobody"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("get nobody: %v", err)
	}
	users, err := st.ListUsers(bg())
	if err != nil || len(users) != 2 || users[0].Name != "ann" || users[1].Name != "bob" {
		t.Fatalf("users %+v %v", users, err)
	}

	// Tokens: found by hash, listed newest first, revoked once, deleted with their user.
	tk1 := store.Token{User: "bob", Name: "ci", Hash: "h1", Prefix: "pf_ab", CreatedAt: day, ExpiresAt: day.Add(24 * time.Hour)}
	tk2 := store.Token{User: "bob", Hash: "h2", CreatedAt: day}
	tk3 := store.Token{User: "ann", Hash: "h3", CreatedAt: day}
	must(t, st.WithTx(bg(), func(tx store.Tx) error {
		for _, tk := range []*store.Token{&tk1, &tk2, &tk3} {
			if err := tx.InsertToken(tk); err != nil {
				return err
			}
		}
		return nil
	}))
	dupHash := store.Token{User: "ann", Hash: "h1", CreatedAt: day}
	if err := st.WithTx(bg(), func(tx store.Tx) error { return tx.InsertToken(&dupHash) }); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("a token with a hash taken: %v", err)
	}
	orphan := store.Token{User: "nobody", Hash: "h9", CreatedAt: day}
	if err := st.WithTx(bg(), func(tx store.Tx) error { return tx.InsertToken(&orphan) }); err == nil {
		t.Fatal("a token of no user was stored")
	}
	got1, err := st.TokenByHash(bg(), "h1")
	if err != nil || got1.ID != tk1.ID || got1.Name != "ci" || got1.Prefix != "pf_ab" || !got1.ExpiresAt.Equal(tk1.ExpiresAt) ||
		!got1.RevokedAt.IsZero() || !got1.Active(day) || got1.Active(day.Add(25*time.Hour)) {
		t.Fatalf("token h1 %+v %v", got1, err)
	}
	if _, err := st.TokenByHash(bg(), "nope"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("unknown hash: %v", err)
	}
	if list, err := st.ListTokens(bg(), "bob"); err != nil || len(list) != 2 || list[0].ID != tk2.ID {
		t.Fatalf("bob's tokens %+v %v", list, err)
	}
	if list, err := st.ListTokens(bg(), ""); err != nil || len(list) != 3 {
		t.Fatalf("every token %+v %v", list, err)
	}
	// ann cannot revoke bob's token as ann; an admin (user "") can.
	if _, err := revoke(st, tk1.ID, "ann", day); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("ann revoking bob's token: %v", err)
	}
	if r, err := revoke(st, tk1.ID, "", day.Add(time.Minute)); err != nil || !r.RevokedAt.Equal(day.Add(time.Minute)) {
		t.Fatalf("revoke %+v %v", r, err)
	}
	if r, err := revoke(st, tk1.ID, "bob", day.Add(time.Hour)); err != nil || !r.RevokedAt.Equal(day.Add(time.Minute)) {
		t.Fatalf("revoke again keeps the first time: %+v %v", r, err)
	}
	if got, _ := st.TokenByHash(bg(), "h1"); got.Active(day) {
		t.Fatalf("a revoked token is active: %+v", got)
	}
	if _, err := revoke(st, 9999, "", day); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("revoke unknown: %v", err)
	}
	must(t, st.WithTx(bg(), func(tx store.Tx) error { return tx.DeleteUser("bob") }))
	if _, err := st.TokenByHash(bg(), "h2"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("bob's token outlived bob: %v", err)
	}
	if err := st.WithTx(bg(), func(tx store.Tx) error { return tx.DeleteUser("bob") }); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("delete bob twice: %v", err)
	}

	// Users and tokens move with store copy; sessions stay behind.
	must(t, st.WithTx(bg(), func(tx store.Tx) error { return tx.PutSession("s1", []byte{1, 2}, day.Add(time.Hour)) }))
	dst := h.New(t)
	_, err = store.Copy(bg(), st, dst, false)
	must(t, err)
	if u, err := dst.GetUser(bg(), "ann"); err != nil || u.PasswordHash != "$2a$hash" {
		t.Fatalf("copied ann %+v %v", u, err)
	}
	if tk, err := dst.TokenByHash(bg(), "h3"); err != nil || tk.ID != tk3.ID {
		t.Fatalf("copied token %+v %v", tk, err)
	}
	next := store.Token{User: "ann", Hash: "h4", CreatedAt: day}
	must(t, dst.WithTx(bg(), func(tx store.Tx) error { return tx.InsertToken(&next) }))
	if next.ID <= tk3.ID {
		t.Fatalf("a token inserted after a copy took id %d (copied up to %d)", next.ID, tk3.ID)
	}
	if _, err := dst.FindSession(bg(), "s1", day); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a session was copied: %v", err)
	}
}

func revoke(st store.Store, id int64, user string, at time.Time) (tk store.Token, err error) {
	err = st.WithTx(bg(), func(tx store.Tx) error {
		tk, err = tx.RevokeToken(id, user, at)
		return err
	})
	return tk, err
}

// testSessions: a session is found until it expires, replaced by its token, deleted, pruned.
func testSessions(t *testing.T, h Harness) {
	st := h.New(t)
	must(t, st.WithTx(bg(), func(tx store.Tx) error {
		if err := tx.PutSession("a", []byte("one"), day.Add(time.Hour)); err != nil {
			return err
		}
		return tx.PutSession("b", []byte("two"), day.Add(2*time.Hour))
	}))
	if d, err := st.FindSession(bg(), "a", day); err != nil || string(d) != "one" {
		t.Fatalf("session a %q %v", d, err)
	}
	if _, err := st.FindSession(bg(), "a", day.Add(time.Hour)); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("an expired session was found: %v", err)
	}
	must(t, st.WithTx(bg(), func(tx store.Tx) error { return tx.PutSession("a", []byte("three"), day.Add(3*time.Hour)) }))
	if d, err := st.FindSession(bg(), "a", day.Add(2*time.Hour)); err != nil || string(d) != "three" {
		t.Fatalf("session a replaced %q %v", d, err)
	}
	var pruned int
	must(t, st.WithTx(bg(), func(tx store.Tx) (err error) {
		pruned, err = tx.PruneSessions(day.Add(2 * time.Hour))
		return err
	}))
	if pruned != 1 {
		t.Fatalf("pruned %d sessions, want b only", pruned)
	}
	must(t, st.WithTx(bg(), func(tx store.Tx) error { return tx.DeleteSession("a") }))
	must(t, st.WithTx(bg(), func(tx store.Tx) error { return tx.DeleteSession("a") }))
	if _, err := st.FindSession(bg(), "a", day); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a deleted session was found: %v", err)
	}
}

// testMigrateUsers: an installation at schema 11 (before users) migrates to one without users,
// so authentication stays off (or rests on its configured api.token alone), and keeps its pools.
func testMigrateUsers(t *testing.T, h Harness) {
	target := h.Target(t)
	h.Exec(t, target, `CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at BIGINT NOT NULL)`)
	for v, name := range []string{"0001_init.sql", "0002_owners.sql", "0003_read_indexes.sql", "0004_change_stamps.sql",
		"0005_reason_codes.sql", "0006_repair.sql", "0007_owner_api.sql", "0008_run_types.sql", "0009_versions.sql",
		"0010_outputs.sql", "0011_notifications.sql"} {
		body, err := fs.ReadFile(h.Migrations, name)
		if err != nil {
			t.Fatal(err)
		}
		h.Exec(t, target, string(body))
		h.Exec(t, target, `INSERT INTO schema_migrations VALUES (`+itoa(v+1)+`, '`+name+`', 0)`)
	}
	h.Exec(t, target, `INSERT INTO pools (name, slots, ordering, max_queued, starvation_after, include_deferred, on_resize,
		description, source, updated_at) VALUES ('api', 3, 'backfill', 0, 0, FALSE, 'immediate', '', 'store', 0)`)
	st := h.Open(t, target)
	if has, err := st.HasUsers(bg()); err != nil || has {
		t.Fatalf("users after the migration: %v %v", has, err)
	}
	if ps, err := st.ListPools(bg()); err != nil || len(ps) != 1 || ps[0].Name != "api" || ps[0].Slots != 3 {
		t.Fatalf("pools after the migration: %+v %v", ps, err)
	}
	u := store.User{Name: "ada", Roles: []store.Grant{{Role: vocab.RoleAdmin}}}
	must(t, st.WithTx(bg(), func(tx store.Tx) error { return tx.InsertUser(&u, day) }))
}

// testPoolTeams: a stored pool keeps the teams that may use it (§15), in order; none is none.
func testPoolTeams(t *testing.T, h Harness) {
	st := h.New(t)
	for _, p := range []store.Pool{
		{Name: "ledger", Slots: 2, TargetSlots: store.NoTarget, Ordering: vocab.Backfill, OnResize: vocab.ResizeImmediate,
			Source: "store", Teams: []string{"finance", "audit"}},
		{Name: "open", Slots: 1, TargetSlots: store.NoTarget, Ordering: vocab.Backfill, OnResize: vocab.ResizeImmediate, Source: "store"},
	} {
		must(t, st.WithTx(bg(), func(tx store.Tx) error { return tx.PutPool(&p, day) }))
	}
	ps, err := st.ListPools(bg())
	if err != nil || len(ps) != 2 || !reflect.DeepEqual(ps[0].Teams, []string{"finance", "audit"}) || ps[1].Teams != nil {
		t.Fatalf("pools %+v %v", ps, err)
	}
	dst := h.New(t)
	_, err = store.Copy(bg(), st, dst, false)
	must(t, err)
	if ps, err := dst.ListPools(bg()); err != nil || len(ps) != 2 || !reflect.DeepEqual(ps[0].Teams, []string{"finance", "audit"}) {
		t.Fatalf("copied pools %+v %v", ps, err)
	}
}

// testRuleSkipped: an entry keeps the rule that assigned its pool and the rules skipped for its
// DAG's team (§15), through a copy too; an entry without them reads "".
func testRuleSkipped(t *testing.T, h Harness) {
	st := h.New(t)
	plain := seed(t, st)
	why := "rule heavy-etl skipped: pool warehouse is for team finance, not team sales"
	e := &store.Entry{Run: plain.Run, TaskID: "transfer", TryNumber: 2, Label: "etl.transfer try 2", Due: day,
		State: vocab.EntryWaiting, CreatedAt: day, Rule: "big", RuleSkipped: why,
		Needs: []store.Requirement{{Pool: "shared", Slots: 1}}}
	must(t, st.WithTx(bg(), func(tx store.Tx) error { return tx.InsertEntry(e) }))
	check := func(st store.Store, label string) {
		t.Helper()
		got, err := st.LatestEntry(bg(), plain.Run, "transfer")
		if err != nil || got.TryNumber != 2 || got.Rule != "big" || got.RuleSkipped != why {
			t.Fatalf("%s: entry %+v %v", label, got, err)
		}
		es, err := st.ListEntries(bg(), vocab.EntryWaiting)
		if err != nil || len(es) != 2 || es[0].Rule != "" || es[0].RuleSkipped != "" || es[1].RuleSkipped != why {
			t.Fatalf("%s: entries %+v %v", label, es, err)
		}
	}
	check(st, "stored")
	dst := h.New(t)
	_, err := store.Copy(bg(), st, dst, false)
	must(t, err)
	check(dst, "copied")
}

// testDeleteExpiredTokens: the tokens of one name that expired are deleted, every user's; those
// of other names, unexpired ones and those that never expire stay.
func testDeleteExpiredTokens(t *testing.T, h Harness) {
	st := h.New(t)
	u := store.User{Name: "ann", Roles: []store.Grant{{Role: vocab.RoleViewer}}}
	v := store.User{Name: "bob", Roles: []store.Grant{{Role: vocab.RoleViewer}}}
	must(t, st.WithTx(bg(), func(tx store.Tx) error {
		if err := tx.InsertUser(&u, day); err != nil {
			return err
		}
		return tx.InsertUser(&v, day)
	}))
	tks := []store.Token{
		{User: "ann", Name: "proxy", Hash: "a1", CreatedAt: day, ExpiresAt: day.Add(time.Minute)},     // expired
		{User: "bob", Name: "proxy", Hash: "b1", CreatedAt: day, ExpiresAt: day.Add(2 * time.Minute)}, // expired
		{User: "ann", Name: "proxy", Hash: "a2", CreatedAt: day, ExpiresAt: day.Add(time.Hour)},       // live
		{User: "ann", Name: "laptop", Hash: "a3", CreatedAt: day, ExpiresAt: day.Add(time.Minute)},    // another name
		{User: "bob", Name: "proxy", Hash: "b2", CreatedAt: day},                                      // never expires
	}
	must(t, st.WithTx(bg(), func(tx store.Tx) error {
		for i := range tks {
			if err := tx.InsertToken(&tks[i]); err != nil {
				return err
			}
		}
		return nil
	}))
	var n int
	must(t, st.WithTx(bg(), func(tx store.Tx) (err error) {
		n, err = tx.DeleteExpiredTokens("proxy", day.Add(2*time.Minute))
		return err
	}))
	left, err := st.ListTokens(bg(), "")
	var hashes []string
	for _, tk := range left {
		hashes = append(hashes, tk.Hash)
	}
	if err != nil || n != 2 || !reflect.DeepEqual(hashes, []string{"b2", "a3", "a2"}) {
		t.Fatalf("deleted %d, left %v %v", n, hashes, err)
	}
}
