package ui

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/vocab"
)

// withEveryNode adds an every_node DAG to the bundle's folder (it never fires in a test: its
// schedule is yearly) and its fires on two daemons: ui-test, live, whose newest fire
// succeeded, and ghost, whose lease ended, with a fire waiting for it.
func withEveryNode(t *testing.T, b *bundle) {
	t.Helper()
	body := "schedule: '@yearly'\nevery_node: true\nmax_active_runs: 1\nbash: 'true'\n"
	if err := os.WriteFile(filepath.Join(b.dir, "dags", "sweep.yaml"), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	timeout := time.After(30 * time.Second)
	for {
		if _, def, err := b.srv.DAG(ctx, "sweep"); err == nil && def != nil {
			break
		}
		select {
		case <-b.notices:
		case <-timeout:
			t.Fatal("sweep was not loaded")
		}
	}
	day := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	err := b.st.WithTx(ctx, func(tx store.Tx) error {
		ghost := store.Owner{ID: "ghost:/srv/poolflow", Kind: vocab.OwnerDaemon, Host: "ghost", PID: 1, Epoch: 1,
			StartedAt: day, Heartbeat: day, LeaseUntil: day.Add(30 * time.Second)}
		if err := tx.PutOwner(&ghost); err != nil {
			return err
		}
		for _, r := range []store.Run{
			{DAGID: "sweep", RunID: "node__2026-12-01T00:00:00.000Z__here-1", RunType: vocab.RunNode, LogicalDate: day,
				State: vocab.RunSuccess, Owner: "ui-test", QueuedAt: day, StartDate: day, EndDate: day.Add(time.Second)},
			{DAGID: "sweep", RunID: "node__2026-12-01T00:00:00.000Z__ghost-2", RunType: vocab.RunNode, LogicalDate: day,
				State: vocab.RunQueued, Owner: "ghost:/srv/poolflow", QueuedAt: day},
		} {
			if err := tx.InsertRun(&r); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestEveryNodePages: an every_node DAG's page lists each daemon with its newest fire and its
// open ones, live or away; its runs say which daemon they are bound to.
func TestEveryNodePages(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	withEveryNode(t, b)
	page := b.page(t, 200, "/ui/dags/sweep")
	for _, want := range []string{
		"<dt>Runs on</dt><dd>every daemon",
		`<tr data-daemon="ui-test">`,
		`<span class="chip live">live</span>`,
		`<tr data-daemon="ghost:/srv/poolflow">`,
		`<span class="chip away">away</span>`,
		`node <span class="muted small">on ghost:/srv/poolflow</span>`,
	} {
		if !strings.Contains(page, htmlText(want)) && !strings.Contains(page, want) {
			t.Errorf("the DAG page lacks %q", want)
		}
	}
	if strings.Index(page, `data-daemon="ui-test"`) > strings.Index(page, `data-daemon="ghost:/srv/poolflow"`) {
		t.Error("the live daemon is not listed first")
	}
	run := b.page(t, 200, "/ui/dags/sweep/runs/node__2026-12-01T00:00:00.000Z__ghost-2")
	if !strings.Contains(run, "<dt>Daemon</dt><dd><code>ghost:/srv/poolflow</code> <span class=\"muted small\">fired here; bound to it</span>") {
		t.Errorf("the run page does not name its daemon:\n%s", run)
	}
	// A DAG that is not every_node has no such card.
	if page := b.page(t, 200, "/ui/dags/quick"); strings.Contains(page, "On every daemon") {
		t.Error("a plain DAG's page shows the daemons' card")
	}
}

// TestBrowserEveryNode looks at the every_node DAG's page in chromium.
func TestBrowserEveryNode(t *testing.T) {
	b := setup(t, setupOpts{})
	withEveryNode(t, b)
	base := serve(t, b)
	ctx := tab(t)
	do(t, ctx, chromedp.Navigate(base+"/ui/dags/sweep"))
	waitFor(t, ctx, "the daemons' card", `document.querySelectorAll("#nodes-live tr[data-daemon]").length === 2`)
	shot(t, ctx, "every-node-dag")
}
