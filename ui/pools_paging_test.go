package ui

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/poolflow/poolflow/server"
	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/vocab"
)

// TestPoolsPaging: a pool's waiting list is shown 50 at a time in admission order, filtered by
// DAG and reason; each cancel form is its entry's own and says what a cancel does.
func TestPoolsPaging(t *testing.T) {
	b := setup(t, setupOpts{})
	b.trigger(t, "hold", "h1")
	b.waitAdmitted(t, "hold", "h1", "keep")
	queue(t, b, "held", 120)
	body := b.page(t, http.StatusOK, "/ui/pools")
	if n := strings.Count(body, `<tr data-queue-id=`); n != 50+0 {
		t.Errorf("first page: %d waiting rows, want 50", n)
	}
	if !strings.Contains(body, "120 waiting") || !strings.Contains(body, `id="waiting-next-db"`) {
		t.Errorf("no count of 120 or no next page")
	}
	if !strings.Contains(body, `id="cancel-`) || !strings.Contains(body, "the retry policy applies: if retries remain, try 2 will queue") {
		t.Errorf("the cancel forms do not say what they do")
	}
	body = b.page(t, http.StatusOK, "/ui/pools?pool=db&offset=100")
	if n := strings.Count(body, `<tr data-queue-id=`); n != 20 {
		t.Errorf("last page: %d rows, want 20", n)
	}
	if !strings.Contains(body, `<td class="muted">101</td>`) || !strings.Contains(body, `id="waiting-prev-db"`) {
		t.Errorf("the last page does not start at position 101")
	}
	body = b.page(t, http.StatusOK, "/ui/pools?dag=nope")
	if strings.Contains(body, `<tr data-queue-id=`) || !strings.Contains(body, "No waiting entry matches the filter") {
		t.Errorf("the DAG filter keeps entries of other DAGs")
	}
	body = b.page(t, http.StatusOK, "/ui/pools?dag=HELD&reason=no_such_code")
	if strings.Contains(body, `<tr data-queue-id=`) {
		t.Errorf("the reason filter keeps entries with other reasons")
	}
}

// teamPool stores a pool open only to team finance, so the page has a team filter.
func teamPool(t *testing.T, b *bundle) {
	t.Helper()
	status, body := b.srv.Call(server.WithPrincipal(context.Background(), testAdmin), http.MethodPost, "/api/v1/pools",
		map[string]any{"name": "ledger", "slots": 2, "teams": []string{"finance"}}, testToken)
	if status != http.StatusOK {
		t.Fatalf("create ledger: %d %s", status, body)
	}
}

// TestPoolsFilterLinks: every link of the pools page keeps the filters it does not change: the
// paging links keep DAG, reason and team (they dropped ?team=), the team chips keep DAG and
// reason and start again at the first page, the filter form keeps the team, and Clear filters
// keeps the team.
func TestPoolsFilterLinks(t *testing.T) {
	b := setup(t, setupOpts{})
	b.trigger(t, "hold", "h1")
	b.waitAdmitted(t, "hold", "h1", "keep")
	teamPool(t, b)
	queue(t, b, "held", 120)
	body := b.page(t, http.StatusOK, "/ui/pools?team=finance&dag=held&reason=behind&pool=db&offset=50")
	for _, want := range []string{
		`href="/ui/pools?dag=held&amp;offset=100&amp;pool=db&amp;reason=behind&amp;team=finance#pool-db" rel="next" id="waiting-next-db"`,
		`href="/ui/pools?dag=held&amp;reason=behind&amp;team=finance#pool-db" rel="prev" id="waiting-prev-db"`,
		`href="/ui/pools?dag=held&amp;reason=behind">every pool`,
		`href="/ui/pools?dag=held&amp;reason=behind&amp;team=finance" data-team="finance"`,
		`<input type="hidden" name="team" value="finance">`,
		`href="/ui/pools?team=finance" id="pools-clear"`,
		`id="pool-ledger"`,
		`<td class="muted">52</td>`, // places stay the whole line's: hold's entry is not behind
	} {
		if !strings.Contains(body, want) {
			t.Errorf("the page has no %s", want)
		}
	}
	body = b.page(t, http.StatusOK, "/ui/pools?team=marketing")
	if strings.Contains(body, `id="pool-ledger"`) || !strings.Contains(body, `id="pool-db"`) {
		t.Errorf("team marketing sees ledger, or not the pools open to every team")
	}
}

