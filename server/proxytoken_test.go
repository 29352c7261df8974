package server

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/poolflow/poolflow/auth"
	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/store/storetest"
)

// TestProxyTokensExpireAndGo: the token a signed-in user's log read from another daemon is sent
// with expires after proxyTokenLife, is reused for half of it, and is deleted once expired (by
// the transaction that makes the next one): the table does not grow with every read.
func TestProxyTokensExpireAndGo(t *testing.T) {
	t.Parallel()
	st := storetest.Open(t, filepath.Join(t.TempDir(), "poolflow.db"), store.Options{})
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	srv := New(Config{Store: st, Writer: st, Now: func() time.Time { return now }})
	defer srv.Close()
	addUser(t, st, "ann", "viewer")
	addUser(t, st, "bob", "viewer")
	as := func(name string) context.Context {
		u, err := st.GetUser(context.Background(), name)
		if err != nil {
			t.Fatal(err)
		}
		return WithPrincipal(context.Background(), auth.Principal{Kind: auth.KindUser, Name: name, Grants: u.Roles})
	}
	proxies := func() map[string]int {
		tks, err := st.ListTokens(context.Background(), "")
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]int{}
		for _, tk := range tks {
			if tk.Name == proxyTokenName {
				out[tk.User]++
				if !tk.ExpiresAt.Equal(tk.CreatedAt.Add(proxyTokenLife)) {
					t.Errorf("a proxy token expires at %v, made at %v", tk.ExpiresAt, tk.CreatedAt)
				}
			}
		}
		return out
	}
	first := srv.proxyCredential(as("ann"))
	if first == "" || srv.proxyCredential(as("ann")) != first {
		t.Fatal("the proxy token is not reused")
	}
	bobs := srv.proxyCredential(as("bob"))
	if got := proxies(); got["ann"] != 1 || got["bob"] != 1 {
		t.Fatalf("proxy tokens %v", got)
	}
	// Past half its life a new one is made; the first is still valid, so it stays.
	now = now.Add(proxyTokenLife/2 + time.Second)
	if second := srv.proxyCredential(as("ann")); second == "" || second == first {
		t.Fatal("no new proxy token after half its life")
	}
	if got := proxies(); got["ann"] != 2 {
		t.Fatalf("proxy tokens %v", got)
	}
	// Past the first's expiry (and bob's): the next one made deletes them.
	now = now.Add(proxyTokenLife)
	_ = srv.proxyCredential(as("ann"))
	if got := proxies(); got["ann"] != 1 || got["bob"] != 0 {
		t.Fatalf("proxy tokens after expiry %v, want ann's newest only", got)
	}
	if _, err := srv.authn.Bearer(context.Background(), bobs); err == nil {
		t.Error("bob's expired proxy token still authenticates")
	}
}