// TestBrowserPoolsPaging: the pools page pages through a long waiting list with its filters on
// (DAG, reason and team), in the browser: Later in line twice, then Earlier, each page starting
// at its place in the whole line and each address keeping every filter.
func TestBrowserPoolsPaging(t *testing.T) {
	b := setup(t, setupOpts{})
	b.trigger(t, "hold", "h1")
	b.waitAdmitted(t, "hold", "h1", "keep")
	teamPool(t, b)
	queue(t, b, "held", 160)
	base := serve(t, b)
	ctx := tab(t)
	do(t, ctx, chromedp.Navigate(base+"/ui/pools?team=finance"))
	waitFor(t, ctx, "the waiting list", `document.querySelectorAll("#pool-db tr[data-queue-id]").length === 50`)
	do(t, ctx, chromedp.SetValue(chromedp.CSS(`#pools-filter input[name=dag]`), "HELD"),
		chromedp.SetValue(chromedp.CSS(`#pools-filter select[name=reason]`), "behind"),
		chromedp.Click(chromedp.CSS(`#pools-filter button[type=submit]`)))
	waitFor(t, ctx, "the filtered list", `location.search.includes("team=finance") && location.search.includes("reason=behind") && `+
		`(document.querySelector("#pool-db tr[data-queue-id] td") || {}).textContent === "2"`)
	for _, step := range []struct{ link, pos string }{{"#waiting-next-db", "52"}, {"#waiting-next-db", "102"}, {"#waiting-prev-db", "52"}} {
		link, pos := step.link, step.pos
		do(t, ctx, chromedp.Click(chromedp.CSS(link)))
		waitFor(t, ctx, "place "+pos, `(document.querySelector("#pool-db tr[data-queue-id] td") || {}).textContent === "`+pos+`"`)
		if q := eval[string](t, ctx, `location.search`); !strings.Contains(q, "team=finance") || !strings.Contains(q, "dag=HELD") ||
			!strings.Contains(q, "reason=behind") {
			t.Errorf("place %s: the address %s dropped a filter", pos, q)
		}
	}
	shot(t, ctx, "pools-paged")
}

// TestBrowserPoolsStaleLine: a long line (here over 100 entries) is read again in the background
// once the queue changed; meanwhile the page says how old its places and reasons are and shows
// the entries as they are now (the head, cancelled since, says so), and its live refresh brings
// the current line once it has been read.
func TestBrowserPoolsStaleLine(t *testing.T) {
	b := setup(t, setupOpts{lineSync: 100})
	b.trigger(t, "hold", "h1")
	b.waitAdmitted(t, "hold", "h1", "keep")
	queue(t, b, "held", 120)
	base := serve(t, b)
	ctx := tab(t)
	do(t, ctx, chromedp.Navigate(base+"/ui/pools"))
	waitFor(t, ctx, "the waiting list", `document.querySelectorAll("#pool-db tr[data-queue-id]").length === 50`)
	if eval[bool](t, ctx, `!!document.querySelector("#line-age")`) {
		t.Errorf("a line read for this page says it is old")
	}
	head := eval[string](t, ctx, `document.querySelector("#pool-db tr[data-queue-id]").dataset.queueId`)
	id, err := strconv.ParseInt(head, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.st.WithTx(context.Background(), func(tx store.Tx) error {
		return tx.EndEntry(id, vocab.EntryCancelled, vocab.ReasonCancelled, "cancelled by a test", time.Now())
	}); err != nil {
		t.Fatal(err)
	}
	do(t, ctx, chromedp.Navigate(base+"/ui/pools"))
	waitFor(t, ctx, "the page", `document.querySelectorAll("#pool-db tr[data-queue-id]").length === 50`)
	// The first answer after the change is the last read (its background read takes longer
	// than this page's), unless the read was done first: then the line is current.
	if eval[bool](t, ctx, `!!document.querySelector("#line-age")`) {
		if got := eval[string](t, ctx, `document.querySelector("#pool-db tr[data-queue-id] td.why").textContent`); got != "cancelled since" {
			t.Errorf("the stale page's head reads %q, want its state now, cancelled since", got)
		}
		if eval[bool](t, ctx, `!!document.querySelector("#cancel-`+head+`")`) {
			t.Errorf("the cancelled head still has a cancel button")
		}
		if txt := eval[string](t, ctx, `document.querySelector("#line-age").textContent`); !strings.Contains(txt, "as of") {
			t.Errorf("the note says %q", txt)
		}
		shot(t, ctx, "pools-stale-line")
	}
	waitFor(t, ctx, "the current line", `!document.querySelector("#line-age") && `+
		`document.querySelector("#pool-db tr[data-queue-id]").dataset.queueId !== "`+head+`" && `+
		`document.querySelectorAll("#pool-db .count")[1].textContent === "119"`)
}
